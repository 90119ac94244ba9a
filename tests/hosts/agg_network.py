"""Shared by the worker tests and tests/reliability: a reference switch (TEST DOUBLE), a
fault-injecting network in virtual time, the real p4src program as an in-process fabric, and
helpers that run engines and worker processes against them.

`ReferenceSwitch` is a plain-Python model of the switch side of the protocol (one root
switch); `P4Fabric` runs the real p4src program in the in-process p4switch (switches of a
topology, one job installed by the controller's AggregationManager).  Both offer
receive(rank, payload) -> [(destination, payload)], which `LossyNetwork` (loss,
duplication, reordering, arbitrarily late delivery) and `UdpSwitchBridge` (loopback UDP for
worker processes) drive.
"""

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field

import numpy as np
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from contracts import designs
from hosts.ina.engine import AggregationEngine, EngineConfig, make_schedule
from contracts.wire import MSG_CONTRIBUTION, MSG_RESULT, worker_port
from hosts.ina.protocol import AggHeader, AggPacket

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ---- test double: the switch ------------------------------------------------------------
@dataclass
class Cell:
    offset: int | None = None      # chunk offset of the round the cell holds (None: unused)
    seen: int = 0
    count: int = 0
    values: np.ndarray | None = None
    exponent: int = 0
    overflow: int = 0


@dataclass
class ReferenceSwitch:
    """TEST DOUBLE of the aggregation switch (see the module docstring).

    receive(contributor, payload) -> [(destination, payload)], destination being a
    contributor index (unicast) or "all" (the job's multicast group).  Like p4src, each slot
    version remembers the chunk offset of its round: a packet of a round the cell has left is
    dropped (`stale`), never added.
    """

    job_id: int
    fan_in: int
    window: int
    k: int
    cells: dict = field(default_factory=dict)
    dropped: int = 0
    stale: int = 0

    def receive(self, contributor: int, payload: bytes) -> list:
        packet = AggPacket.unpack(payload)
        h = packet.header
        if (h.msg_type != MSG_CONTRIBUTION or h.job_id != self.job_id or h.num_elements != self.k
                or h.contributor != contributor or h.slot >= self.window):
            self.dropped += 1
            return []
        mask = 1 << contributor
        cell = self.cells.setdefault((h.slot, h.version), Cell())
        if cell.offset is None or (cell.count == 0 and h.chunk_offset > cell.offset):
            cell.offset, cell.seen, cell.count = h.chunk_offset, 0, 0     # a new round
        elif h.chunk_offset != cell.offset:
            self.stale += 1
            return []
        elif cell.count == 0:
            return [(contributor, self._result(h, cell))]     # retransmission: unicast
        elif cell.seen & mask:
            return []                                         # duplicate, still collecting
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
    """Delivers packets between engines and a switch, one at a time, in virtual time.

    Each packet is lost, duplicated (2 to 4 copies) or held back with the given
    probabilities; a held-back packet stays back for a random number of timer ticks (each
    tick releases it with probability 1/4), so it may arrive many rounds later, after its
    sender has moved on to later rounds of the same slot.  With `reorder`, the next packet
    delivered is a random one in flight.  Time advances only when nothing is in flight, to
    the engines' earliest deadline.  Nothing is discarded for being old: the switch must
    recognise stale contributions and the engines stale results.
    """

    RELEASE_PER_TICK = 0.25

    def __init__(self, engines, switch, seed=0, loss=0.0, duplicate=0.0, late=0.0, reorder=False):
        self.engines, self.switch = engines, switch
        self.rng = np.random.default_rng(seed)
        self.loss, self.duplicate, self.late, self.reorder = loss, duplicate, late, reorder
        self.in_flight: list = []
        self.held_back: list = []
        self.delivered_late = 0
        self.now = 0.0

    def run(self, time_limit=3600.0) -> float:
        for index, engine in enumerate(self.engines):
            self._transmit("up", index, engine.start(self.now))
        while not all(engine.done for engine in self.engines):
            if self.in_flight:
                self._deliver_one()
                continue
            self._release_held_back()
            deadlines = [e.next_deadline() for e in self.engines if e.next_deadline() is not None]
            if not deadlines:
                continue
            self.now = max(self.now, min(deadlines))
            assert self.now < time_limit, "virtual time limit reached"
            for index, engine in enumerate(self.engines):
                self._transmit("up", index, engine.on_timer(self.now))
        return self.now

    def _release_held_back(self):
        released = self.rng.random(len(self.held_back)) < self.RELEASE_PER_TICK
        self.in_flight = [p for p, go in zip(self.held_back, released) if go]
        self.held_back = [p for p, go in zip(self.held_back, released) if not go]
        self.delivered_late += len(self.in_flight)

    def _transmit(self, direction, index, payloads):
        for payload in payloads:
            draw = self.rng.random()
            if draw < self.loss:
                continue
            copies = int(self.rng.integers(2, 5)) if draw < self.loss + self.duplicate else 1
            target = self.held_back if self.rng.random() < self.late else self.in_flight
            target.extend([(direction, index, payload)] * copies)

    def _deliver_one(self):
        position = int(self.rng.integers(len(self.in_flight))) if self.reorder else 0
        direction, index, payload = self.in_flight.pop(position)
        if direction == "down":
            self._transmit("up", index, self.engines[index].on_packet(payload, self.now))
            return
        for destination, result in self.switch.receive(index, payload):
            targets = range(len(self.engines)) if destination == "all" else [destination]
            for target in targets:
                self._transmit("down", target, [result])


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


def assert_within_float_bound(engine, inputs):
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    error = np.abs(engine.result().astype(np.float64) - exact)
    assert np.all(error <= engine.schedule.error_bound())
    return error


# ---- the UDP transport and the CLI over loopback ------------------------------------------
class UdpSwitchBridge(threading.Thread):
    """Serves a switch (ReferenceSwitch or P4Fabric: receive(rank, payload)) on a loopback
    UDP socket to `members` workers; worker r lives at 127.0.0.(10 + r).

    Drops one contribution in `drop_every`, at random (seeded), so the workers' retransmission
    path runs.  Not every n-th: once all workers retransmit at the same capped timeout, the
    datagrams arrive in a fixed cycle, and a fixed stride can hit one worker's packet every
    time (a stall the test double made, seen in CI).
    """

    def __init__(self, switch, members: int, port: int, drop_every: int = 0, seed: int = 1):
        super().__init__(daemon=True)
        self.switch, self.members, self.port, self.drop_every = switch, members, port, drop_every
        self.rng = np.random.default_rng(seed)
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
            if self.drop_every and self.rng.random() < 1 / self.drop_every:
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

    `members` (host names, default all) are the job's workers, rank = position in the list.
    `k` is the program's AGG_K (default P4_K); `design` the job's (contracts/designs/:
    its installer and UDP port).
    `link_faults` (seed, loss, duplicate, late) injects faults on the switch-to-switch links
    too: a frame there is lost, duplicated or held back; each later receive() call releases
    each held frame with probability 1/4, so partials and results between switches also
    arrive arbitrarily late.
    """

    RELEASE_PER_CALL = 0.25

    def __init__(self, topology, job_id, window, link_faults=None, members=None, k=P4_K,
                 design="ina"):
        self.k, self.port = k, designs.get(design).udp_port
        self.spec, self.switches, manager = p4src_harness().fabric(topology, k=k, slots=P4_SLOTS)
        self.hosts = list(members) if members else [h.name for h in self.spec.hosts]
        self.manager = manager
        self.plan = manager.start_job(job_id, self.hosts, window, design=design)
        seed, self.loss, self.duplicate, self.late = link_faults or (0, 0.0, 0.0, 0.0)
        self.rng = np.random.default_rng(seed)
        self.held_back: list = []
        self.delivered_late = 0
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
                      / UDP(sport=worker_port(self.plan.job_id), dport=self.port) / payload)
        pending, delivered = self._release_held_back(), []
        pending.append((attachment.switch, attachment.port, frame))
        while pending:
            switch, port, data = pending.pop(0)
            for egress, out in self.switches[switch].process_packet(port, data):
                node, node_port = self.peer[switch, egress]
                if node in self.switches:
                    self._between_switches((node, node_port, out), pending)
                else:
                    delivered.append((self.hosts.index(node), self._payload_for(node, out)))
        return delivered

    def _between_switches(self, hop, pending):
        draw = self.rng.random()
        if draw < self.loss:
            return
        copies = 2 if draw < self.loss + self.duplicate else 1
        target = self.held_back if self.rng.random() < self.late else pending
        target.extend([hop] * copies)

    def _release_held_back(self):
        released = self.rng.random(len(self.held_back)) < self.RELEASE_PER_CALL
        out = [hop for hop, go in zip(self.held_back, released) if go]
        self.held_back = [hop for hop, go in zip(self.held_back, released) if not go]
        self.delivered_late += len(out)
        return out

    def _payload_for(self, host_name, frame):
        host = self.spec.host(host_name)
        parsed = Ether(frame)
        ip, udp = parsed[IP], parsed[UDP]
        assert (parsed.dst, ip.dst, ip.src) == (host.mac, host.ip, "10.0.255.254")
        assert (udp.sport, udp.dport) == (self.port, worker_port(self.plan.job_id))
        rebuilt = ip.copy()
        rebuilt.chksum = None
        assert IP(bytes(rebuilt)).chksum == ip.chksum, "IPv4 checksum not updated"
        return bytes(udp.payload)


def p4_engines(fabric, inputs, window, max_retries=12, closing_rounds=True, **config):
    world = len(inputs)
    return [AggregationEngine(make_schedule(data, fabric.k, world, window),
                              EngineConfig(job_id=fabric.plan.job_id,
                                           contributor=fabric.contributor(rank), window=window,
                                           timeout_s=0.01, max_timeout_s=0.08,
                                           max_retries=max_retries,
                                           closing_rounds=closing_rounds, **config))
            for rank, data in enumerate(inputs)]
