"""Flowlet switching in p4src/flowlet.p4, exact packets in -> exact packets out, on fattree:4
(20 in-process switches programmed by the controller) with a clock the test sets.

With a flowlet gap, a pause longer than the gap starts a new flowlet, which ECMP places
anew (forwarding.p4 hashes the flowlet number with the 5-tuple); packets closer together
stay on their flowlet's path.  The state is checked cell by cell against a crc32 computed
here, and both back ends must agree packet for packet and register for register.  What it
is for: four elephant flows -- a ring's four inter-pod hops -- spread their bytes over the
four core switches within 30% of each other, which per-flow ECMP cannot promise.
"""

import ipaddress
import random
import struct
import zlib
from collections import Counter

import pytest

from controller import Flowlets
from controller.topology import TopologyGraph
from p4src_harness import fabric, program
from p4switch.targets import c_refusal
from skip_or_fail import skip_or_fail
from test_p4src_ecmp import tcp_frame, walk

GAP_US = 100
FLOWLET_CELLS = 4096          # p4src/headers.p4
CORES = ("s1", "s2", "s3", "s4")     # fattree:4 lists its four cores first
BACKENDS = ["python", "c"]


class Clock:
    """The switches' microsecond clock (ingress_global_timestamp), moved by the test."""

    def __init__(self, now=1_000):
        self.now = now

    def __call__(self):
        return self.now


def needs(backend):
    if backend == "c":
        skip_or_fail(c_refusal(program()))


def cell_of(src, dst, sport, dport, protocol=6):
    """flowlet.p4's cell: crc32 (zlib's) of srcAddr, dstAddr, protocol, ports, mod cells."""
    key = struct.pack("!IIBHH", int(ipaddress.IPv4Address(src)),
                      int(ipaddress.IPv4Address(dst)), protocol, sport, dport)
    return zlib.crc32(key) % FLOWLET_CELLS


def core_of(path):
    (core,) = set(CORES).intersection(path)
    return core


def send(spec, graph, switches, clock, src, dst, sport, at_us, seq):
    clock.now = at_us
    return walk(spec, graph, switches, src, dst, tcp_frame(src, dst, sport, 5001, seq))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pause_longer_than_the_gap_starts_a_new_flowlet_and_a_shorter_one_does_not(backend):
    needs(backend)
    clock = Clock()
    spec, switches, _ = fabric("fattree:4", flowlets=Flowlets(GAP_US), clock=clock,
                               backend=backend)
    graph = TopologyGraph(spec)
    src, dst, sport = spec.host("h1"), spec.host("h13"), 40000
    edge = spec.host_attachment("h1")[0]
    cell = cell_of(src.ip, dst.ip, sport, 5001)
    numbers = switches[edge].register("flowlet_number")
    seen = switches[edge].register("flowlet_seen_us")
    t, seq, paths = 10_000, 1, []
    for flowlet in range(1, 41):
        for _ in range(5):                       # 5 packets GAP_US / 2 apart: one flowlet
            paths.append(send(spec, graph, switches, clock, src, dst, sport, t, seq))
            assert (numbers.read(cell), seen.read(cell)) == (flowlet, t)
            t, seq = t + GAP_US // 2, seq + 1000
        assert len(set(map(tuple, paths[-5:]))) == 1      # a flowlet keeps its path
        t += GAP_US + 1                          # a pause just over the gap
    # the flowlets were placed anew: more than one core over 40 flowlets
    cores = Counter(core_of(p) for p in paths[::5])
    assert len(cores) >= 3, cores
    # exactly GAP_US apart is no new flowlet (the pause must be longer than the gap)
    before = numbers.read(cell)
    last = seen.read(cell)
    send(spec, graph, switches, clock, src, dst, sport, last + GAP_US, seq)
    assert numbers.read(cell) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_a_gap_flows_keep_one_path_and_the_flowlet_state_is_untouched(backend):
    needs(backend)
    clock = Clock()
    spec, switches, _ = fabric("fattree:4", clock=clock, backend=backend)
    graph = TopologyGraph(spec)
    src, dst = spec.host("h1"), spec.host("h13")
    paths = {tuple(send(spec, graph, switches, clock, src, dst, 40000, 10_000 + 1000 * i,
                        1 + i)) for i in range(30)}
    assert len(paths) == 1
    for name in (s.name for s in spec.switches):
        for register in ("flowlet_number", "flowlet_seen_us", "flowlet_bytes"):
            cells = switches[name].register(register)
            assert not any(cells.read(i) for i in range(FLOWLET_CELLS)), (name, register)


def ring_crossings(spec):
    """A ring over h1..h16 crosses pods from h4, h8, h12 and h16 (to h5, h9, h13, h1)."""
    return [(spec.host(f"h{a}"), spec.host(f"h{a % 16 + 1}"), 41000 + a)
            for a in (4, 8, 12, 16)]


def core_bytes(flowlets, backend, pause_us=500):
    """{core: bytes} of the ring's four inter-pod streams, each 200 bursts of 8 full-size
    segments 10 us apart with pause_us pauses between the bursts."""
    clock = Clock()
    spec, switches, _ = fabric("fattree:4", flowlets=flowlets, clock=clock, backend=backend)
    graph = TopologyGraph(spec)
    streams = [(src, dst, tcp_frame(src, dst, sport, 5001) + bytes(1400))
               for src, dst, sport in ring_crossings(spec)]
    sent = Counter()
    t = 10_000
    for _ in range(200):
        for src, dst, frame in streams:
            for i in range(8):
                clock.now = t + 10 * i
                sent[core_of(walk(spec, graph, switches, src, dst, frame))] += len(frame)
        t += pause_us
    print(f"\n{backend}, {flowlets}: bytes per core {dict(sent)}")
    return sent


@pytest.mark.parametrize("backend", BACKENDS)
def test_flowlets_spread_four_elephant_streams_over_the_cores_within_30_percent(backend):
    needs(backend)
    per_flow = core_bytes(Flowlets(), backend)
    stream = sum(per_flow.values()) // 4
    # per flow: whole streams per core (here the hash puts them on fewer than four cores)
    assert all(sent % stream == 0 for sent in per_flow.values()), per_flow
    flowlets = core_bytes(Flowlets(GAP_US), backend)
    assert sum(flowlets.values()) == 4 * stream
    assert sorted(flowlets) == list(CORES)
    assert max(flowlets.values()) <= 1.3 * min(flowlets.values()), flowlets


def test_both_back_ends_agree_on_every_packet_and_every_flowlet_cell():
    needs("c")
    rng = random.Random(7)
    clocks = {b: Clock() for b in BACKENDS}
    nets = {b: fabric("fattree:4", flowlets=Flowlets(GAP_US, 9000), clock=clocks[b], backend=b)
            for b in BACKENDS}
    spec = nets["python"][0]
    hosts = [spec.host(f"h{i}") for i in range(1, 17)]
    t = 10_000
    for _ in range(600):
        src, dst = rng.sample(hosts, 2)
        sport = rng.choice((40000, 40001, 40002))
        t += rng.choice((1, 20, GAP_US, GAP_US + 1, 5 * GAP_US))
        frame = tcp_frame(src, dst, sport, 5001, rng.randrange(1, 2**31))
        switch, port = spec.host_attachment(src.name)
        outputs = set()
        for backend in BACKENDS:
            clocks[backend].now = t
            outputs.add(tuple(nets[backend][1][switch].process_packet(port, frame)))
        assert len(outputs) == 1
    for s in spec.switches:
        for register in ("flowlet_number", "flowlet_seen_us", "flowlet_bytes"):
            cells = [nets[b][1][s.name].register(register) for b in BACKENDS]
            assert [cells[0].read(i) for i in range(FLOWLET_CELLS)] == \
                [cells[1].read(i) for i in range(FLOWLET_CELLS)], (s.name, register)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_byte_limit_cuts_a_stream_without_pauses_into_flowcells(backend):
    needs(backend)
    clock = Clock()
    spec, switches, _ = fabric("fattree:4", flowlets=Flowlets(0, 10_000), clock=clock,
                               backend=backend)
    graph = TopologyGraph(spec)
    src, dst, sport = spec.host("h1"), spec.host("h13"), 40000
    edge = spec.host_attachment("h1")[0]
    cell = cell_of(src.ip, dst.ip, sport, 5001)
    registers = [switches[edge].register(name)
                 for name in ("flowlet_number", "flowlet_bytes", "flowlet_seen_us")]
    frame = tcp_frame(src, dst, sport, 5001) + bytes(1400)      # 1,454 bytes
    cores = Counter()
    for i in range(60):              # one packet a microsecond: never a pause
        clock.now = 5_000 + i
        path = walk(spec, graph, switches, src, dst, frame)
        # 6 packets (8,724 bytes) fit in 10,000 bytes, the 7th starts flowcell n + 1
        assert [r.read(cell) for r in registers] == [i // 6, (i % 6 + 1) * len(frame),
                                                     5_000 + i]
        cores[core_of(path)] += 1
    # 10 flowcells of 6 packets, each on one path, and consecutive ones take the cores in turn
    assert len(cores) == 4 and all(n % 6 == 0 for n in cores.values()), cores


@pytest.mark.parametrize("backend", BACKENDS)
def test_flowcells_spread_streams_that_never_pause_evenly(backend):
    needs(backend)
    # bursts back to back (10 us apart, never more than a 100 us gap): one flowlet each
    # stream with a gap alone, even flowcells with a byte limit
    gap_only = core_bytes(Flowlets(GAP_US), backend, pause_us=80)
    assert sum(1 for sent in gap_only.values() if sent) <= 4
    cells = core_bytes(Flowlets(GAP_US, 64 * 1024), backend, pause_us=80)
    assert sorted(cells) == list(CORES)
    assert max(cells.values()) <= 1.3 * min(cells.values()), cells
