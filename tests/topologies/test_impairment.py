"""Link impairments: which switch port impairs which direction of which link (each direction
of every link exactly once, for star, leafspine and fattree), the --impair strings, the
switch command lines, the TCLink options with and without netem, topology.json impairment
objects and the stats counters."""

import argparse
import json

import pytest

from contracts.requests import FabricRequest
from p4switch.device.impair import parse_impairment
from topologies.impairment import (ImpairmentUnsupported, add_link_arguments, check_target,
                                   counters_of, impair_settings, stats_path,
                                   sum_counters, switch_impair_args, tclink_options)
from topologies.spec import Link, parse_topology
from topologies.switches import SwitchLaunch, bmv2_command, builtin_command

IMPAIRED = dict(loss_pct=5, dup_pct=2, reorder_pct=5)


def covered_directions(spec, impair_args):
    """[(sender, receiver, settings)] for every direction an --impair spec impairs, read back
    through the switch's own parser: rx impairs peer -> switch, tx switch -> peer."""
    covered = []
    for switch, specs in impair_args.items():
        for text in specs:
            port, directions, impairment = parse_impairment(text)
            (link,) = [l for l in spec.links_of(switch) if l.end_of(switch)[0] == port]
            _, peer, _ = link.end_of(switch)
            for direction in directions:
                pair = (peer, switch) if direction == "rx" else (switch, peer)
                covered.append(pair + (impairment,))
    return covered


@pytest.mark.parametrize("topo", ["star:3", "leafspine:2,1,4", "leafspine:2,2,2", "fattree:4",
                                  "tree:2,2"])
def test_every_link_direction_impaired_exactly_once(topo):
    spec = parse_topology(topo).with_link_defaults(**IMPAIRED, delay_ms=1.5)
    covered = covered_directions(spec, switch_impair_args(spec, seed=7))
    pairs = [(a, b) for a, b, _ in covered]
    expected = [(l.node1, l.node2) for l in spec.links] + [(l.node2, l.node1) for l in spec.links]
    assert sorted(pairs) == sorted(expected)
    assert len(set(pairs)) == len(pairs)
    for _, _, impairment in covered:
        assert (impairment.loss, impairment.dup, impairment.reorder, impairment.delay,
                impairment.seed) == (5, 2, 5, 1.5, 7)


def test_host_links_both_switch_links_tx():
    spec = parse_topology("leafspine:2,1,2").with_link_defaults(loss_pct=2)
    assert switch_impair_args(spec) == {
        "s1": ("1:both:loss=2", "2:both:loss=2", "3:tx:loss=2"),
        "s2": ("1:both:loss=2", "2:both:loss=2", "3:tx:loss=2"),
        "s3": ("1:tx:loss=2", "2:tx:loss=2")}


def test_only_impaired_links_get_args():
    spec = parse_topology("star:2")
    assert switch_impair_args(spec.with_link_defaults(bw=10)) == {}
    spec.links[1] = Link("h2", None, "s1", 2, jitter_ms=0.5, delay_ms=3)
    assert switch_impair_args(spec, seed=1) == {"s1": ("2:both:delay=3,jitter=0.5,seed=1",)}


def test_impair_settings_order_and_format():
    link = Link("h1", None, "s1", 1, bw=10, delay_ms=10.0, loss_pct=0.5, dup_pct=1,
                reorder_pct=25, jitter_ms=2)
    assert impair_settings(link) == "loss=0.5,dup=1,reorder=25,delay=10,jitter=2"
    assert impair_settings(link, seed=0) == "loss=0.5,dup=1,reorder=25,delay=10,jitter=2,seed=0"
    assert impair_settings(Link("h1", None, "s1", 1, bw=10)) is None


def test_tclink_gets_bandwidth_only_unless_netem():
    link = Link("h1", None, "s1", 1, bw=10, delay_ms=10, loss_pct=2, jitter_ms=1)
    assert tclink_options(link, netem=False) == {"bw": 10}
    # loss is never netem's: bmv2's links drop by a tc bpf program (topologies/linkloss.py)
    assert tclink_options(link, netem=True) == {"bw": 10, "delay": "10ms", "jitter": "1ms"}
    assert tclink_options(Link("h1", None, "s1", 1, loss_pct=2), netem=False) == {}


def test_bmv2_refuses_dup_and_reorder():
    spec = parse_topology("star:2").with_link_defaults(reorder_pct=5)
    with pytest.raises(ImpairmentUnsupported, match="reorder is only supported by the built-in"):
        check_target(spec, "bmv2")
    check_target(spec, "builtin")
    check_target(parse_topology("star:2").with_link_defaults(loss_pct=5, delay_ms=1), "bmv2")


def test_switch_command_lines():
    launch = SwitchLaunch("s1", 0, 9559, ((1, "s1-eth1"), (2, "s1-eth2")),
                          impairments=("1:both:loss=2", "2:both:loss=2"),
                          impair_stats="/o/s1.impair.json")
    command = builtin_command(launch)
    assert [a for a in command if a.startswith("--impair")] == [
        "--impair=1:both:loss=2", "--impair=2:both:loss=2", "--impair-stats"]
    assert command[command.index("--impair-stats") + 1] == "/o/s1.impair.json"
    with pytest.raises(ValueError, match="bmv2 has no --impair"):
        bmv2_command(launch)
    plain = SwitchLaunch("s1", 0, 9559, ((1, "s1-eth1"),))
    assert not any(a.startswith("--impair") for a in builtin_command(plain))


def test_topology_json_impairment_object(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({
        "hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}, "s2": {}},
        "links": [["h1", "s1-p1", {"loss": 2, "dup": 1}], ["h2", "s2-p1"],
                  ["s1-p2", "s2-p2", "5ms", 100, {"reorder": 10, "jitter": 0.5}]]}))
    spec = parse_topology(str(path))
    l1, l2, l3 = spec.links
    assert (l1.loss_pct, l1.dup_pct, l1.reorder_pct, l1.delay_ms) == (2, 1, None, None)
    assert impair_settings(l2) is None
    assert (l3.delay_ms, l3.bw, l3.reorder_pct, l3.jitter_ms) == (5, 100, 10, 0.5)
    assert switch_impair_args(spec) == {
        "s1": ("1:both:loss=2,dup=1", "2:tx:reorder=10,delay=5,jitter=0.5"),
        "s2": ("2:tx:reorder=10,delay=5,jitter=0.5",)}


@pytest.mark.parametrize("item, message", [
    ({"corrupt": 1}, "unsupported link key 'corrupt'"),
    ({"loss": 120}, "loss must be between 0 and 100"),
    ({"dup": "2"}, "dup must be a number"),
])
def test_topology_json_bad_impairment(tmp_path, item, message):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"hosts": {"h1": {}}, "switches": {"s1": {}},
                                "links": [["h1", "s1-p1", item]]}))
    with pytest.raises(ValueError, match=message):
        parse_topology(str(path))


def test_link_arguments_fill_every_link():
    parser = argparse.ArgumentParser()
    add_link_arguments(parser)
    args = parser.parse_args(["--loss", "5", "--dup", "2", "--reorder", "5", "--jitter", "1"])
    links = FabricRequest.from_options(argparse.Namespace(topo="star:2", **vars(args))).links
    spec = parse_topology("star:2").with_link_defaults(**links.spec_defaults())
    assert {(l.loss_pct, l.dup_pct, l.reorder_pct, l.jitter_ms, l.delay_ms, l.bw)
            for l in spec.links} == {(5, 2, 5, 1, None, None)}
    with pytest.raises(ValueError, match="reorder must be between 0 and 100"):
        parse_topology("star:2").with_link_defaults(reorder_pct=101)


def test_counters_summed_over_ports_and_directions():
    stats = {"final": True, "ports": {
        "1": {"rx": {"frames": 10, "dropped": 1, "duplicated": 2, "reordered": 0, "delayed": 3},
              "tx": {"frames": 9, "dropped": 4, "duplicated": 0, "reordered": 1, "delayed": 0}},
        "2": {"tx": {"frames": 5, "dropped": 0, "duplicated": 1, "reordered": 2, "delayed": 5}}}}
    counters = counters_of(stats)
    assert counters == {"dropped": 5, "duplicated": 3, "reordered": 3, "delayed": 8}
    assert sum_counters({"s1": counters, "s2": counters})["delayed"] == 16
    assert stats_path("/out/logs/", "s2") == "/out/logs/s2.impair.json"


def test_fresh_stats_waits_for_a_file_written_after(tmp_path):
    import threading
    import time
    from topologies.impairment import fresh_stats
    path = tmp_path / "s1.impair.json"
    path.write_text(json.dumps({"final": False, "time": 100.0, "ports": {}}))
    assert fresh_stats(str(path))["time"] == 100.0
    assert fresh_stats(str(path), written_after=200.0, timeout_s=0.2)["time"] == 100.0
    later = threading.Timer(0.3, lambda: path.write_text(
        json.dumps({"final": False, "time": 250.0, "ports": {}})))
    later.start()
    try:
        assert fresh_stats(str(path), written_after=200.0, timeout_s=5)["time"] == 250.0
    finally:
        later.join()
    with pytest.raises(ValueError, match="cannot read impairment stats"):
        fresh_stats(str(tmp_path / "missing.json"))


def test_longest_round_trip():
    from topologies.impairment import longest_round_trip_ms
    assert longest_round_trip_ms(parse_topology("fattree:4")) == 0
    # host - leaf - spine - leaf - host: 4 links of 10 + 1 ms, there and back
    spec = parse_topology("leafspine:2,2,2").with_link_defaults(delay_ms=10, jitter_ms=1)
    assert longest_round_trip_ms(spec) == 88
    spec = parse_topology("star:3").with_link_defaults(delay_ms=5)
    spec.links[2] = Link("h3", None, "s1", 3, delay_ms=50)
    assert longest_round_trip_ms(spec) == 110
