"""P4Runtime encoding of the controller's entries against p4src's real P4Info."""

import os

import pytest

from controller.entries import Lpm, TableEntry, job_entries, route_writes
from controller.p4info import P4InfoError, P4InfoHelper, decode_value, encode_value
from controller.planner import Planner
from p4switch.frontend import load
from p4switch.p4info import build_p4info
from topologies.spec import parse_topology

MAIN_P4 = os.path.join(os.path.dirname(__file__), "..", "..", "p4src", "main.p4")


@pytest.fixture(scope="module")
def helper():
    return P4InfoHelper(build_p4info(load(MAIN_P4, defines={"AGG_K": "4"})))


def test_values_are_canonical_byte_strings():
    assert encode_value(0, 9) == b"\x00"
    assert encode_value(5, 9) == b"\x05"
    assert encode_value(0x0a000001, 32) == b"\x0a\x00\x00\x01"
    assert encode_value(300, 9) == b"\x01\x2c"
    assert decode_value(b"\x01\x2c") == 300
    with pytest.raises(P4InfoError, match="value 512 does not fit in 9 bits"):
        encode_value(512, 9)


def test_every_entry_of_a_tree_job_and_its_routes_encodes(helper):
    spec = parse_topology("leafspine:2,2,2")
    planner = Planner(spec)
    entries, _ = job_entries(planner.plan(0, [h.name for h in spec.hosts], 8), spec)
    for entry in entries:
        message = helper.table_entry(entry)
        assert message.table_id == helper.table(entry.table).preamble.id
        assert len(message.match) == len(entry.match)
        assert message.action.action.action_id == helper.action(entry.action).preamble.id
    routes = route_writes(planner.topology.routes())
    tables = {entry.table for entry in routes.entries}
    assert tables == {"ipv4_routes", "ecmp_buckets"}   # two spines: the leaves have ECMP
    for entry in routes.entries:
        message = helper.table_entry(entry)
        assert message.table_id == helper.table(entry.table).preamble.id
        assert message.action.action.action_id == helper.action(entry.action).preamble.id
        assert [p.value for p in message.action.action.params] == [
            encode_value(v, 16 if name != "port" else 9) for name, v in entry.params.items()]


def test_ecmp_route_and_bucket_encode(helper):
    route = helper.table_entry(TableEntry("s1", "ipv4_routes",
                                          {"hdr.ipv4.dstAddr": Lpm(0x0a000001, 32)}, "ecmp",
                                          {"group": 1, "buckets": 4}))
    assert route.action.action.action_id == helper.action("ecmp").preamble.id
    assert [(p.param_id, p.value) for p in route.action.action.params] == [
        (1, b"\x01"), (2, b"\x04")]
    bucket = helper.table_entry(TableEntry("s1", "ecmp_buckets",
                                           {"meta.ecmp_group": 1, "meta.ecmp_bucket": 3},
                                           "forward", {"port": 4}))
    assert [(m.field_id, m.exact.value) for m in bucket.match] == [(1, b"\x01"), (2, b"\x03")]
    assert [(p.param_id, p.value) for p in bucket.action.action.params] == [(1, b"\x04")]


def test_job_root_entry_encodes_ids_and_values(helper):
    entry = TableEntry("s1", "agg_jobs", {"hdr.agg.job_id": 258}, "job_root",
                       {"generation": 7, "fan_in": 3, "slot_base": 16, "slot_count": 4,
                        "mcast_group": 259})
    message = helper.table_entry(entry)
    table = helper.table("agg_jobs")
    assert table.preamble.name.endswith(".agg_jobs")
    (match,) = message.match
    assert (match.field_id, match.exact.value) == (table.match_fields[0].id, b"\x01\x02")
    action = helper.action("job_root")
    params = {p.id: p.name for p in action.params}
    assert {params[p.param_id]: p.value for p in message.action.action.params} == {
        "generation": b"\x07", "fan_in": b"\x03", "slot_base": b"\x10", "slot_count": b"\x04",
        "mcast_group": b"\x01\x03"}


def test_lpm_route_masks_host_bits(helper):
    entry = TableEntry("s1", "ipv4_routes", {"hdr.ipv4.dstAddr": Lpm(0x0a0000ff, 24)},
                       "forward", {"port": 2})
    (match,) = helper.table_entry(entry).match
    assert (match.lpm.value, match.lpm.prefix_len) == (b"\x0a\x00\x00\x00", 24)


def test_a_table_with_an_action_profile_is_refused():
    """p4src has none (forwarding.p4 spells its ECMP out); a P4Info that had one is refused
    rather than written as if the table were direct."""
    info = build_p4info(load(MAIN_P4, defines={"AGG_K": "4"}))
    (routes,) = [t for t in info.tables if t.preamble.name.endswith(".ipv4_routes")]
    routes.implementation_id = 291086179
    entry = TableEntry("s1", "ipv4_routes", {"hdr.ipv4.dstAddr": Lpm(0x0a000001, 32)},
                       "forward", {"port": 2})
    with pytest.raises(P4InfoError, match="ipv4_routes has an action profile: the controller "
                                          "writes direct tables only"):
        P4InfoHelper(info).table_entry(entry)


@pytest.mark.parametrize("entry, message", [
    (TableEntry("s1", "no_such_table", {}, "forward", {}),
     "the P4Info has no table named 'no_such_table'"),
    (TableEntry("s1", "agg_jobs", {"hdr.agg.slot": 1}, "job_root", {}),
     "table AggIngress.aggregation.membership.agg_jobs has no match field 'hdr.agg.slot'"),
    (TableEntry("s1", "agg_jobs", {"hdr.agg.job_id": 1}, "forward", {"port": 1}),
     "action AggIngress.forwarding.forward is not an action of table "
     "AggIngress.aggregation.membership.agg_jobs"),
    (TableEntry("s1", "agg_members", {"hdr.agg.job_id": 1,
                                      "standard_metadata.ingress_port": 1},
                "member_child", {"index": 1}),
     "action AggIngress.aggregation.membership.member_child takes parameters "
     "['contributor'], given ['index']"),
])
def test_mistakes_are_reported_by_name(helper, entry, message):
    with pytest.raises(P4InfoError) as error:
        helper.table_entry(entry)
    assert str(error.value) == message
