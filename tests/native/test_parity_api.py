"""Both back ends driven through the Switch API where STF has no syntax yet: action
profiles shared by two tables, action selector groups chosen by hash, members and groups
changed between packets. Every packet's outputs must be identical."""
import ctypes
import random
import sys
from pathlib import Path

import p4switch
from p4switch.backend.c.binding import EMIT_FN
from p4switch.runtime.tables import Exact, Ternary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from rt_helpers import build  # noqa: E402
from parity import make_pair  # noqa: E402

TYPES = """
header h_t { bit<8> op; bit<8> x; bit<16> y; bit<32> z; }
struct headers { h_t h; }
struct metadata { }
"""
PARSER = "state start { packet.extract(hdr.h); transition accept; }"
INGRESS = """
    action_profile(8) ap;
    action_selector(HashAlgorithm.crc16, 16, 14) sel;
    action set_x(bit<8> v) { hdr.h.x = v; }
    action set_y(bit<16> v) { hdr.h.y = v; }
    table t1 { key = { hdr.h.op: exact; } actions = { set_x; set_y; } implementation = ap; }
    table t2 { key = { hdr.h.x: exact; } actions = { set_x; set_y; } implementation = ap; }
    table t3 {
        key = { hdr.h.op: ternary; hdr.h.y: selector; hdr.h.z: selector; }
        actions = { set_x; set_y; NoAction; }
        implementation = sel;
    }
    apply {
        t1.apply();
        switch (t2.apply().action_run) {
            set_x: { hdr.h.z = 1; }
            default: { hdr.h.z = hdr.h.z + 2; }
        }
        if (t3.apply().hit) { standard_metadata.egress_spec = 2; }
        else { standard_metadata.egress_spec = 1; }
    }"""


def _both(program, operation):
    python, native, _ = make_pair(program)
    for sw in (python, native):
        operation(sw)
    return python, native


def test_profiles_and_selectors_identical_on_both_backends():
    program = build(TYPES, PARSER, INGRESS)

    def setup(sw):
        ap, sel = sw.action_profile("ap"), sw.action_profile("sel")
        ap.insert_member(1, "set_x", {"v": 0x20})
        ap.insert_member(2, "set_y", {"v": 0xBEEF})
        sw.table("t1").insert({"hdr.h.op": Exact(1)}, member=1)
        sw.table("t2").insert({"hdr.h.x": Exact(0x20)}, member=2)
        for member, value in ((10, 0xA0), (11, 0xA1), (12, 0xA2), (13, 0xA3)):
            sel.insert_member(member, "set_x", {"v": value})
        sel.insert_member(14, "set_y", {"v": 0x1234})
        sel.insert_group(5, [10, 11, 12, 14])
        sel.insert_group(6, [])
        sw.table("t3").insert({"hdr.h.op": Ternary(0x01, 0x0F)}, group=5, priority=10)
        sw.table("t3").insert({"hdr.h.op": Ternary(0x02, 0x0F)}, group=6, priority=9)
        sw.table("t3").insert({"hdr.h.op": Ternary(0x03, 0x0F)}, member=13, priority=8)

    python, native = _both(program, setup)
    rng = random.Random(11)
    compared = 0
    for step in range(600):
        data = bytes([rng.choice([1, 2, 3, 0x11, 0x12, 7])]) + \
            bytes(rng.randrange(256) for _ in range(7 + rng.randrange(3)))
        assert python.process_packet(0, data) == native.process_packet(0, data), (step, data)
        compared += 1
        if step == 200:
            for sw in (python, native):
                sw.action_profile("sel").modify_group(5, [13, 10])
                sw.action_profile("ap").modify_member(1, "set_y", {"v": 7})
        if step == 400:
            for sw in (python, native):
                sw.table("t3").delete({"hdr.h.op": Ternary(0x01, 0x0F)}, priority=10)
                sw.action_profile("sel").delete_group(5)
    assert compared == 600
    assert native.backend == "c" and python.backend == "python"


def test_random_draws_what_pythons_random_draws_for_a_seed():
    """random() in C is Python's random.Random(seed).randint: the same numbers per seed,
    for narrow, one-value and 64-bit ranges."""
    program = build("""
        header h_t { bit<8> a; bit<16> b; bit<32> c; bit<64> d; }
        struct headers { h_t h; } struct metadata { }""", PARSER.replace("hdr.h", "hdr.h"), """
        apply {
            random(hdr.h.a, 3, 200); random(hdr.h.b, 0, 1); random(hdr.h.c, 5, 5);
            random(hdr.h.d, 1, 0xFFFFFFFFFFF); standard_metadata.egress_spec = 1;
        }""")
    for seed in (0, 1, 12345678901234567890):
        python = p4switch.Switch(program, seed=seed, backend="python")
        native = p4switch.Switch(program, seed=seed, backend="c")
        outputs = [python.process_packet(0, bytes(15)) for _ in range(300)]
        assert [native.process_packet(0, bytes(15)) for _ in range(300)] == outputs
        assert len({out[0][1] for out in outputs}) > 250        # the draws do vary


def test_a_python_side_packet_leaves_the_native_clock_running():
    """process_packet reads the Switch's clock for that packet only: packets the native loop
    runs afterwards (here p4n_replay, which uses the same entry point as the loop) see the
    real clock again, not a clock frozen at the last Python-side packet."""
    program = build("""
        header h_t { bit<48> ts; }
        struct headers { h_t h; } struct metadata { }""", PARSER, """
        apply { hdr.h.ts = standard_metadata.ingress_global_timestamp;
                standard_metadata.egress_spec = 1; }""")
    native = p4switch.Switch(program, backend="c", clock=lambda: 5)
    assert native.process_packet(0, bytes(6)) == [(1, (5).to_bytes(6, "big"))]
    seen = []

    def collect(_ctx, port, data, length):
        seen.append(int.from_bytes(ctypes.string_at(data, length), "big"))
    emit = EMIT_FN(collect)
    native.lib.p4n_process(native.handle, 0, bytes(6), 6, emit, None)
    assert seen and seen[0] != 5


def test_random_and_custom_crc_hashes_identical_for_a_seed():
    """hash() with the random algorithm (a stream per call site) and the custom CRCs (which
    keep crc16/crc32's parameters) give the same values in both back ends."""
    program = build("""
        header h_t { bit<16> a; bit<16> b; bit<32> c; bit<32> d; }
        struct headers { h_t h; } struct metadata { }""", PARSER, """
        apply {
            hash(hdr.h.a, HashAlgorithm.random, 16w0, { hdr.h.c }, 16w1000);
            hash(hdr.h.b, HashAlgorithm.random, 16w5, { hdr.h.d }, 16w0xFFFF);
            hash(hdr.h.c, HashAlgorithm.crc32_custom, 32w0, { hdr.h.a, hdr.h.b }, 32w0xFFFFFFFF);
            hash(hdr.h.d, HashAlgorithm.crc16_custom, 32w0, { hdr.h.c }, 32w65536);
            standard_metadata.egress_spec = 1;
        }""")
    python = p4switch.Switch(program, seed=3, backend="python")
    native = p4switch.Switch(program, seed=3, backend="c")
    rng = random.Random(5)
    for _ in range(300):
        data = bytes(rng.randrange(256) for _ in range(12))
        assert python.process_packet(0, data) == native.process_packet(0, data)


def test_header_and_struct_equality_identical():
    """== and != on headers (validity, then fields), structs and stacks in both back ends."""
    program = build("""
        header h_t { bit<8> a; bit<8> b; }
        struct pair_t { h_t x; bit<8> k; }
        struct headers { h_t h1; h_t h2; h_t[2] s; } struct metadata { pair_t p; pair_t q; }""",
        "state start { packet.extract(hdr.h1); packet.extract(hdr.h2); transition accept; }", """
        apply {
            bit<9> port = 0;
            if (hdr.h1 == hdr.h2) { port = port + 1; }
            meta.p.x = hdr.h1; meta.q.x = hdr.h2; meta.p.k = hdr.h1.b; meta.q.k = hdr.h1.b;
            if (meta.p != meta.q) { port = port + 2; }
            hdr.s[0] = hdr.h1;
            if (hdr.s[0] == hdr.h1 && hdr.s[1] != hdr.h2) { port = port + 4; }
            standard_metadata.egress_spec = port;
        }""", deparser="apply { packet.emit(hdr.h1); }")
    python, native, _ = make_pair(program)
    for data in (b"\x01\x02\x01\x02", b"\x01\x02\x01\x03", b"\x01\x02", b"\x05",
                 b"\x00\x00\x00\x00"):
        assert python.process_packet(0, data) == native.process_packet(0, data)
    assert [p for p, _ in python.process_packet(0, b"\x01\x02\x01\x02")] == [5]


def test_evaluation_order_of_assignments_and_struct_values():
    """P4 evaluates left to right, C leaves it open: a stack index on the left is computed
    before the right-hand side's call changes it, and a struct value's fields in order."""
    program = build("""
        header e_t { bit<8> v; }
        header i_t { bit<8> idx; }
        struct p_t { bit<8> x; bit<8> y; }
        header p_h { bit<8> x; bit<8> y; }
        struct headers { i_t i; e_t[3] s; p_h p; } struct metadata { }
        bit<8> take(inout bit<8> x) { x = x + 1; return x + 4; }""", """
        state start { packet.extract(hdr.i); packet.extract(hdr.s.next);
                      packet.extract(hdr.s.next); packet.extract(hdr.s.next);
                      packet.extract(hdr.p); transition accept; }""", """
        apply {
            hdr.s[hdr.i.idx].v = take(hdr.i.idx);
            p_t pair = { hdr.p.x, take(hdr.p.x) };
            hdr.p.y = pair.x + pair.y;
            standard_metadata.egress_spec = 1;
        }""")
    python, native, _ = make_pair(program)
    for data in (bytes([0, 9, 9, 9, 3, 0]), bytes([1, 9, 9, 9, 250, 0]),
                 bytes([2, 1, 2, 3, 7, 7])):
        expected = python.process_packet(0, data)
        assert native.process_packet(0, data) == expected
    assert python.process_packet(0, bytes([0, 9, 9, 9, 3, 0]))[0][1][:2] == bytes([1, 5])


def test_direct_counter_writes_reach_the_c_entries():
    """DirectCounter.write (P4Runtime DirectCounterEntry) sets the counts the C pipeline
    then adds to, in both back ends."""
    corpus = Path(__file__).resolve().parents[1] / "p4"
    program = p4switch.compile_file(corpus / "direct_counters.p4", include_dirs=[str(corpus)])
    python, native, _ = make_pair(program)
    for sw in (python, native):
        table = next(iter(t for t in sw.tables.values() if t.spec.direct_counter))
        match = {table.spec.keys[0].name: Exact(1)}
        action = next(a.name for a in table.spec.actions if a.scope != "DEFAULT_ONLY")
        params = {name: 1 for name, _ in table._actions[action].params}
        table.insert(match, action, params)
        counter = sw.direct_counter(table.spec.direct_counter)
        counter.write(match, 100, 1000)
        sw.process_packet(0, bytes([1, 0, 0]))
        assert counter.read(match) == (101, 1003)


def test_log_msg_of_composite_values_written_alike():
    """log_msg of headers (valid, invalid), structs, stacks, varbits, tuples and values
    over 128 bits: the same text from both back ends, the one docs/native.md describes."""
    corpus = Path(__file__).resolve().parents[1] / "p4"
    program = p4switch.compile_file(corpus / "log_composite.p4", include_dirs=[str(corpus)])
    traces = {"python": [], "c": []}
    python, native, _ = make_pair(program, traces=traces)
    packet = bytes.fromhex("07010209" "0A0B02CAFE")
    for sw in (python, native):
        sw.process_packet(0, packet)
    expected = [
        "h={a = 7, b = 258} missing={#}",
        "s={h = {a = 7, b = 258}, flag = 1, n = 251, e = 2, wide = 75557863725914323419135}",
        "stack={{a = 9, b = 2571}, {#}} v={len = 2, opt = 51966}",
        "t={1, 255, 1} big=" + str(258 << 200) + " extra={}",
        "fields of h: 7 258",
    ]
    for name, lines in traces.items():
        logged = [line for line in lines if line.startswith(("h=", "s=", "stack=", "t=",
                                                              "fields"))]
        assert logged == expected, name
