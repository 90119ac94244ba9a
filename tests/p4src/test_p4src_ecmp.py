"""ECMP in p4src/forwarding.p4, exact packets in -> exact packets out.

ecmp.stf on both switch back ends (two flows to one prefix leave on different ports, one flow
always on the same one), the hash it relies on recomputed independently, and the whole
fattree:4 (20 in-process switches programmed by the controller's AggregationManager): TCP
flows between two pods follow one path each, and spread over all four core switches.
"""

import dataclasses
import ipaddress
import os
from collections import Counter

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from controller.entries import route_writes
from controller.manager import install_routes
from controller.topology import TopologyGraph
from p4src_harness import SwitchApiConnection, fabric, program
from p4switch import Switch, stf
from p4switch.targets import c_refusal
from skip_or_fail import skip_or_fail
from p4switch.runtime.algorithms import crc16
from topologies.spec import parse_topology

HERE = os.path.dirname(os.path.abspath(__file__))
ECMP_STF = os.path.join(HERE, "ecmp.stf")


def ecmp_index(src, dst, protocol, sport, dport, size):
    """forwarding.p4's choice: crc16 of the 5-tuple, 16 bits, modulo the group's size."""
    fields = [(int(ipaddress.IPv4Address(src)), 32), (int(ipaddress.IPv4Address(dst)), 32),
              (protocol, 8), (sport, 16), (dport, 16)]
    return (crc16(fields) & 0xFFFF) % size


def run_stf(backend):
    compiled = program(k=1)
    with open(ECMP_STF) as f:
        commands = stf.parse_stf(f.read(), ECMP_STF)
    return stf.StfRunner(Switch(compiled, backend=backend), compiled, ECMP_STF).run(commands)


@pytest.mark.parametrize("backend", ["python", "c"])
def test_ecmp_stf_passes(backend):
    if backend == "c":
        skip_or_fail(c_refusal(program(k=1)))
    result = run_stf(backend)
    assert result.passed, "\n".join(result.failures)


def test_ecmp_stf_sends_two_flows_two_ways_and_one_flow_one_way():
    with open(ECMP_STF) as f:
        commands = stf.parse_stf(f.read(), ECMP_STF)
    pairs = [(c, e) for c, e in zip(commands, commands[1:])
             if isinstance(c, stf.PacketCmd) and isinstance(e, stf.ExpectCmd)]
    by_flow = {}
    for packet, expect in pairs:
        ip = Ether(bytes(packet.data))[IP]
        flow = (ip.src, ip.dst, ip.proto, ip.sport, ip.dport)
        by_flow.setdefault(flow, []).append(expect.port)
    flow_a = ("10.0.0.1", "10.0.0.9", 6, 40000, 5001)
    flow_b = ("10.0.0.1", "10.0.0.9", 6, 40001, 5001)
    assert by_flow[flow_a] == [2, 2, 2, 2]
    assert by_flow[flow_b] == [3]
    # the ports are the hash's, not the STF's say-so: index 0 -> member 2, 1 -> member 3
    assert [ecmp_index(*flow_a, 2), ecmp_index(*flow_b, 2)] == [0, 1]
    assert ecmp_index("10.0.0.1", "10.0.0.9", 17, 40001, 5001, 2) == 1


def tcp_frame(src, dst, sport, dport, seq=1):
    return bytes(Ether(src="02:00:0a:00:00:01", dst="02:00:0a:00:00:02")
                 / IP(src=src.ip, dst=dst.ip, id=1, ttl=64)
                 / TCP(sport=sport, dport=dport, seq=seq, flags="A") / b"gradient")


def walk(spec, graph, switches, src, dst, frame):
    """The switches a frame from host `src` passes until it reaches host `dst`; the frame
    must arrive unchanged, one copy."""
    switch, port = spec.host_attachment(src.name)
    path = []
    while True:
        path.append(switch)
        out = switches[switch].process_packet(port, frame)
        assert len(out) == 1, (path, out)
        (egress, data), = out
        assert data == frame
        neighbour = next(n for n in graph.graph.neighbors(switch)
                         if graph.port_towards(switch, n) == egress)
        if not graph.is_switch(neighbour):
            assert neighbour == dst.name, path
            return path
        port, switch = graph.port_towards(neighbour, switch), neighbour


def core_counts(spec, switches, flows):
    """{core switch: flows through it} for (src, dst, sport) flows, each sent twice (with
    other sequence numbers) and checked to take the same path both times."""
    graph = TopologyGraph(spec)
    cores = {s.name for s in spec.switches[:4]}          # fattree:4 lists its 4 cores first
    counts = Counter()
    for src, dst, sport in flows:
        first = walk(spec, graph, switches, src, dst, tcp_frame(src, dst, sport, 5001))
        again = walk(spec, graph, switches, src, dst, tcp_frame(src, dst, sport, 5001, 9999))
        assert first == again
        (core,) = cores.intersection(first)
        counts[core] += 1
    return counts


def interpod_flows(spec):
    """Pod 0's hosts to pod 3's, 64 source ports each (256 flows, ports spread like a
    kernel's ephemeral ones)."""
    return [(spec.host(f"h{a}"), spec.host(f"h{b}"), 32768 + 433 * i)
            for a, b in zip(range(1, 5), range(13, 17)) for i in range(64)]


def test_fattree_flows_keep_one_path_and_spread_over_all_four_cores():
    spec, switches, _ = fabric("fattree:4")
    counts = core_counts(spec, switches, interpod_flows(spec))
    assert sorted(counts) == ["s1", "s2", "s3", "s4"]
    assert all(48 <= n <= 80 for n in counts.values()), counts     # 64 each if even


def test_without_per_tier_weights_the_hash_polarises_onto_two_cores():
    """Why the controller weights the aggregation switches' members: with weight 1 on every
    switch, edge and aggregation switch pick with the same hash bit, and half the cores stay
    idle (forwarding.p4)."""
    spec = parse_topology("fattree:4")
    switches = {s.name: Switch(program()) for s in spec.switches}
    routes = [dataclasses.replace(r, weight=1) for r in TopologyGraph(spec).routes()]
    writes = route_writes(routes)
    for name, switch in switches.items():
        install_routes(SwitchApiConnection(switch, program().p4info), writes.on(name))
    counts = core_counts(spec, switches, interpod_flows(spec))
    assert len(counts) == 2 and sum(counts.values()) == 256, counts
