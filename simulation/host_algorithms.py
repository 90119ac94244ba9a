"""The host-only allreduce algorithms in the simulator: every rank runs its own schedule from
hosts/schedules.py (ps, binomial-tree, butterfly, ring, rabenseifner, double-binary-tree),
the same operations `python -m hosts allreduce` runs over TCP.

A `Send(peer, start, stop)` puts a message of (stop - start) * 4 payload bytes towards the
peer once its link has finished the rank's previous message (hosts/transport.py queues
sends and the kernel sends them one after another; SimGrid alone would let all of a rank's
messages share the link at once), and the rank goes on; a `Recv` waits for the
next message from that peer (between two ranks messages arrive in the order sent).  A
message is sized as the TCP segments that carry it: segments of at most 1448 payload bytes,
each a 1514-byte frame (contracts/wire.py's TCP_* constants).  Messages follow the
shortest route through the switches and share each link's rate max-min fairly with the
others crossing it, which is what TCP's congestion control aims at on the shaped links of
the emulator; TCP's acknowledgements (the reverse direction, about 3% of a link) and its
loss recovery are not modelled, so host-only modes refuse --loss.

The chunk size is the workers' --chunk-bytes default (hosts/allreduce.py): the ring and the
double binary tree pipeline their segments in chunks of 16,384 elements.  Byte counts are
payload bytes, as the workers count them (their formulas: hosts/bounds.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from simgrid import Actor, Engine, Mailbox, this_actor

from contracts.wire import TCP_FRAME_BYTES, TCP_PAYLOAD_PER_FRAME
from hosts.algorithms.base import Send, peers_of
from hosts.transport import TransportStats
from simulation.programs import CHUNK_ELEMENTS, host_programs

ITEMSIZE = 4


def tcp_frames(payload: int) -> int:
    return math.ceil(payload / TCP_PAYLOAD_PER_FRAME)


def tcp_wire_bytes(payload: int) -> int:
    """Frame bytes of a message of `payload` bytes (headers of every segment included)."""
    frames = tcp_frames(payload)
    return payload + frames * (TCP_FRAME_BYTES - TCP_PAYLOAD_PER_FRAME)


@dataclass
class RankStats(TransportStats):
    """What a rank's TCP transport counts (no retransmissions: loss is not modelled), plus
    the frame bytes each way and the simulated second it finished."""
    wire_bytes_sent: int = 0
    wire_bytes_received: int = 0
    finished: Optional[float] = None


@dataclass
class HostJob:
    platform: object
    algorithm: str
    hosts: list                 # rank order
    elements: int
    chunk_elements: int = CHUNK_ELEMENTS
    ranks: list = field(default_factory=list)

    def __post_init__(self):
        self.ranks = [RankStats() for _ in self.hosts]
        self.uplink_bytes_per_s = [self.platform.uplink(host).mbit * 1e6 / 8
                                   for host in self.hosts]
        self.programs = host_programs(self.algorithm, len(self.hosts), self.elements,
                                      self.chunk_elements)


def pair_mailbox(source: int, destination: int):
    return Mailbox.by_name(f"rank:{source}->{destination}")


def rank_actor(job: HostJob, rank: int) -> None:
    ops = job.programs[rank]
    stats = job.ranks[rank]
    me = Actor.self()
    for peer in peers_of(ops):
        pair_mailbox(peer, rank).set_receiver(me)
    outgoing = {peer: pair_mailbox(rank, peer) for peer in peers_of(ops)}
    link_free_at = 0.0
    for op in ops:
        payload = (op.stop - op.start) * ITEMSIZE
        if isinstance(op, Send):
            stats.messages_sent += 1
            stats.bytes_sent += payload
            stats.wire_bytes_sent += tcp_wire_bytes(payload)
            if Engine.clock < link_free_at:    # the NIC is still sending the previous one
                this_actor.sleep_until(link_free_at)
            link_free_at = Engine.clock + tcp_wire_bytes(payload) / job.uplink_bytes_per_s[rank]
            outgoing[op.peer].put_init(payload, tcp_wire_bytes(payload)).detach()
        else:
            received = pair_mailbox(op.peer, rank).get()
            if received != payload:
                raise RuntimeError(f"rank {rank}: expected {payload} bytes from rank "
                                   f"{op.peer}, got a message of {received}")
            stats.messages_received += 1
            stats.bytes_received += payload
            stats.wire_bytes_received += tcp_wire_bytes(payload)
    stats.finished = Engine.clock
