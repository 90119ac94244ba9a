"""End to end: digests, hashes, meters, direct counters and meters, random, log_msg, assert."""

import pytest

import p4switch
from p4switch.runtime import algorithms
from p4switch.runtime.errors import InvalidArgument
from p4switch.runtime.tables import Exact
from p4switch.runtime.values import P4AssertionError
from rt_helpers import build, switch

TYPES = """
header h_t { bit<8> op; bit<8> x; bit<16> y; }
struct headers { h_t h; }
struct learn_t { bit<8> op; bit<9> port; }
struct metadata { bit<8> color; }
"""
PARSER = "state start { packet.extract(hdr.h); transition accept; }"


def test_digest_reaches_on_digest_with_field_values():
    sw = switch(TYPES, PARSER, """
        apply {
            digest<learn_t>(1, { hdr.h.op, standard_metadata.ingress_port });
            standard_metadata.egress_spec = 1;
        }""")
    got = []
    sw.on_digest = lambda name, values: got.append((name, list(values)))
    sw.process_packet(5, b"\x09\x00\x00\x00")
    assert got == [("learn_t", [9, 5])]


def test_hash_of_the_crc16_check_string_and_modulo():
    sw = switch(TYPES, PARSER, """
        apply {
            hash(hdr.h.y, HashAlgorithm.crc16, 16w0,
                 { 8w0x31, 8w0x32, 8w0x33, 8w0x34, 8w0x35, 8w0x36, 8w0x37, 8w0x38, 8w0x39 },
                 32w65536);
            hash(hdr.h.x, HashAlgorithm.crc16, 8w10, { hdr.h.op }, 16w7);
            standard_metadata.egress_spec = 1;
        }""")
    [(_, data)] = sw.process_packet(0, b"\x2a\x00\x00\x00")
    assert data[2:4] == (0xBB3D).to_bytes(2, "big")      # CRC-16/ARC check value
    assert data[1] == 10 + algorithms.crc16([(0x2A, 8)]) % 7


def test_indexed_meter_colours_with_a_controlled_clock():
    now = [0]
    prog = build(TYPES, PARSER, """
        meter(4, MeterType.packets) m;
        apply {
            m.execute_meter((bit<32>)hdr.h.op, meta.color);
            hdr.h.x = meta.color;
            standard_metadata.egress_spec = 1;
        }""")
    sw = p4switch.Switch(prog, clock=lambda: now[0])
    sw.meter("m").set_config(0, 1, 1, 2, 2)      # cir 1/s burst 1, pir 2/s burst 2
    colours = [sw.process_packet(0, b"\x00\x00\x00\x00")[0][1][1] for _ in range(3)]
    assert colours == [algorithms.GREEN, algorithms.YELLOW, algorithms.RED]
    now[0] = 2_000_000                                # two seconds later: refilled
    assert sw.process_packet(0, b"\x00\x00\x00\x00")[0][1][1] == algorithms.GREEN
    # An unconfigured index is always green.
    assert sw.process_packet(0, b"\x01\x00\x00\x00")[0][1][1] == algorithms.GREEN


def test_direct_counter_and_direct_meter_on_table_entries():
    now = [0]
    prog = build(TYPES, PARSER, """
        direct_counter(CounterType.packets_and_bytes) hits;
        direct_meter<bit<8>>(MeterType.packets) dm;
        action mark() { dm.read(meta.color); hdr.h.x = meta.color; }
        table t {
            key = { hdr.h.op: exact; }
            actions = { mark; NoAction; }
            counters = hits;
            meters = dm;
            default_action = NoAction();
        }
        apply { t.apply(); standard_metadata.egress_spec = 1; }""")
    sw = p4switch.Switch(prog, clock=lambda: now[0])
    t = sw.table("t")
    t.insert({"hdr.h.op": Exact(1)}, "mark")
    sw.direct_meter("dm").set_config({"hdr.h.op": Exact(1)}, 1, 1, 1, 1)
    assert sw.process_packet(0, b"\x01\x09\x00\x00abc")[0][1][1] == algorithms.GREEN
    assert sw.process_packet(0, b"\x01\x09\x00\x00")[0][1][1] == algorithms.RED
    sw.process_packet(0, b"\x02\x09\x00\x00")          # a miss is not counted
    [entry] = t.entries()
    assert (entry.packets, entry.bytes) == (2, 11)
    assert sw.direct_counter("hits").read({"hdr.h.op": Exact(1)}) == (2, 11)


def test_random_stays_in_range_and_log_msg_goes_to_the_trace():
    sw = switch(TYPES, PARSER, """
        apply {
            random(hdr.h.x, 8w3, 8w5);
            log_msg("op is {}", { hdr.h.op });
            standard_metadata.egress_spec = 1;
        }""")
    values = {sw.process_packet(0, b"\x07\x00\x00\x00")[0][1][1] for _ in range(60)}
    assert values == {3, 4, 5}
    assert "op is 7" in sw.trace


def test_assert_failure_stops_the_packet_with_an_error():
    sw = switch(TYPES, PARSER, """
        apply { assert(hdr.h.op != 0); standard_metadata.egress_spec = 1; }""")
    assert sw.process_packet(0, b"\x01\x00\x00\x00") == [(1, b"\x01\x00\x00\x00")]
    with pytest.raises(P4AssertionError):
        sw.process_packet(0, b"\x00\x00\x00\x00")


@pytest.mark.parametrize("ingress, name", [
    ("""Random() r;
        apply { }""", "Random"),
    ("""apply { resubmit({ hdr.h.op }); }""", "hdr.h.op cannot be preserved"),
    ("""apply { bit<8> lo = 2; hdr.h.x = hdr.h.y[lo + 7:lo]; }""", "slice"),
])
def test_unsupported_constructs_raise_compile_errors_naming_them(ingress, name):
    with pytest.raises(p4switch.CompileError, match=name) as error:
        build("extern Random { Random(); }" + TYPES, PARSER, ingress)
    assert str(error.value).startswith("test.p4:")


def test_action_profile_members_shared_by_two_tables():
    sw = switch(TYPES, PARSER, """
        action_profile(8) ap;
        action set_x(bit<8> v) { hdr.h.x = v; }
        action set_y(bit<16> v) { hdr.h.y = v; }
        table t1 { key = { hdr.h.op: exact; } actions = { set_x; set_y; } implementation = ap; }
        table t2 { key = { hdr.h.x: exact; } actions = { set_x; set_y; } implementation = ap; }
        apply { t1.apply(); t2.apply(); standard_metadata.egress_spec = 1; }""")
    profile = sw.action_profile("ap")
    profile.insert_member(1, "set_x", {"v": 0x20})
    profile.insert_member(2, "set_y", {"v": 0xBEEF})
    sw.table("t1").insert({"hdr.h.op": Exact(1)}, member=1)
    sw.table("t2").insert({"hdr.h.x": Exact(0x20)}, member=2)
    assert sw.process_packet(0, b"\x01\x00\x00\x00") == [(1, b"\x01\x20\xbe\xef")]
    [view] = sw.table("t1").entries()
    assert (view.action, view.member, view.group) == (None, 1, None)
    with pytest.raises(InvalidArgument):
        profile.delete_member(1)                       # still used by t1
    with pytest.raises(InvalidArgument):
        sw.table("t1").insert({"hdr.h.op": Exact(2)}, "set_x", {"v": 1})
    with pytest.raises(InvalidArgument):
        profile.insert_group(1, [1])                   # a profile has no groups
    profile.modify_member(1, "set_x", {"v": 0x21})
    assert sw.process_packet(0, b"\x01\x00\x00\x00") == [(1, b"\x01\x21\x00\x00")]
    sw.table("t1").delete({"hdr.h.op": Exact(1)})
    profile.delete_member(1)


def test_action_selector_picks_a_group_member_by_hash():
    sw = switch(TYPES, PARSER, """
        action_selector(HashAlgorithm.identity, 16, 16) sel;
        action set_x(bit<8> v) { hdr.h.x = v; }
        table t {
            key = { hdr.h.op: exact; hdr.h.y: selector; }
            actions = { set_x; NoAction; }
            implementation = sel;
        }
        apply { t.apply(); standard_metadata.egress_spec = 1; }""")
    sel = sw.action_profile("sel")
    for member, value in ((10, 0xA0), (11, 0xA1), (12, 0xA2)):
        sel.insert_member(member, "set_x", {"v": value})
    sel.insert_group(5, [10, 11, 12])
    sw.table("t").insert({"hdr.h.op": Exact(1)}, group=5)
    # identity hash of y, modulo the group size, picks the member.
    for y in (0, 1, 2, 3, 7):
        data = b"\x01\x00" + y.to_bytes(2, "big")
        expected = 0xA0 + y % 3
        assert sw.process_packet(0, data) == [(1, b"\x01" + bytes([expected]) + data[2:])]
    sel.modify_group(5, [])
    assert sw.process_packet(0, b"\x01\x00\x00\x01") == [(1, b"\x01\x00\x00\x01")]


def test_deprecated_checksum16_get():
    sw = switch(TYPES, PARSER, """
        Checksum16() ck;
        apply { hdr.h.y = ck.get({ hdr.h.op, hdr.h.x }); standard_metadata.egress_spec = 1; }""")
    expected = (~0x1234) & 0xFFFF
    assert sw.process_packet(0, b"\x12\x34\x00\x00") == [
        (1, b"\x12\x34" + expected.to_bytes(2, "big"))]
