"""ATP's parameter server for one job: completes every fragment from what reaches it.

What arrives is whatever the switches could not finish or finished: a rack's or the whole
job's sum (complete at a switch), a worker's fragment that collided with another job's in
its aggregator or would have overflowed it, or a worker's resend.  Each packet covers a set
of workers, known from its bitmaps and rack: bitmap1 set, every worker of those racks (only
complete rack sums go up a level); else the workers of bitmap0 in its rack.  The server adds
a packet only when it covers none of the workers it has already (a duplicate, or a resend
of a worker inside a sum it has: those workers resend too, so the fragment still
completes), in int64; once every worker is covered it answers with the sum (int32; the
overflow bit if it does not fit), the aggregator and whether any part came ECN-marked.  The
acknowledgement goes to the switches (the service address), which free the aggregator and
multicast it to the workers; a packet for a fragment already complete (a worker that lost
the acknowledgement resends) is answered again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contracts.wire import ATP_LEVEL_RACK, MSG_CONTRIBUTION, MSG_RESULT
from hosts.atp.protocol import AtpPacket, unpack

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


@dataclass
class ServerStats:
    packets: int = 0                  # every datagram that came
    ignored: int = 0                  # foreign or malformed
    whole: int = 0                    # a fragment's complete sum, from the switches
    partial_sums: int = 0             # sums of several workers short of the whole
    single: int = 0                   # one worker's fragment
    collisions: int = 0               # of those: sent on by a switch on a collision
    overflows: int = 0                # ... because the switch's add would overflow
    resends: int = 0                  # ... worker resends
    overlapping: int = 0              # covering a worker the server had: not added
    answered_again: int = 0           # for a complete fragment: the acknowledgement again
    acks_sent: int = 0


@dataclass
class _Fragment:
    sums: np.ndarray
    covered: int = 0
    ecn: bool = False
    done: bool = False
    overflow: bool = False
    aggregator: int = 0


@dataclass
class ParameterServer:
    job_id: int
    racks: tuple                      # workers per rack, in rack order
    k: int
    stats: ServerStats = field(default_factory=ServerStats)

    def __post_init__(self):
        self._first = [sum(self.racks[:r]) for r in range(len(self.racks))]
        self._everyone = (1 << sum(self.racks)) - 1
        self._fragments: dict[int, _Fragment] = {}

    def coverage(self, packet: AtpPacket) -> int:
        """The workers a packet's values are the sum of, as bits of the job's worker order
        (rack by rack)."""
        if packet.bitmap1:
            return sum(((1 << self.racks[r]) - 1) << self._first[r]
                       for r in range(len(self.racks)) if packet.bitmap1 >> r & 1)
        if packet.rack >= len(self.racks):
            return 0
        mask = (1 << self.racks[packet.rack]) - 1
        return (packet.bitmap0 & mask) << self._first[packet.rack]

    def on_packet(self, data: bytes) -> list:
        """The acknowledgements to send for one datagram."""
        self.stats.packets += 1
        packet = unpack(data)
        covers = self.coverage(packet) if packet is not None else 0
        if (packet is None or packet.msg_type != MSG_CONTRIBUTION or packet.job != self.job_id
                or packet.k != self.k or packet.offset % self.k or not covers):
            self.stats.ignored += 1
            return []
        fragment = self._fragments.get(packet.offset)
        if fragment is None:
            fragment = self._fragments[packet.offset] = _Fragment(
                np.zeros(self.k, dtype=np.int64), aggregator=packet.aggregator)
        if fragment.done:
            self.stats.answered_again += 1
            return [self._ack(packet.offset, fragment)]
        self._count(packet, covers)
        if fragment.covered & covers:
            self.stats.overlapping += 1
            return []
        fragment.sums += packet.values.astype(np.int64)
        fragment.covered |= covers
        fragment.ecn |= packet.ecn
        if fragment.covered != self._everyone:
            return []
        fragment.done = True
        fragment.overflow = bool(np.any((fragment.sums < INT32_MIN)
                                        | (fragment.sums > INT32_MAX)))
        fragment.sums = np.clip(fragment.sums, INT32_MIN, INT32_MAX).astype(np.int32)
        return [self._ack(packet.offset, fragment)]

    def _count(self, packet: AtpPacket, covers: int) -> None:
        s = self.stats
        if covers == self._everyone:
            s.whole += 1
        elif covers & (covers - 1):
            s.partial_sums += 1
        else:
            s.single += 1
        s.collisions += packet.collision
        s.overflows += packet.overflow
        s.resends += packet.resend

    def _ack(self, offset: int, fragment: _Fragment) -> bytes:
        self.stats.acks_sent += 1
        return AtpPacket(MSG_RESULT, self.job_id, fragment.aggregator, 0, offset, self.k,
                         fragment.sums, level=ATP_LEVEL_RACK, ecn=fragment.ecn,
                         overflow=fragment.overflow).pack()
