"""In-network aggregation in the simulator: the protocol of docs/design.md and
docs/protocol.md, over the reduction tree the controller's planner makes.

Workers (`SimWorker`) run the worker's half: a window of W slots, round q in slot q % W with
version (q // W) % 2, a slot's next round only after its current round's result, the
identical packet resent when its timer expires (the timeout estimated from the round trips
as hosts/ina/engine.py's RetransmissionTimer does, doubled per retry, at least the emulator's
first timeout contracts.jobs.ina_timeout_ms), results matched by (slot, version, round)
and stale or duplicate ones ignored, failure after `max_retries` retransmissions of one slot.
After its last real round every slot runs one closing round, as the workers do (Shape.closing;
an unanswered closing round is given up after `max_retries` without error).
Switches (`SwitchCells`) apply p4src's rules to every packet: per slot version the round it
holds, the contributor bitmap and count, the sum, `result_ready`; new round / stale /
retransmission (answered with the stored result, or sent up again at a non-root that still
waits for its parent) / duplicate / added; a completed round goes up as one contribution
(non-root) or down to every child (root, and a non-root receiving its parent's result).

What a packet carries: the simulation does not move vectors.  Contribution of rank r to
round q is the integer `contribution(r, q)`; switches add them and every worker checks that
the result of each round is the sum over all ranks, so a lost, duplicated or twice-added
contribution shows as a wrong result.  Sizes are the protocol's: a UDP payload of 16 + 4K
bytes (what workers count as bytes sent), an Ethernet frame of 58 + 4K bytes on the wire.

A *train* of n packets (n = 1 by default: packet level) is n consecutive rounds moved as one
simulated message of n frames: rounds of n chunks, W/n slots.  Trains cut the messages (SimGrid's
Python actors move some 5,000-10,000 a second on this machine) but are stored and forwarded
whole, which is only faithful where the links bound the rate (simulation/run.py
choose_train); loss is only modelled at packet level.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional

from simgrid import Actor, Engine, Mailbox, this_actor

from simulation.cpp_engine import DEFAULT_MAX_RETRIES, MAX_TIMEOUT_S, Shape
from hosts.ina.engine import RetransmissionTimer


def contribution(rank: int, q: int) -> int:
    """What rank `rank` contributes to round q (a distinct integer per rank and round)."""
    return (rank + 1) * 1_000_003 + q * 7


def expected_sum(world: int, q: int) -> int:
    return sum(contribution(rank, q) for rank in range(world))


@dataclass(frozen=True)
class Packet:
    kind: str                # "contribution" | "result" | "tick" (a worker's timer)
    slot: int = 0
    version: int = 0
    round: int = 0
    value: int = 0
    contributor: int = 0     # the sender's index at the receiving switch
    sender: str = ""
    lost: bool = False       # dropped on the link it crossed: the receiver discards it


# -- the switch -------------------------------------------------------------------------

class Cell:
    __slots__ = ("round", "seen", "count", "value", "result_ready")

    def __init__(self, q: int, contributor: int, value: int):
        self.round, self.seen, self.count = q, 1 << contributor, 1
        self.value, self.result_ready = value, False


class SwitchCells:
    """One switch's slot state for one job and what it sends for each packet, by
    docs/protocol.md's rules.  Returns [(destination node, Packet)]."""

    def __init__(self, name: str, plan):
        self.name = name
        self.children = {child.contributor: child.node for child in plan.children}
        self.fan_in = plan.fan_in
        self.parent = plan.parent
        self.contributor_at_parent = plan.contributor_at_parent
        self.cells: dict[tuple[int, int], Cell] = {}
        self.events = {"added": 0, "completed": 0, "sent_up": 0, "duplicate": 0,
                       "result_resent": 0, "partial_resent": 0, "parent_result": 0,
                       "stale_contribution": 0, "stale_result": 0}

    def receive(self, packet: Packet) -> list:
        if packet.kind == "contribution":
            return self._contribution(packet)
        return self._parent_result(packet)

    def _contribution(self, p: Packet) -> list:
        key = (p.slot, p.version)
        cell = self.cells.get(key)
        if cell is None or (cell.count == 0 and p.round > cell.round):
            cell = self.cells[key] = Cell(p.round, p.contributor, p.value)
            self.events["added"] += 1
            return self._complete(key, cell) if self.fan_in == 1 else []
        if p.round != cell.round:
            self.events["stale_contribution"] += 1
            return []
        if cell.count == 0:                                   # a retransmission
            if cell.result_ready:
                self.events["result_resent"] += 1
                return [(self.children[p.contributor], self._result(key, cell))]
            self.events["partial_resent"] += 1
            return [self._up(key, cell)]
        if cell.seen >> p.contributor & 1:
            self.events["duplicate"] += 1
            return []
        cell.seen |= 1 << p.contributor
        cell.value += p.value
        cell.count += 1
        self.events["added"] += 1
        return self._complete(key, cell) if cell.count == self.fan_in else []

    def _complete(self, key, cell: Cell) -> list:
        cell.count = 0
        if self.parent is None:
            cell.result_ready = True
            self.events["completed"] += 1
            return self._multicast(key, cell)
        self.events["sent_up"] += 1
        return [self._up(key, cell)]

    def _parent_result(self, p: Packet) -> list:
        key = (p.slot, p.version)
        cell = self.cells.get(key)
        if cell is None or cell.round != p.round or cell.count != 0:
            self.events["stale_result"] += 1
            return []
        cell.value, cell.result_ready = p.value, True
        self.events["parent_result"] += 1
        return self._multicast(key, cell)

    def _up(self, key, cell: Cell) -> tuple:
        return (self.parent, Packet("contribution", key[0], key[1], cell.round, cell.value,
                                    self.contributor_at_parent, self.name))

    def _result(self, key, cell: Cell) -> Packet:
        return Packet("result", key[0], key[1], cell.round, cell.value, 0, self.name)

    def _multicast(self, key, cell: Cell) -> list:
        packet = self._result(key, cell)
        return [(node, packet) for _, node in sorted(self.children.items())]


# -- the worker -------------------------------------------------------------------------

@dataclass
class Outstanding:
    round: int
    deadline: float
    timeout: float
    sent_at: float
    retries: int = 0


@dataclass
class WorkerStats:
    packets_sent: int = 0
    bytes_sent: int = 0          # UDP payloads, as hosts/ina/worker.py counts them
    wire_bytes_sent: int = 0     # frames
    bytes_received: int = 0
    wire_bytes_received: int = 0
    retransmissions: int = 0
    wrong_results: int = 0
    closings_unanswered: int = 0     # closing rounds given up after max_retries (no error)
    finished: Optional[float] = None
    error: Optional[str] = None


class SimWorker:
    """The worker's protocol state (no SimGrid in here: `start`, `on_result`, `on_timer`
    return the rounds to send now)."""

    def __init__(self, rank: int, world: int, shape: Shape, timeout_s: float,
                 max_retries: int = DEFAULT_MAX_RETRIES):
        self.rank, self.world, self.shape = rank, world, shape
        self.timer = RetransmissionTimer(timeout_s, max(MAX_TIMEOUT_S, timeout_s))
        self.max_retries = max_retries
        self.outstanding: dict[int, Outstanding] = {}       # slot -> round in flight
        self.accepted = 0
        self.stats = WorkerStats()

    @property
    def done(self) -> bool:
        return self.accepted == self.shape.rounds

    def start(self, now: float) -> list:
        return [self._begin(q, now) for q in range(min(self.shape.slots, self.shape.real_rounds))]

    def _begin(self, q: int, now: float) -> int:
        slot, _ = self.shape.slot_of(q)
        timeout = self.timer.timeout
        self.outstanding[slot] = Outstanding(q, now + timeout, timeout, now)
        return q

    def _accept(self, slot: int, now: float) -> None:
        """The slot's round is done (answered, or a closing round given up)."""
        del self.outstanding[slot]
        self.accepted += 1
        if self.done:
            self.stats.finished = now

    def on_result(self, packet: Packet, now: float) -> list:
        state = self.outstanding.get(packet.slot)
        if state is None or state.round != packet.round or \
                self.shape.slot_of(state.round)[1] != packet.version:
            return []                                     # stale or duplicate: ignored
        if packet.value != expected_sum(self.world, packet.round):
            self.stats.wrong_results += 1
        if state.retries == 0:                            # Karn's rule
            self.timer.sample(now - state.sent_at)
        self._accept(packet.slot, now)
        following = packet.round + self.shape.slots        # this slot's next round
        if self.shape.has_round(following):
            return [self._begin(following, now)]
        return []

    def on_timer(self, now: float) -> list:
        """Rounds to resend now; raises SimulationStall after max_retries of one slot."""
        resend = []
        for slot, state in sorted(self.outstanding.items()):
            if state.deadline > now:
                continue
            if state.retries >= self.max_retries and self.shape.is_closing(state.round):
                # every result is in (hosts/ina/engine.py): the others left; stop waiting
                self.stats.closings_unanswered += 1
                self._accept(slot, now)
                continue
            if state.retries >= self.max_retries:
                raise SimulationStall(
                    f"rank {self.rank}: no result from the switch for slot {slot} (round "
                    f"{state.round}) after {state.retries} retransmissions")
            state.retries += 1
            state.timeout = min(state.timeout * 2, self.timer.maximum)
            state.deadline = now + state.timeout
            self.stats.retransmissions += 1
            resend.append(state.round)
        return resend

    def next_deadline(self) -> Optional[float]:
        return min((s.deadline for s in self.outstanding.values()), default=None)


class SimulationStall(RuntimeError):
    pass


# -- the actors -------------------------------------------------------------------------

@dataclass
class InaJob:
    """Everything the actors of one in-network job share."""

    platform: object
    plan: object                     # controller JobPlan
    hosts: list                      # rank order
    shape: Shape
    timeout_s: float
    seed: int
    max_retries: int = DEFAULT_MAX_RETRIES
    workers: list = field(default_factory=list)
    switches: dict = field(default_factory=dict)
    frames_lost: int = 0

    def __post_init__(self):
        self.random = random.Random(self.seed)


def mailbox(node: str):
    return Mailbox.by_name(f"node:{node}")


def transmit(job: InaJob, source: str, destination: str, packet: Packet, frames: int,
             size: int) -> None:
    """Put `packet` on the link source -> destination; lost with the link's loss rate (the
    frames still cross the link: the receiver discards them).

    Pacing: SimGrid shares a link between concurrent transfers (fluid), so a burst of W
    packets put at once would all arrive together after W serialization times, and every
    switch would store and forward the whole burst.  A NIC sends them one after another, so
    a worker starts a packet only once its link has finished the previous one
    (`worker_actor`); switches are paced by what arrives."""
    loss = job.platform.link_between(source, destination).loss
    if loss and job.random.random() < 1 - (1 - loss) ** frames:
        packet = Packet(packet.kind, packet.slot, packet.version, packet.round, packet.value,
                        packet.contributor, packet.sender, lost=True)
        job.frames_lost += frames
    mailbox(destination).put_init(packet, size).detach()


def switch_actor(job: InaJob, name: str) -> None:
    Actor.self().daemonize()
    cells = job.switches[name]
    box = mailbox(name)
    box.set_receiver(Actor.self())
    shape = job.shape
    while True:
        packet = box.get()
        if packet.lost:
            continue
        for destination, out in cells.receive(packet):
            transmit(job, name, destination, out, shape.packets(out.round),
                     shape.frame_bytes(out.round))


def worker_actor(job: InaJob, rank: int) -> None:
    host = job.hosts[rank]
    member = job.plan.hosts[host]
    worker = job.workers[rank]
    shape = job.shape
    box = mailbox(host)
    box.set_receiver(Actor.self())
    uplink_bytes_per_s = job.platform.link_between(host, member.switch).mbit * 1e6 / 8
    Actor.create(f"timer-{host}", job.platform.host(host), timer_actor, job, rank)

    link_free_at = 0.0

    def send(q: int) -> None:
        nonlocal link_free_at
        if Engine.clock < link_free_at:        # the NIC is still sending the previous one
            this_actor.sleep_until(link_free_at)
        link_free_at = Engine.clock + shape.frame_bytes(q) / uplink_bytes_per_s
        slot, version = shape.slot_of(q)
        worker.stats.packets_sent += shape.packets(q)
        worker.stats.bytes_sent += shape.payload_bytes(q)
        worker.stats.wire_bytes_sent += shape.frame_bytes(q)
        transmit(job, host, member.switch,
                 Packet("contribution", slot, version, q, contribution(rank, q),
                        member.contributor, host),
                 shape.packets(q), shape.frame_bytes(q))

    for q in worker.start(Engine.clock):
        send(q)
    try:
        while not worker.done:
            packet = box.get()
            now = Engine.clock
            if packet.kind == "tick":
                rounds = worker.on_timer(now)
            elif packet.lost:
                continue
            else:
                worker.stats.bytes_received += shape.payload_bytes(packet.round)
                worker.stats.wire_bytes_received += shape.frame_bytes(packet.round)
                rounds = worker.on_result(packet, now)
            for q in rounds:
                send(q)
    except SimulationStall as stall:
        worker.stats.error = str(stall)
        Actor.kill_all()


def timer_actor(job: InaJob, rank: int) -> None:
    """Wakes the worker when its earliest retransmission deadline has passed."""
    Actor.self().daemonize()
    worker = job.workers[rank]
    box = mailbox(job.hosts[rank])
    ticked = None
    while not worker.done and worker.stats.error is None:
        deadline = worker.next_deadline()
        now = Engine.clock
        if deadline is None:
            this_actor.sleep_for(job.timeout_s)
        elif deadline > now:
            this_actor.sleep_until(deadline)
        elif deadline != ticked:
            ticked = deadline
            box.put_init(Packet("tick"), 0).detach()
        else:
            this_actor.sleep_for(job.timeout_s / 16)
