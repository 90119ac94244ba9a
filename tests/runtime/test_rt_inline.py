"""End to end: sub-control applies written inline into their caller, and headers read and
written with one struct layout, keep P4's copy-in/copy-out and bit-exact semantics."""

from rt_helpers import switch
from test_rt_language import FWD, out

# A value unit in the style of p4src's AggValue: its own register, a shared inout flag.
UNIT = """
    control Unit(inout bit<8> value, in bit<8> index, in bit<1> add, inout bit<1> flag) {
        register<bit<8>>(4) cells;
        apply {
            if (add == 1) {
                bit<8> stored;
                cells.read(stored, (bit<32>)index);
                if (stored + value < stored) { flag = 1; }   /* wrapped */
                value = stored + value;
            }
            cells.write((bit<32>)index, value);
        }
    }"""
TYPES = """
    header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> index; bit<8> add; bit<8> flag; }
    struct headers { h_t h; }
    struct metadata { bit<8> index; bit<1> add; bit<1> flag; }""" + UNIT
PARSE = "state start { packet.extract(hdr.h); transition accept; }"


def test_repeated_units_share_arguments_and_keep_their_own_state():
    sw = switch(TYPES, PARSE, f"""
        Unit() u0; Unit() u1; Unit() u2;
        apply {{
            meta.index = hdr.h.index;
            meta.add = (bit<1>)hdr.h.add;
            u0.apply(hdr.h.a, meta.index, meta.add, meta.flag);
            u1.apply(hdr.h.b, meta.index, meta.add, meta.flag);
            u2.apply(hdr.h.c, meta.index, meta.add, meta.flag);
            hdr.h.flag = (bit<8>)meta.flag;
            {FWD}
        }}""")
    assert out(sw, bytes([10, 20, 30, 2, 0, 0])) == bytes([10, 20, 30, 2, 0, 0])
    assert out(sw, bytes([1, 250, 3, 2, 1, 0])) == bytes([11, 14, 33, 2, 1, 1])
    assert out(sw, bytes([1, 1, 1, 3, 1, 0])) == bytes([1, 1, 1, 3, 1, 0])
    cells = [[sw.register(f"I.u{i}.cells").read(j) for j in range(4)] for i in range(3)]
    assert cells == [[0, 0, 11, 1], [0, 0, 14, 1], [0, 0, 33, 1]]


def test_an_argument_written_back_by_one_apply_is_read_by_the_next():
    # u1 reads meta.index after u0 wrote it through its inout `value`; u2 passes the same
    # field as `value` and `index`: each apply must see the previous one's copy-back.
    sw = switch(TYPES, PARSE, f"""
        Unit() u0; Unit() u1; Unit() u2;
        apply {{
            meta.index = 1;
            meta.add = 1;
            u0.apply(meta.index, 0, meta.add, meta.flag);     /* cells[0] = 1, index = 1 */
            u1.apply(hdr.h.a, meta.index, meta.add, meta.flag);
            u2.apply(meta.index, meta.index, meta.add, meta.flag);
            hdr.h.b = meta.index;
            hdr.h.flag = (bit<8>)meta.flag;
            {FWD}
        }}""")
    assert out(sw, bytes([5, 0, 0, 0, 0, 0])) == bytes([5, 1, 0, 0, 0, 0])
    # Second packet: u0 adds 1 to cells[0] (now 2) so index = 2; u1 adds a to its
    # cells[2]; u2 adds index 2 to its cells[2] (0 + 2).
    assert out(sw, bytes([7, 0, 0, 0, 0, 0])) == bytes([7, 2, 0, 0, 0, 0])
    assert sw.register("I.u0.cells").read(0) == 2
    assert sw.register("I.u1.cells").read(1) == 5 and sw.register("I.u1.cells").read(2) == 7
    assert sw.register("I.u2.cells").read(1) == 1 and sw.register("I.u2.cells").read(2) == 2


def test_an_apply_inside_a_branch_does_not_bind_for_the_next_one():
    sw = switch(TYPES, PARSE, f"""
        Unit() u0; Unit() u1;
        apply {{
            meta.add = 0;
            if (hdr.h.add == 1) {{
                u0.apply(hdr.h.a, hdr.h.index, 1, meta.flag);
            }}
            u1.apply(hdr.h.b, hdr.h.index, 1, meta.flag);
            hdr.h.flag = (bit<8>)meta.flag;
            {FWD}
        }}""")
    assert out(sw, bytes([1, 2, 0, 3, 0, 0])) == bytes([1, 2, 0, 3, 0, 0])
    assert out(sw, bytes([4, 5, 0, 3, 1, 0])) == bytes([4, 7, 0, 3, 1, 0])
    assert sw.register("I.u0.cells").read(3) == 4
    assert sw.register("I.u1.cells").read(3) == 7


def test_a_struct_layout_header_read_and_written():
    sw = switch("""
        header w_t { bit<8> a; int<16> b; bit<32> c; bit<64> d; }
        struct headers { w_t w; }
        struct metadata { }""",
        "state start { packet.extract(hdr.w); transition accept; }", f"""
        apply {{
            hdr.w.a = hdr.w.a + 1;
            hdr.w.b = hdr.w.b - 2;
            hdr.w.c = hdr.w.c ^ 0xFFFF0000;
            hdr.w.d = hdr.w.d + 1;
            {FWD}
        }}""")
    data = bytes.fromhex("FF 0001 23456789 FFFFFFFFFFFFFFFF AA")
    assert out(sw, data) == bytes.fromhex("00 FFFF DCBA6789 0000000000000000 AA")
    # Too short for the header: PacketTooShort, the header stays invalid (emits nothing).
    assert out(sw, data[:14]) == data[:14]


def test_struct_layouts_at_odd_bit_positions_of_reader_and_writer():
    from struct import Struct
    from p4switch.runtime.packet import PacketReader, PacketWriter
    layout = Struct("!Bh")
    reader = PacketReader(bytes.fromhex("A1 FF FF FB"))
    assert reader.extract(4) == 0xA
    assert reader.unpack(layout) == (0x1F, -1) and reader.pos == 28
    assert reader.extract(4) == 0xB
    writer = PacketWriter()
    writer.emit(0xA, 4)
    writer.emit_packed(layout.pack(0x1F, -1))
    writer.emit(0xB, 4)
    assert writer.finish(b"\x01") == bytes.fromhex("A1 FF FF FB 01")
