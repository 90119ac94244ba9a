"""End to end: P4-16 expression and statement semantics in the compiled pipeline."""

import pytest

from p4switch.runtime.errors import OutOfRange
from p4switch.runtime.tables import Exact
from rt_helpers import V1MODEL_20200408, switch

FWD = "standard_metadata.egress_spec = 1;"


def out(sw, data, port=0):
    [(eport, result)] = sw.process_packet(port, data)
    assert eport == 1
    return result


def test_int_arithmetic_wraps_saturates_and_shifts_arithmetically():
    sw = switch("""
        header h_t { int<8> a; int<8> b; bit<8> c; bit<8> d; int<8> e; bit<8> f; int<8> g; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        apply {{
            int<8> a = hdr.h.a;
            hdr.h.a = a + hdr.h.b;          /* 100 + 100 wraps to -56 */
            hdr.h.b = hdr.h.b |+| 8s100;    /* saturates at 127 */
            hdr.h.c = hdr.h.c |+| hdr.h.d;  /* 200 |+| 100 = 255 */
            hdr.h.d = hdr.h.d |-| 8w250;    /* 100 |-| 250 = 0 */
            hdr.h.e = hdr.h.e >> 1;         /* -8 >> 1 = -4 */
            hdr.h.f = hdr.h.f - 8w3;        /* 1 - 3 wraps to 254 */
            hdr.h.g = -hdr.h.g |-| 8s100;   /* -(-100) - 100 = 0, no saturation */
            {FWD}
        }}""")
    data = bytes([100, 100, 200, 100, 0xF8, 1, 0x9C])
    assert out(sw, data) == bytes([0xC8, 127, 255, 0, 0xFC, 254, 0])


def test_signed_saturation_at_the_bottom_and_casts():
    sw = switch("""
        header h_t { int<8> a; bit<8> b; bit<16> c; int<16> d; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        apply {{
            hdr.h.a = hdr.h.a |-| 8s100;        /* -100 - 100 saturates at -128 */
            hdr.h.b = (bit<8>)hdr.h.a;          /* two's complement bits 0x80 */
            hdr.h.d = (int<16>)hdr.h.a;         /* sign extension: -128 */
            hdr.h.c = (bit<16>)hdr.h.b;         /* zero extension: 0x0080 */
            {FWD}
        }}""")
    assert out(sw, bytes([0x9C, 0, 0, 0, 0, 0])) == bytes([0x80, 0x80, 0x00, 0x80, 0xFF, 0x80])


def test_slices_slice_assignment_and_concatenation():
    sw = switch("""
        header h_t { bit<8> a; bit<8> b; bit<16> c; bit<4> n1; bit<4> n2; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        apply {{
            hdr.h.c = hdr.h.a[3:0] ++ hdr.h.b ++ hdr.h.a[7:4];
            hdr.h.a[7:4] = 4w0x9;
            hdr.h.b[0:0] = 1w1;
            hdr.h.n1 = hdr.h.n2;
            hdr.h.n2 = 4w0xF;
            {FWD}
        }}""")
    assert out(sw, bytes([0x12, 0x34, 0, 0, 0x56])) == bytes([0x92, 0x35, 0x23, 0x41, 0x6F])


def test_functions_out_params_tables_switch_on_action_run_and_exit():
    sw = switch("""
        header h_t { bit<8> op; bit<8> x; bit<8> r; bit<8> y; }
        struct headers { h_t h; }
        struct metadata { }
        bit<8> add_two(in bit<8> v, out bit<8> plus_one) {
            plus_one = v + 1;
            return v + 2;
        }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        action set_x(bit<8> v) {{ hdr.h.x = v; }}
        action other() {{ }}
        table t {{
            key = {{ hdr.h.op: exact; }}
            actions = {{ set_x; other; NoAction; }}
            default_action = NoAction();
        }}
        apply {{
            {FWD}
            switch (t.apply().action_run) {{
                set_x: {{ hdr.h.op = 0xAA; }}
                other:
                NoAction: {{ hdr.h.op = 0xBB; }}
            }}
            bit<8> y;
            hdr.h.r = add_two(hdr.h.x, y);
            hdr.h.y = y;
            if (hdr.h.x == 0) {{ exit; }}
            hdr.h.x = 0xFF;
        }}""")
    sw.table("t").insert({"hdr.h.op": Exact(1)}, "set_x", {"v": 0x10})
    sw.table("t").insert({"hdr.h.op": Exact(2)}, "other")
    assert out(sw, bytes([1, 0, 0, 0])) == bytes([0xAA, 0xFF, 0x12, 0x11])
    assert out(sw, bytes([2, 5, 0, 0])) == bytes([0xBB, 0xFF, 0x07, 0x06])
    # exit ends ingress at once: x stays 0, but earlier writes are kept.
    assert out(sw, bytes([3, 0, 0, 0])) == bytes([0xBB, 0x00, 0x02, 0x01])


def test_hit_miss_and_action_inout_parameters_copy_in_copy_out():
    sw = switch("""
        header h_t { bit<8> op; bit<8> x; bit<8> hit; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        action bump(inout bit<8> v) {{ hdr.h.x = 0x77; v = v + 1; }}
        table t {{ key = {{ hdr.h.op: exact; }} actions = {{ NoAction; }} }}
        apply {{
            {FWD}
            if (t.apply().hit) {{ hdr.h.hit = 1; }} else {{ hdr.h.hit = 2; }}
            if (t.apply().miss) {{ hdr.h.hit = hdr.h.hit + 10; }}
            bump(hdr.h.x);      /* copy-out overwrites the write made through hdr */
        }}""")
    sw.table("t").insert({"hdr.h.op": Exact(1)}, "NoAction")
    assert out(sw, bytes([1, 5, 0])) == bytes([1, 6, 1])
    assert out(sw, bytes([2, 5, 0])) == bytes([2, 6, 12])


def test_const_entries_ternary_first_listed_wins_and_default_args():
    sw = switch("""
        header h_t { bit<8> op; bit<8> x; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        action set_x(bit<8> v) {{ hdr.h.x = v; }}
        table t {{
            key = {{ hdr.h.op: ternary; }}
            actions = {{ set_x; }}
            const entries = {{
                8w0x10 &&& 8w0xF0 : set_x(1);
                8w0x11 : set_x(2);
                _ : set_x(3);
            }}
            const default_action = set_x(4);
        }}
        apply {{ {FWD} t.apply(); }}""")
    assert out(sw, bytes([0x11, 0])) == bytes([0x11, 1])
    assert out(sw, bytes([0x20, 0])) == bytes([0x20, 3])
    assert sw.table("t").get_default() == ("I.set_x", {"v": 4})


def test_struct_assignment_copies_and_header_validity_ops():
    sw = switch("""
        header h_t { bit<8> a; bit<8> b; }
        struct pair_t { bit<8> first; bit<8> second; }
        struct headers { h_t h; h_t extra; }
        struct metadata { pair_t p; pair_t q; }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        apply {{
            meta.p = {{ hdr.h.a, hdr.h.b }};
            meta.q = meta.p;
            meta.p.first = 0;           /* q is a copy: unchanged */
            hdr.extra.setValid();
            hdr.extra = {{ meta.q.second, meta.q.first }};
            if (hdr.h.a == 9) {{ hdr.h.setInvalid(); }}
            {FWD}
        }}""")
    assert out(sw, bytes([1, 2]) + b"p") == bytes([1, 2, 2, 1]) + b"p"
    assert out(sw, bytes([9, 2]) + b"p") == bytes([2, 9]) + b"p"


def test_nested_control_with_constructor_parameter():
    sw = switch("""
        header h_t { bit<8> a; bit<8> b; }
        struct headers { h_t h; }
        struct metadata { }
        control Add(inout bit<8> v)(bit<8> amount) {
            apply { v = v + amount; }
        }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        Add(3) add3;
        Add(10) add10;
        apply {{ add3.apply(hdr.h.a); add10.apply(hdr.h.b); add3.apply(hdr.h.b); {FWD} }}""")
    assert out(sw, bytes([1, 1])) == bytes([4, 14])


def test_registers_and_counters():
    sw = switch("""
        header h_t { bit<8> op; bit<8> x; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        register<bit<32>, bit<8>>(16) total;
        counter<bit<8>>(16, CounterType.packets_and_bytes) seen;
        apply {{
            bit<32> v;
            total.read(v, hdr.h.op);
            v = v + (bit<32>)hdr.h.x;
            total.write(hdr.h.op, v);
            seen.count(hdr.h.op);
            hdr.h.x = v[7:0];
            {FWD}
        }}""", defines=V1MODEL_20200408)
    assert out(sw, bytes([3, 5]) + b"abc") == bytes([3, 5]) + b"abc"
    assert out(sw, bytes([3, 7])) == bytes([3, 12])
    assert sw.register("total").read(3) == 12
    assert sw.counter("I.seen").read(3) == (2, 7)
    sw.register("total").write(3, 100)
    assert out(sw, bytes([3, 1])) == bytes([3, 101])
    # Out of range: the read gives 0 and the write is dropped.
    assert out(sw, bytes([20, 9])) == bytes([20, 9])
    assert out(sw, bytes([20, 9])) == bytes([20, 9])
    with pytest.raises(OutOfRange):
        sw.register("total").read(20)


def test_control_locals_written_by_actions_enums_and_exit_in_an_action():
    sw = switch("""
        header h_t { bit<8> op; bit<8> x; bit<8> y; }
        struct headers { h_t h; }
        struct metadata { }
        enum Mode { Off, Count, Stop }
        enum bit<8> Code { A = 7, B = 9 }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        bit<8> acc = 1;
        Mode mode = Mode.Off;
        action add(bit<8> v) {{ acc = acc + v; mode = Mode.Count; }}
        action stop() {{ hdr.h.y = 0xEE; exit; }}
        table t {{ key = {{ hdr.h.op: exact; }} actions = {{ add; stop; NoAction; }} }}
        apply {{
            {FWD}
            t.apply();
            hdr.h.x = acc;
            if (mode == Mode.Count) {{ hdr.h.y = (bit<8>)Code.B; }} else {{ hdr.h.y = (bit<8>)Code.A; }}
        }}""")
    sw.table("t").insert({"hdr.h.op": Exact(1)}, "add", {"v": 4})
    sw.table("t").insert({"hdr.h.op": Exact(2)}, "stop")
    assert out(sw, bytes([1, 0, 0])) == bytes([1, 5, 9])
    assert out(sw, bytes([3, 0, 0])) == bytes([3, 1, 7])
    assert out(sw, bytes([2, 0, 0])) == bytes([2, 0, 0xEE])


def test_tuples_lookahead_of_a_header_and_stack_properties():
    sw = switch("""
        header h_t { bit<4> a; bit<4> b; }
        header s_t { bit<8> v; }
        header o_t { bit<8> size; bit<8> last; bit<8> peek; }
        struct headers { h_t h; s_t[2] s; o_t o; }
        struct metadata { }""", """
        state start {
            h_t peeked = packet.lookahead<h_t>();
            packet.extract(hdr.h);
            transition select(peeked.a, peeked.b) {
                (1, 2): two;
                (1, _): one;
                default: accept;
            }
        }
        state one { packet.extract(hdr.s.next); transition accept; }
        state two { packet.extract(hdr.s.next); packet.extract(hdr.s.next); transition accept; }""",
        f"""
        apply {{
            tuple<bit<8>, bool> t = {{ 8w3, true }};
            hdr.o.setValid();
            hdr.o.size = (bit<8>)hdr.s.size;
            hdr.o.last = (bit<8>)hdr.s.lastIndex;
            hdr.o.peek = t[1] ? t[0] : 8w0;
            {FWD}
        }}""")
    assert out(sw, bytes([0x12, 0xA, 0xB])) == bytes([0x12, 0xA, 0xB, 2, 1, 3])
    assert out(sw, bytes([0x13, 0xA, 0xB])) == bytes([0x13, 0xA, 2, 0, 3, 0xB])


def test_signed_and_bool_action_parameters_from_the_control_plane():
    sw = switch("""
        header h_t { bit<8> op; int<8> x; bit<8> flag; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        action adjust(int<8> delta, bool on) {{
            hdr.h.x = hdr.h.x + delta;
            if (on) {{ hdr.h.flag = 1; }} else {{ hdr.h.flag = 2; }}
        }}
        table t {{ key = {{ hdr.h.op: exact; }} actions = {{ adjust; }} }}
        apply {{ {FWD} t.apply(); }}""")
    sw.table("t").insert({"hdr.h.op": Exact(1)}, "adjust", {"delta": 0xFE, "on": 1})
    sw.table("t").insert({"hdr.h.op": Exact(2)}, "adjust", {"delta": 0x02, "on": 0})
    assert out(sw, bytes([1, 0x01, 0])) == bytes([1, 0xFF, 1])     # 1 + (-2) = -1
    assert out(sw, bytes([2, 0x7F, 0])) == bytes([2, 0x81, 2])     # 127 + 2 wraps


def test_calls_with_out_arguments_keep_short_circuit_and_ternary_laziness():
    sw = switch("""
        header h_t { bit<8> a; bit<8> calls; bit<8> r; }
        struct headers { h_t h; }
        struct metadata { }
        bool bump(inout bit<8> n) { n = n + 1; return true; }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        apply {{
            if (hdr.h.a == 1 && bump(hdr.h.calls)) {{ hdr.h.r = 1; }}
            if (hdr.h.a == 1 || bump(hdr.h.calls)) {{ hdr.h.r = hdr.h.r + 2; }}
            hdr.h.r = hdr.h.r + (hdr.h.a == 1 ? (bump(hdr.h.calls) ? 8w4 : 8w0) : 8w8);
            {FWD}
        }}""")
    assert out(sw, bytes([1, 0, 0])) == bytes([1, 2, 7])
    assert out(sw, bytes([2, 0, 0])) == bytes([2, 1, 10])


def test_stack_index_out_of_range_in_a_control_keeps_the_packet():
    # P4-16 leaves it undefined; as on bmv2 a write does nothing and a read gives zeros.
    sw = switch("""
        header s_t { bit<8> v; }
        header i_t { bit<8> i; bit<8> seen; }
        struct headers { i_t idx; s_t[2] s; }
        struct metadata { }""",
        "state start { packet.extract(hdr.idx); transition accept; }", f"""
        apply {{
            {FWD}
            hdr.s[hdr.idx.i].setValid();
            hdr.s[hdr.idx.i].v = 7;
            hdr.idx.seen = hdr.s[hdr.idx.i].v + 1;
        }}""")
    assert out(sw, b"\x01\x00") == b"\x01\x08\x07"
    assert out(sw, b"\x02\x00") == b"\x02\x01"


def test_extern_passed_to_a_nested_control_constructor():
    sw = switch("""
        header h_t { bit<8> i; bit<8> v; }
        struct headers { h_t h; }
        struct metadata { }
        control Accumulate(inout h_t h)(register<bit<8>, bit<32>> cells) {
            apply {
                bit<8> old;
                cells.read(old, (bit<32>)h.i);
                h.v = h.v + old;
                cells.write((bit<32>)h.i, h.v);
            }
        }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        register<bit<8>, bit<32>>(4) sums;
        Accumulate(sums) acc;
        apply {{ acc.apply(hdr.h); {FWD} }}""", defines=V1MODEL_20200408)
    assert out(sw, bytes([1, 5])) == bytes([1, 5])
    assert out(sw, bytes([1, 6])) == bytes([1, 11])
    assert sw.register("sums").read(1) == 11


def test_constants_of_enum_and_error_type():
    sw = switch("""
        header h_t { bit<8> a; bit<8> b; }
        struct headers { h_t h; }
        struct metadata { }
        enum Color { Red, Green }
        const Color FAVOURITE = Color.Green;
        const error EXPECTED = error.NoError;""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        apply {{
            Color c = Color.Green;
            if (c == FAVOURITE) {{ hdr.h.a = 1; }}
            if (standard_metadata.parser_error == EXPECTED) {{ hdr.h.b = 2; }}
            {FWD}
        }}""")
    assert out(sw, bytes([0, 0])) == bytes([1, 2])


def test_for_loops_with_break_and_continue():
    sw = switch("""
        header h_t { bit<8> a; bit<8> b; bit<8> c; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        apply {{
            bit<8> s = 0;
            for (bit<8> i = 0; i < hdr.h.a; i = i + 1) {{
                if (i == 1) {{ continue; }}
                s = s + i;
                if (i == 9) {{ break; }}
            }}
            hdr.h.b = s;
            s = 0;
            for (bit<8> j in 1 .. 10) {{
                if (j == 2) {{ continue; }}
                if (j == 5) {{ break; }}
                s = s + j;
            }}
            hdr.h.c = s;
            {FWD}
        }}""")
    assert out(sw, bytes([4, 0, 0])) == bytes([4, 5, 8])      # 0+2+3; 1+3+4
    assert out(sw, bytes([200, 0, 0])) == bytes([200, 44, 8])  # 0+2+...+9 (break at 9)


def test_aliased_arguments_of_a_nested_control_are_copied_in_and_out():
    sw = switch("""
        header h_t { bit<8> a; bit<8> b; }
        struct headers { h_t h; }
        struct metadata { }
        control Swap(inout h_t x, in h_t y) {
            apply { x.a = y.b; x.b = y.a; }
        }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        Swap() swap;
        apply {{ swap.apply(hdr.h, hdr.h); {FWD} }}""")
    # y is a copy taken before the call, so the swap sees the original values.
    assert out(sw, bytes([1, 2])) == bytes([2, 1])


def test_exit_inside_actions_and_sub_controls_still_copies_out_arguments():
    # As on bmv2: the inout/out arguments of the action (or sub-control) that exits are
    # copied back, then those of every control it was applied from; nothing after runs.
    sw = switch("""
        header h_t { bit<8> sel; bit<8> a; bit<8> b; bit<8> c; }
        struct headers { h_t h; }
        struct metadata { }
        control Plain(inout bit<8> x) { apply { x = 6; exit; } }
        control WithAction(inout bit<8> x, out bit<8> y) {
            action leave() { x = 7; y = 8; exit; }
            apply { leave(); x = 0; }
        }
        control Outer(inout bit<8> x, inout bit<8> y) {
            WithAction() inner;
            apply { x = x + 1; inner.apply(x, y); x = 0; }
        }""",
        "state start { packet.extract(hdr.h); transition accept; }", f"""
        Plain() plain;
        Outer() outer;
        action inlined(inout bit<8> v, out bit<8> o) {{ v = 3; o = 4; exit; }}
        action returning(inout bit<8> v) {{ v = 5; if (v == 5) {{ exit; }} return; }}
        apply {{
            {FWD}
            if (hdr.h.sel == 0) {{ inlined(hdr.h.a, hdr.h.b); }}
            else if (hdr.h.sel == 1) {{ returning(hdr.h.a); }}
            else if (hdr.h.sel == 2) {{ plain.apply(hdr.h.a); }}
            else {{ outer.apply(hdr.h.a, hdr.h.b); }}
            hdr.h.c = 9;
        }}""")
    assert out(sw, bytes([0, 0, 0, 0])) == bytes([0, 3, 4, 0])
    assert out(sw, bytes([1, 0, 0, 0])) == bytes([1, 5, 0, 0])
    assert out(sw, bytes([2, 0, 0, 0])) == bytes([2, 6, 0, 0])
    assert out(sw, bytes([3, 0, 0, 0])) == bytes([3, 7, 8, 0])


def test_side_effects_happen_in_evaluation_order():
    # The left-hand side's stack index is computed before the right-hand side's call;
    # list elements are read left to right, before a later element's call writes.
    sw = switch("""
        header i_t { bit<8> idx; }
        header s_t { bit<8> v; }
        header p_t { bit<8> x; bit<8> y; }
        struct headers { i_t i; s_t[2] s; p_t p; }
        struct metadata { }
        bit<8> take(inout bit<8> v) { bit<8> old = v; v = 0; return old + 4; }""",
        """state start { packet.extract(hdr.i); packet.extract(hdr.s.next);
                         packet.extract(hdr.s.next); packet.extract(hdr.p);
                         transition accept; }""", f"""
        apply {{
            {FWD}
            hdr.s[hdr.i.idx].v = take(hdr.i.idx);
            p_t pair = {{ hdr.p.x, take(hdr.p.x) }};
            hdr.p = pair;
        }}""")
    assert out(sw, bytes([1, 0, 0, 7, 0])) == bytes([0, 0, 5, 7, 11])
