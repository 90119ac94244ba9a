"""parse_topology: node/link counts, addressing and port numbering of every kind, bad input."""

import dataclasses
import json
from collections import Counter

import pytest

from contracts.wire import SERVICE_IP
from topologies.spec import (Host, Link, Switch, TopologySpec, parse_topology,
                             validate)


def switch_ports(spec):
    """{switch: [ports]} over all links."""
    ports = {s.name: [] for s in spec.switches}
    for link in spec.links:
        for node, port in ((link.node1, link.port1), (link.node2, link.port2)):
            if node in ports:
                ports[node].append(port)
    return ports


def assert_ports_unique_and_dense(spec):
    for switch, ports in switch_ports(spec).items():
        assert len(ports) == len(set(ports)), switch
        assert sorted(ports) == list(range(1, len(ports) + 1)), switch


@pytest.mark.parametrize("text, hosts, switches, links", [
    ("star:4", 4, 1, 4),
    ("star:1", 1, 1, 1),
    ("leafspine:2,1,4", 8, 3, 8 + 2),
    ("leafspine:4,2,3", 12, 6, 12 + 8),
    ("fattree:4", 16, 20, 16 + 16 + 16),
    ("fattree:2", 2, 5, 2 + 2 + 2),
    ("fattree:6", 54, 45, 54 + 54 + 54),
    ("tree:1,3", 3, 1, 3),
    ("tree:2,2", 4, 3, 6),
    ("tree:3,3", 27, 13, 27 + 12),
])
def test_counts_and_ports(text, hosts, switches, links):
    spec = parse_topology(text)
    assert (len(spec.hosts), len(spec.switches), len(spec.links)) == (hosts, switches, links)
    assert spec.kind == text.split(":")[0]
    assert_ports_unique_and_dense(spec)
    validate(spec)


def test_addressing_and_ids():
    spec = parse_topology("star:300")
    assert spec.hosts[0] == Host("h1", "10.0.0.1", "02:00:0a:00:00:01")
    assert spec.hosts[253].ip == "10.0.0.254"
    assert spec.hosts[254] == Host("h255", "10.0.1.1", "02:00:0a:00:01:01")
    fat = parse_topology("fattree:4")
    assert [s.device_id for s in fat.switches] == list(range(20))
    assert [s.grpc_port for s in fat.switches] == list(range(9559, 9579))
    assert fat.switches[0] == Switch("s1", 0, 9559)


def test_star_host_i_on_port_i():
    spec = parse_topology("star:5")
    assert [spec.host_attachment(f"h{i}") for i in range(1, 6)] == [("s1", i) for i in range(1, 6)]


def test_fattree_structure():
    spec = parse_topology("fattree:4")
    degree = Counter()
    for link in spec.links:
        degree[link.node1] += 1
        degree[link.node2] += 1
    # every switch of a 4-ary fat tree has exactly 4 ports in use
    assert all(degree[s.name] == 4 for s in spec.switches)
    # h1, h2 on the first edge switch (s7, after 4 cores and pod 0's 2 aggregation switches)
    assert spec.host_attachment("h1") == ("s7", 1)
    assert spec.host_attachment("h2") == ("s7", 2)
    assert spec.host_attachment("h3") == ("s8", 1)
    # core switches reach pod p on port p
    core1 = sorted(l.end_of("s1")[0:2] for l in spec.links_of("s1"))
    assert core1 == [(1, "s5"), (2, "s9"), (3, "s13"), (4, "s17")]


def test_leafspine_ports():
    spec = parse_topology("leafspine:2,2,3")
    # leaf s1: hosts on 1..3, spine s3 on 4, spine s4 on 5; spine port i -> leaf i
    assert Link("s1", 4, "s3", 1) in spec.links
    assert Link("s1", 5, "s4", 1) in spec.links
    assert Link("s2", 5, "s4", 2) in spec.links
    assert spec.host_attachment("h4") == ("s2", 1)


def test_tree_ports():
    spec = parse_topology("tree:2,3")
    assert Link("s2", 4, "s1", 1) in spec.links
    assert Link("s4", 4, "s1", 3) in spec.links
    assert spec.host_attachment("h9") == ("s4", 3)


def test_same_text_gives_same_spec():
    assert parse_topology("fattree:4") == parse_topology("fattree:4")


def test_with_link_defaults_keeps_own_values():
    spec = TopologySpec("json", [Host("h1", "10.0.0.1", "02:00:0a:00:00:01")],
                        [Switch("s1", 0, 9559), Switch("s2", 1, 9560)],
                        [Link("h1", None, "s1", 1), Link("s1", 2, "s2", 1, delay_ms=5.0)])
    out = spec.with_link_defaults(bw=10, delay_ms=1, loss_pct=0.5)
    assert out.links[0] == Link("h1", None, "s1", 1, 10, 1, 0.5)
    assert out.links[1] == Link("s1", 2, "s2", 1, 10, 5.0, 0.5)
    assert spec.links[0].bw is None


@pytest.mark.parametrize("text, message", [
    ("", "empty topology"),
    ("star:0", "at least 1"),
    ("star:x", "expected star:N"),
    ("star:1,2", "expected star:N"),
    ("leafspine:2,1", "expected leafspine:LEAVES,SPINES,HOSTS_PER_LEAF"),
    ("fattree:3", "K must be even"),
    ("tree:2", "expected tree:DEPTH,FANOUT"),
    ("mesh:3", "expected star:N, leafspine"),
    ("star:600", "port 511 outside 1..510"),
    ("fattree:100", "more than"),
    ("/nonexistent/topo.json", "cannot read topology file"),
])
def test_bad_strings(text, message):
    with pytest.raises(ValueError) as info:
        parse_topology(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def write(tmp_path, data):
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def test_json_tutorial_layout(tmp_path):
    path = write(tmp_path, {
        "hosts": {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
                         "commands": ["ip route show"]},
                  "h2": {"ip": "10.0.2.2/24", "mac": "08:00:00:00:02:22"},
                  "h3": {}},
        "switches": {"s1": {}, "s2": {}},
        "links": [["h1", "s1-p1"], ["s2-p2", "h2"], ["s1-p2", "s2-p1", "5ms", 100],
                  ["h3", "s1"]],
    })
    spec = parse_topology(path)
    assert spec.kind == "json"
    assert spec.hosts == [Host("h1", "10.0.1.1", "08:00:00:00:01:11", ("ip route show",)),
                          Host("h2", "10.0.2.2", "08:00:00:00:02:22"),
                          Host("h3", "10.0.0.3", "02:00:0a:00:00:03")]
    assert spec.switches == [Switch("s1", 0, 9559), Switch("s2", 1, 9560)]
    assert spec.links == [Link("h1", None, "s1", 1), Link("h2", None, "s2", 2),
                          Link("s1", 2, "s2", 1, bw=100.0, delay_ms=5.0),
                          Link("h3", None, "s1", 3)]  # bare end: next port not named elsewhere


@pytest.mark.parametrize("data, message", [
    ("{not json", "invalid JSON"),
    ([], "expected a JSON object"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": [["h1", "s9-p1"]]},
     "unknown node 's9-p1'"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {"runtime_json": "x.json"}}, "links": []},
     "unsupported key 'runtime_json'"),
    ({"hosts": {"h1": {"ip": "192.168.0.1"}}, "switches": {"s1": {}}, "links": [["h1", "s1"]]},
     "outside 10.0.0.0/16"),
    ({"hosts": {"h1": {"ip": SERVICE_IP}}, "switches": {"s1": {}}, "links": [["h1", "s1"]]},
     "reserved"),
    ({"hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}},
      "links": [["h1", "s1-p1"], ["h2", "s1-p1"]]}, "port 1 used by two links"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": []}, "h1 has 0 links"),
    ({"hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}}, "links": [["h1", "h2"]]},
     "linked directly"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": [["h1", "s1", "fast"]]},
     "bad latency"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": [["h1", "s1", "1ms", -3]]},
     "bad bandwidth"),
    ({"hosts": {"h1": {}}, "switches": {}, "links": []}, "at least one switch"),
])
def test_bad_json(tmp_path, data, message):
    with pytest.raises(ValueError) as info:
        parse_topology(write(tmp_path, data))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_static_arp_commands_fit_a_pty_line_and_cover_every_address():
    """Mininet's pty cuts lines beyond 4,095 bytes: a 100-host star's entries are sent in
    several commands, each short enough, together naming every other host and the service
    address exactly once."""
    from topologies.net import static_arp_commands
    spec = parse_topology("star:100")
    commands = static_arp_commands(spec, "h1")
    assert len(commands) == 4 and all(len(c) < 4095 for c in commands)
    named = [part.split()[3] for c in commands for part in c.split(" && ")]
    assert named == [h.ip for h in spec.hosts if h.name != "h1"] + [SERVICE_IP]


def test_is_host_follows_changes_of_the_host_list():
    spec = parse_topology("star:2")
    assert spec.is_host("h1") and not spec.is_host("s1") and not spec.is_host("h3")
    spec.hosts.append(dataclasses.replace(spec.hosts[0], name="h3"))
    assert spec.is_host("h3")
    spec.hosts = spec.hosts[1:]
    assert not spec.is_host("h1") and spec.is_host("h2")
