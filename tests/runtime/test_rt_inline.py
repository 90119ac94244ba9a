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


def test_a_struct_layout_header_at_an_odd_bit_position():
    # 4 bits, then a header of 8/16/32-bit fields (read and written with one struct
    # layout) that starts in the middle of a byte, then 4 bits.
    sw = switch("""
        header n_t { bit<4> n; }
        header w_t { bit<8> a; int<16> b; bit<32> c; }
        struct headers { n_t n1; w_t w; n_t n2; }
        struct metadata { }""",
        """state start { packet.extract(hdr.n1); packet.extract(hdr.w);
                         packet.extract(hdr.n2); transition accept; }""", f"""
        apply {{
            hdr.w.a = hdr.w.a + 1;
            hdr.w.b = hdr.w.b - 2;
            hdr.w.c = hdr.w.c ^ 0xFFFF0000;
            {FWD}
        }}""", deparser="apply { packet.emit(hdr.n1); packet.emit(hdr.w); packet.emit(hdr.n2); }")
    data = bytes.fromhex("A1 00 01 12 34 56 78 9B")   # n1=A, a=0x10, b=0x0011, c=0x23456789, n2=B
    # a = 0x11, b = 0x000F, c = 0xDCBA6789
    assert out(sw, data) == bytes.fromhex("A1 10 00 FD CB A6 78 9B")
