"""The worker's protocol engine (hosts/engine.py) and its UDP transport (hosts/worker.py).

The switch here is `ReferenceSwitch`, a TEST DOUBLE: a plain-Python model of the switch
side of docs/design.md's protocol (one root switch, SwitchML's per-slot-version bitmap,
saturating adds, max of the exponent field).  It is not the real p4src program; the last
tests of this file drive the engines through the real p4src program in the in-process
p4switch (`P4Fabric`), with the same fault injection (`LossyNetwork`: loss, duplication,
reordering, late delivery).
"""

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from hosts import quantize
from hosts.engine import (AggregationEngine, AggregationStalled, BlockFloatSchedule,
                          EngineConfig, Int32Schedule, make_schedule)
from hosts.protocol import (MSG_CONTRIBUTION, MSG_RESULT, AggHeader, AggPacket,
                            ProtocolError, worker_port)

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---- test double: the switch ------------------------------------------------------------
@dataclass
class Cell:
    seen: int = 0
    count: int = 0
    values: np.ndarray | None = None
    exponent: int = 0
    overflow: int = 0


@dataclass
class ReferenceSwitch:
    """TEST DOUBLE of the aggregation switch (see the module docstring).

    receive(contributor, payload) -> [(destination, payload)], destination being a
    contributor index (unicast) or "all" (the job's multicast group).
    """

    job_id: int
    fan_in: int
    window: int
    k: int
    cells: dict = field(default_factory=dict)
    dropped: int = 0

    def receive(self, contributor: int, payload: bytes) -> list:
        packet = AggPacket.unpack(payload)
        h = packet.header
        if (h.msg_type != MSG_CONTRIBUTION or h.job_id != self.job_id or h.num_elements != self.k
                or h.contributor != contributor or h.slot >= self.window):
            self.dropped += 1
            return []
        mask = 1 << contributor
        cell = self.cells.setdefault((h.slot, h.version), Cell())
        other = self.cells.setdefault((h.slot, 1 - h.version), Cell())
        other.seen &= ~mask
        if cell.seen & mask:
            if cell.count != 0:
                return []                                    # duplicate, still collecting
            return [(contributor, self._result(h, cell))]     # retransmission: unicast
        cell.seen |= mask
        if cell.count == 0:
            cell.values = packet.values.astype(np.int64)
            cell.exponent, cell.overflow = h.exponent, h.overflow
        else:
            wide = cell.values + packet.values
            clipped = np.clip(wide, INT32_MIN, INT32_MAX)
            cell.overflow |= int(np.any(clipped != wide)) | h.overflow
            cell.values = clipped
            cell.exponent = max(cell.exponent, h.exponent)
        cell.count = (cell.count + 1) % self.fan_in
        if cell.count == 0:
            return [("all", self._result(h, cell))]
        return []

    @staticmethod
    def _result(h: AggHeader, cell: Cell) -> bytes:
        header = AggHeader(msg_type=MSG_RESULT, version=h.version, job_id=h.job_id, slot=h.slot,
                           contributor=h.contributor, chunk_offset=h.chunk_offset,
                           num_elements=h.num_elements, exponent=cell.exponent,
                           overflow=cell.overflow)
        return AggPacket(header, cell.values.astype(np.int32)).pack()


# ---- fault injection ----------------------------------------------------------------------
class LossyNetwork:
    """Delivers packets between engines and the switch double, one at a time, in virtual time.

    Each packet is lost, duplicated or held back until the next timer tick with the given
    probabilities; with `reorder`, the next packet delivered is a random one in flight.
    Time advances only when nothing is in flight, to the engines' earliest deadline.

    Bounded packet lifetime: the protocol (SwitchML's) assumes that a contribution is not
    delivered after its sender has already sent its next round on the same slot (the switch
    would take the old packet for a new contribution to that slot version).  This network
    discards such expired contributions, as a network with a bounded packet lifetime would;
    stale results, in contrast, are delivered, and the engine must ignore them.
    """

    def __init__(self, engines, switch, seed=0, loss=0.0, duplicate=0.0, late=0.0, reorder=False):
        self.engines, self.switch = engines, switch
        self.rng = np.random.default_rng(seed)
        self.loss, self.duplicate, self.late, self.reorder = loss, duplicate, late, reorder
        self.in_flight: list = []
        self.held_back: list = []
        self.newest_round: dict = {}     # (sender, slot) -> (version, chunk offset)
        self.expired = 0
        self.now = 0.0

    def run(self, time_limit=3600.0) -> float:
        for index, engine in enumerate(self.engines):
            self._transmit("up", index, engine.start(self.now))
        while not all(engine.done for engine in self.engines):
            if self.in_flight:
                self._deliver_one()
                continue
            self.in_flight, self.held_back = self.held_back, []
            deadlines = [e.next_deadline() for e in self.engines if e.next_deadline() is not None]
            if not deadlines:
                continue
            self.now = max(self.now, min(deadlines))
            assert self.now < time_limit, "virtual time limit reached"
            for index, engine in enumerate(self.engines):
                self._transmit("up", index, engine.on_timer(self.now))
        return self.now

    def _transmit(self, direction, index, payloads):
        for payload in payloads:
            if direction == "up":
                self.newest_round[index, AggHeader.unpack(payload).slot] = self._round_of(payload)
            draw = self.rng.random()
            if draw < self.loss:
                continue
            copies = 2 if draw < self.loss + self.duplicate else 1
            target = self.held_back if self.rng.random() < self.late else self.in_flight
            target.extend([(direction, index, payload)] * copies)

    def _deliver_one(self):
        position = int(self.rng.integers(len(self.in_flight))) if self.reorder else 0
        direction, index, payload = self.in_flight.pop(position)
        if direction == "down":
            self._transmit("up", index, self.engines[index].on_packet(payload, self.now))
            return
        if self._round_of(payload) != self.newest_round[index, AggHeader.unpack(payload).slot]:
            self.expired += 1
            return
        for destination, result in self.switch.receive(index, payload):
            targets = range(len(self.engines)) if destination == "all" else [destination]
            for target in targets:
                self._transmit("down", target, [result])


    @staticmethod
    def _round_of(payload):
        header = AggHeader.unpack(payload)
        return header.version, header.chunk_offset


def make_engines(inputs, k=8, window=4, job=3, max_retries=12):
    world = len(inputs)
    return [AggregationEngine(make_schedule(data, k, world, window),
                              EngineConfig(job_id=job, contributor=rank, window=window,
                                           timeout_s=0.01, max_timeout_s=0.08,
                                           max_retries=max_retries))
            for rank, data in enumerate(inputs)]


def int_inputs(world, elements, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-2**20, 2**20, size=elements, dtype=np.int32) for _ in range(world)]


def float_inputs(world, elements, seed=0):
    rng = np.random.default_rng(seed)
    # Blocks of very different magnitude, so exponents differ per block and per worker.
    return [(rng.standard_normal(elements) * 2.0 ** rng.integers(-20, 20, size=elements // 8 + 1
                                                                   ).repeat(8)[:elements]
             ).astype(np.float32) for _ in range(world)]


def run_job(inputs, k=8, window=4, **faults):
    engines = make_engines(inputs, k=k, window=window)
    switch = ReferenceSwitch(job_id=3, fan_in=len(inputs), window=window, k=k)
    LossyNetwork(engines, switch, **faults).run()
    return engines


# ---- the engine ---------------------------------------------------------------------------
def test_first_packets_and_slot_reuse_follow_the_design():
    data = np.arange(20, dtype=np.int32)
    engine = make_engines([data, data], k=4, window=2)[0]
    first = [AggPacket.unpack(p) for p in engine.start(0.0)]
    assert [(p.header.slot, p.header.version, p.header.chunk_offset) for p in first] == [(0, 0, 0), (1, 0, 4)]
    assert all(p.header.msg_type == MSG_CONTRIBUTION and p.header.job_id == 3 and
               p.header.contributor == 0 and p.header.num_elements == 4 for p in first)
    assert first[1].values.tolist() == [4, 5, 6, 7]
    result = AggHeader(msg_type=MSG_RESULT, version=0, job_id=3, slot=0, contributor=1,
                       chunk_offset=0, num_elements=4)
    follow_up = engine.on_packet(AggPacket(result, np.array([0, 2, 4, 6], np.int32)).pack(), 0.001)
    (next_packet,) = [AggPacket.unpack(p) for p in follow_up]
    # chunk 2 reuses slot 0 with the other version
    assert (next_packet.header.slot, next_packet.header.version, next_packet.header.chunk_offset) == (0, 1, 8)
    assert next_packet.values.tolist() == [8, 9, 10, 11]


def test_stale_and_foreign_results_are_ignored():
    data = np.arange(8, dtype=np.int32)
    engine = make_engines([data, data], k=4, window=1)[0]
    engine.start(0.0)
    base = dict(msg_type=MSG_RESULT, version=0, job_id=3, slot=0, contributor=0,
                chunk_offset=0, num_elements=4)
    values = np.full(4, 99, np.int32)
    for wrong in ({"version": 1}, {"job_id": 4}, {"chunk_offset": 4}, {"msg_type": MSG_CONTRIBUTION},
                  {"slot": 1}):
        assert engine.on_packet(AggPacket(AggHeader(**{**base, **wrong}), values).pack(), 0.0) == []
    assert engine.on_packet(b"short", 0.0) == []
    assert engine.stats.packets_ignored == 6 and engine.progress == (0, 2)
    engine.on_packet(AggPacket(AggHeader(**base), values).pack(), 0.0)
    assert engine.progress == (1, 2)


@pytest.mark.parametrize("elements,window", [(1, 4), (37, 4), (64, 16), (200, 3)])
def test_int32_sum_is_exact_without_faults(elements, window):
    inputs = int_inputs(3, elements)
    engines = run_job(inputs, window=window)
    expected = np.sum(inputs, axis=0, dtype=np.int64)
    chunks = -(-elements // 8)
    for engine in engines:
        assert engine.result().tolist() == expected.tolist()
        assert engine.stats.packets_sent == chunks and engine.stats.retransmissions == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_int32_sum_is_exact_with_loss_duplication_reordering_and_late_packets(seed):
    inputs = int_inputs(4, 300, seed)
    engines = run_job(inputs, window=5, seed=seed, loss=0.2, duplicate=0.1, late=0.1, reorder=True)
    expected = np.sum(inputs, axis=0, dtype=np.int64)
    for engine in engines:
        assert engine.result().tolist() == expected.tolist()
    assert sum(engine.stats.retransmissions for engine in engines) > 0
    assert sum(engine.stats.packets_ignored for engine in engines) > 0


def assert_within_float_bound(engine, inputs):
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    error = np.abs(engine.result().astype(np.float64) - exact)
    assert np.all(error <= engine.schedule.error_bound())
    return error


@pytest.mark.parametrize("elements,window", [(5, 4), (100, 4), (96, 12), (300, 7)])
def test_float32_block_sum_within_bound_and_packet_count(elements, window):
    inputs = float_inputs(3, elements)
    engines = run_job(inputs, window=window)
    blocks = -(-elements // 8)
    results = [engine.result() for engine in engines]
    for engine, result in zip(engines, results):
        assert_within_float_bound(engine, inputs)
        assert np.array_equal(result, results[0])        # every worker has the same bits
        # piggy-backed exponents: one exponent-only round per slot that is used
        assert engine.stats.packets_sent == blocks + min(blocks, window)


@pytest.mark.parametrize("seed", [4, 5])
def test_float32_with_faults(seed):
    inputs = float_inputs(5, 250, seed)
    engines = run_job(inputs, window=3, seed=seed, loss=0.15, duplicate=0.1, late=0.1, reorder=True)
    for engine in engines:
        assert_within_float_bound(engine, inputs)
    assert sum(engine.stats.retransmissions for engine in engines) > 0


def test_float32_agreed_exponents_are_the_max_over_workers():
    inputs = float_inputs(3, 64, seed=9)
    engines = run_job(inputs, window=2)
    blocks = [quantize.block_exponents(x.reshape(-1, 8)) for x in inputs]
    expected = np.max(blocks, axis=0)
    for engine in engines:
        assert engine.schedule._agreed.tolist() == expected.tolist()


def test_saturating_switch_sets_overflow():
    inputs = [np.full(8, 2**30 + 5, np.int32), np.full(8, 2**30, np.int32)]
    engines = run_job(inputs)
    for engine in engines:
        assert engine.stats.overflow
        assert engine.result().tolist() == [INT32_MAX] * 8


def test_switch_that_never_answers_stalls_with_a_message():
    engine = make_engines(int_inputs(2, 16), window=2, max_retries=3)[0]
    now = 0.0
    engine.start(now)
    with pytest.raises(AggregationStalled, match=r"job 3: no result from the switch for slot 0 "
                                                 r"\(version 0, chunk offset 0\) after 3 retransmissions"):
        for _ in range(100):
            now = engine.next_deadline()
            engine.on_timer(now)
    # backoff 0.01, 0.02, 0.04, then 0.08 before giving up
    assert now == pytest.approx(0.15)
    assert engine.stats.retransmissions == 6


def test_timeout_follows_the_measured_round_trip():
    data = np.arange(32, dtype=np.int32)
    engine = make_engines([data, data], k=8, window=1)[0]
    engine.start(0.0)
    assert engine.next_deadline() == pytest.approx(0.01)      # the configured minimum

    def answer(offset, now):
        header = AggHeader(msg_type=MSG_RESULT, version=(offset // 8) % 2, job_id=3, slot=0,
                           contributor=1, chunk_offset=offset, num_elements=8)
        return engine.on_packet(AggPacket(header, np.zeros(8, np.int32)).pack(), now)

    answer(0, 0.005)                    # rtt 5 ms: srtt 5 ms, rttvar 2.5 ms -> 15 ms
    assert engine.next_deadline() == pytest.approx(0.005 + 0.015)
    engine.on_timer(0.020)              # retransmitted: this round is not sampled
    assert engine.next_deadline() == pytest.approx(0.020 + 0.030)
    answer(8, 0.040)
    assert engine.next_deadline() == pytest.approx(0.040 + 0.015)
    answer(16, 0.041)                   # rtt 1 ms: srtt 4.5 ms, rttvar 2.875 ms -> 16 ms
    assert engine.next_deadline() == pytest.approx(0.041 + 0.0045 + 4 * 0.002875)
    assert engine.timer.timeout <= 0.08                        # capped by max_timeout_s


def test_exponent_below_own_is_a_protocol_error():
    data = np.full(8, 100.0, np.float32)
    engine = make_engines([data, data], window=1)[0]
    (packet,) = [AggPacket.unpack(p) for p in engine.start(0.0)]
    assert packet.header.exponent == 127 + 7    # 100 < 2**7
    result = AggHeader(msg_type=MSG_RESULT, version=0, job_id=3, slot=0, contributor=0,
                       chunk_offset=0, num_elements=8, exponent=127)
    with pytest.raises(ProtocolError, match="below this worker's 134"):
        engine.on_packet(AggPacket(result, np.zeros(8, np.int32)).pack(), 0.0)


def test_bad_configuration_is_rejected():
    schedule = Int32Schedule(np.zeros(4, np.int32), 4)
    with pytest.raises(ValueError, match="contributor must be in 0..31"):
        AggregationEngine(schedule, EngineConfig(job_id=0, contributor=32))
    with pytest.raises(ValueError, match="window must be"):
        AggregationEngine(schedule, EngineConfig(job_id=0, contributor=0, window=0))
    with pytest.raises(ValueError, match="unsupported dtype"):
        make_schedule(np.zeros(4, np.float64), 4, 2, 2)
    assert isinstance(make_schedule(np.zeros(4, np.float32), 4, 2, 2), BlockFloatSchedule)


# ---- the UDP transport and the CLI over loopback ------------------------------------------
class UdpSwitchBridge(threading.Thread):
    """Serves a switch (ReferenceSwitch or P4Fabric: receive(rank, payload)) on a loopback
    UDP socket to `members` workers; worker r lives at 127.0.0.(10 + r).

    Drops every `drop_every`-th contribution so the workers' retransmission path runs.
    """

    def __init__(self, switch, members: int, port: int, drop_every: int = 0):
        super().__init__(daemon=True)
        self.switch, self.members, self.port, self.drop_every = switch, members, port, drop_every
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.address = self.sock.getsockname()
        self.received = 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                payload, (ip, _) = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            self.received += 1
            if self.drop_every and self.received % self.drop_every == 0:
                continue
            contributor = int(ip.rsplit(".", 1)[1]) - 10
            for destination, result in self.switch.receive(contributor, payload):
                targets = range(self.members) if destination == "all" else [destination]
                for target in targets:
                    self.sock.sendto(result, (f"127.0.0.{10 + target}", self.port))

    def stop(self):
        self.stopping.set()
        self.join()
        self.sock.close()


def worker_command(job, rank, world, switch_address, *extra, k=16):
    return [sys.executable, "-m", "hosts", "worker", "--job", str(job), "--rank", str(rank),
            "--world", str(world), "--bind", f"127.0.0.{10 + rank}",
            "--switch-ip", switch_address[0], "--switch-port", str(switch_address[1]),
            "--k", str(k), "--window", "4", "--timeout-ms", "20", *extra]


def run_workers(commands):
    """Start the worker commands together; [(exit status, stderr)]."""
    processes = [subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True)
                 for command in commands]
    return [(p.wait(timeout=120), p.stderr.read()) for p in processes]


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_workers_over_loopback_udp(tmp_path, dtype):
    job, world = 5000 + os.getpid() % 20000, 3
    switch = UdpSwitchBridge(ReferenceSwitch(job_id=job, fan_in=world, window=4, k=16), world,
                             worker_port(job), drop_every=7)
    switch.start()
    try:
        outcomes = run_workers([worker_command(job, rank, world, switch.address,
                                               "--elements", "1000", "--dtype", dtype,
                                               "--seed", "11",
                                               "--json", str(tmp_path / f"r{rank}.json"),
                                               "--output", str(tmp_path / f"r{rank}.npy"))
                                for rank in range(world)])
    finally:
        switch.stop()
    assert outcomes == [(0, "")] * world
    from hosts.vectors import Reference
    reference = Reference.from_seed(11, world, 1000, np.dtype(dtype))
    for rank in range(world):
        report = json.loads((tmp_path / f"r{rank}.json").read_text())
        assert report["correct"] is True and report["overflow"] is False
        assert (report["job"], report["rank"], report["world"], report["dtype"]) == (job, rank, world, dtype)
        assert report["packets_sent"] == report["retransmissions"] + (63 if dtype == "int32" else 67)
        assert report["bytes_sent"] == report["packets_sent"] * (16 + 4 * 16)
        assert report["packets_received"] >= 63
        result = np.load(tmp_path / f"r{rank}.npy")
        if dtype == "int32":
            assert result.tolist() == reference.total.tolist()
        else:
            assert np.abs(result - reference.total).max() == report["max_abs_err"]
            assert 0 < report["max_abs_err"] <= report["error_bound"]
    assert sum(json.loads((tmp_path / f"r{r}.json").read_text())["retransmissions"]
               for r in range(world)) > 0


# ---- the real p4src program in the in-process p4switch ------------------------------------
P4_K, P4_SLOTS = 8, 32


def p4src_harness():
    """tests/p4src/p4src_harness.py: p4src compiled by p4switch, installed by the controller's
    AggregationManager (it skips, naming what p4switch lacks, while p4switch cannot run it)."""
    if "p4src_harness" not in sys.modules:
        path = os.path.join(REPO, "tests", "p4src", "p4src_harness.py")
        spec = importlib.util.spec_from_file_location("p4src_harness", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["p4src_harness"] = module
    return sys.modules["p4src_harness"]


class P4Fabric:
    """The switches of a topology as in-process p4switch Switches running p4src, with one job
    started through the controller's AggregationManager.

    Same interface as ReferenceSwitch: receive(rank, payload) wraps the payload in the
    worker's Ethernet/IPv4/UDP frame, injects it at the worker's switch port, follows frames
    across switch-to-switch links and returns [(rank, payload)] for frames reaching hosts,
    after checking they are addressed to that worker.
    """

    def __init__(self, topology, job_id, window):
        self.spec, self.switches, manager = p4src_harness().fabric(topology, k=P4_K, slots=P4_SLOTS)
        self.hosts = [h.name for h in self.spec.hosts]
        self.plan = manager.start_job(job_id, self.hosts, window)
        self.peer = {}
        for link in self.spec.links:
            self.peer[link.node1, link.port1] = (link.node2, link.port2)
            self.peer[link.node2, link.port2] = (link.node1, link.port1)

    def contributor(self, rank):
        return self.plan.hosts[self.hosts[rank]].contributor

    def receive(self, rank, payload):
        host = self.spec.host(self.hosts[rank])
        attachment = self.plan.hosts[host.name]
        frame = bytes(Ether(src=host.mac, dst="02:00:0a:00:ff:fe")
                      / IP(src=host.ip, dst=attachment.switch_ip)
                      / UDP(sport=worker_port(self.plan.job_id), dport=9100) / payload)
        pending, delivered = [(attachment.switch, attachment.port, frame)], []
        while pending:
            switch, port, data = pending.pop(0)
            for egress, out in self.switches[switch].process_packet(port, data):
                node, node_port = self.peer[switch, egress]
                if node in self.switches:
                    pending.append((node, node_port, out))
                else:
                    delivered.append((self.hosts.index(node), self._payload_for(node, out)))
        return delivered

    def _payload_for(self, host_name, frame):
        host = self.spec.host(host_name)
        parsed = Ether(frame)
        ip, udp = parsed[IP], parsed[UDP]
        assert (parsed.dst, ip.dst, ip.src) == (host.mac, host.ip, "10.0.255.254")
        assert (udp.sport, udp.dport) == (9100, worker_port(self.plan.job_id))
        rebuilt = ip.copy()
        rebuilt.chksum = None
        assert IP(bytes(rebuilt)).chksum == ip.chksum, "IPv4 checksum not updated"
        return bytes(udp.payload)


def p4_engines(fabric, inputs, window):
    world = len(inputs)
    return [AggregationEngine(make_schedule(data, P4_K, world, window),
                              EngineConfig(job_id=fabric.plan.job_id,
                                           contributor=fabric.contributor(rank), window=window,
                                           timeout_s=0.01, max_timeout_s=0.08))
            for rank, data in enumerate(inputs)]


@pytest.mark.parametrize("topology", ["star:3", "leafspine:2,1,2"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_workers_through_the_real_p4_program(topology, dtype):
    fabric = P4Fabric(topology, job_id=7, window=4)
    world = len(fabric.hosts)
    make = int_inputs if dtype == "int32" else float_inputs
    inputs = make(world, 90, seed=21)
    engines = p4_engines(fabric, inputs, window=4)
    LossyNetwork(engines, fabric).run()
    for engine in engines:
        assert engine.stats.retransmissions == 0
        if dtype == "int32":
            assert engine.result().tolist() == np.sum(inputs, axis=0, dtype=np.int64).tolist()
        else:
            assert_within_float_bound(engine, inputs)


@pytest.mark.parametrize("topology", ["star:4", "leafspine:2,1,2"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_real_p4_program_with_loss_duplication_and_reordering(topology, dtype):
    fabric = P4Fabric(topology, job_id=9, window=3)
    make = int_inputs if dtype == "int32" else float_inputs
    inputs = make(len(fabric.hosts), 120, seed=22)
    engines = p4_engines(fabric, inputs, window=3)
    LossyNetwork(engines, fabric, seed=5, loss=0.15, duplicate=0.1, late=0.1, reorder=True).run()
    for engine in engines:
        if dtype == "int32":
            assert engine.result().tolist() == np.sum(inputs, axis=0, dtype=np.int64).tolist()
        else:
            assert_within_float_bound(engine, inputs)
    assert sum(engine.stats.retransmissions for engine in engines) > 0
    assert sum(engine.stats.packets_ignored for engine in engines) > 0


@pytest.mark.parametrize("topology", ["star:2", "leafspine:2,1,1"])
def test_real_p4_program_reports_saturation(topology):
    fabric = P4Fabric(topology, job_id=4, window=2)
    inputs = [np.full(10, 2**30 + 5, np.int32), np.full(10, 2**30, np.int32)]
    engines = p4_engines(fabric, inputs, window=2)
    LossyNetwork(engines, fabric).run()
    for engine in engines:
        assert engine.stats.overflow
        assert engine.result().tolist() == [INT32_MAX] * 10


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_worker_processes_over_udp_through_the_real_p4_program(tmp_path, dtype):
    job = 5000 + os.getpid() % 20000
    fabric = P4Fabric("star:3", job_id=job, window=4)
    bridge = UdpSwitchBridge(fabric, 3, worker_port(job), drop_every=5)
    bridge.start()
    try:
        outcomes = run_workers([worker_command(job, rank, 3, bridge.address, "--elements", "500",
                                               "--dtype", dtype, "--seed", "3", "--contributor",
                                               str(fabric.contributor(rank)),
                                               "--json", str(tmp_path / f"r{rank}.json"), k=P4_K)
                                for rank in range(3)])
    finally:
        bridge.stop()
    assert outcomes == [(0, "")] * 3
    reports = [json.loads((tmp_path / f"r{rank}.json").read_text()) for rank in range(3)]
    assert all(r["correct"] is True and r["overflow"] is False for r in reports)
    assert sum(r["retransmissions"] for r in reports) > 0
