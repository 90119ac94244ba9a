"""ATP's worker engine, with no sockets and no clock of its own (as hosts/ina/engine.py).

The vector is cut into fragments of K values; fragment q (element offset q*K) goes to the
aggregator `protocol.aggregator_of(job, offset, aggregators)`.  At most `window` fragments
are in flight: ATP's window, which an acknowledgement without an ECN mark grows by 1/window
(one fragment per window's worth of acknowledgements) and a marked one halves, at most once
per window of fragments sent (the first mark after the last cut; ATP's congestion control,
after DCTCP-style AIMD).  A fragment unacknowledged for its timeout is resent with the
resend flag (the switches clear its aggregator and pass it to the parameter server),
the timeout doubling per resend; after `max_retries` resends AtpStalled.  The
acknowledgement carries the fragment's sum: the result.

    packets = engine.start(now); engine.on_packet(data, now); engine.on_timer(now)
    engine.next_deadline(), engine.done, engine.result(), engine.stats
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from contracts.wire import MSG_RESULT
from hosts.atp.protocol import AtpPacket, aggregator_of, unpack


class AtpStalled(RuntimeError):
    """A fragment got no acknowledgement after the allowed resends."""


@dataclass(frozen=True)
class AtpConfig:
    job_id: int
    index: int                  # this worker's index at its rack switch
    rack: int                   # its rack's index at the next level
    aggregators: int            # the switches' pool, which fragments hash into
    window: int = 32            # fragments in flight at most
    timeout_s: float = 0.1
    max_timeout_s: float = 3.2
    max_retries: int = 12


@dataclass
class AtpStats:
    packets_sent: int = 0
    bytes_sent: int = 0
    retransmissions: int = 0          # resends
    packets_ignored: int = 0          # foreign, malformed or already-known acknowledgements
    ecn_marks: int = 0                # acknowledgements that came marked
    window_cuts: int = 0              # times the window halved
    smallest_window: float = 0.0
    overflow: bool = False            # a sum did not fit int32 (the server says so)
    results_accepted: int = 0


@dataclass
class _Fragment:
    seq: int
    deadline: float
    timeout: float
    retries: int = 0


class AtpEngine:
    def __init__(self, data: np.ndarray, k: int, config: AtpConfig):
        if data.dtype != np.int32:
            raise ValueError("ATP's workers send int32 values")
        if config.aggregators < 1:
            raise ValueError("the switches need at least one aggregator")
        self.config, self.k = config, k
        self.elements = len(data)
        self.fragments = max(1, math.ceil(len(data) / k))
        self._values = np.zeros(self.fragments * k, dtype=np.int32)
        self._values[:len(data)] = data
        self._sums = np.zeros(self.fragments * k, dtype=np.int32)
        self.window = float(min(config.window, self.fragments))
        self.stats = AtpStats(smallest_window=self.window)
        self._pending: dict[int, _Fragment] = {}
        self._deadlines: list = []
        self._next = 0
        self._cut_at = 0                 # a mark on a fragment sent before this is no news
        self._acked = 0

    @property
    def done(self) -> bool:
        return self._acked == self.fragments

    @property
    def progress(self) -> tuple:
        return self._acked, self.fragments

    def result(self) -> np.ndarray:
        return self._sums[:self.elements]

    def _packet(self, seq: int, resend: bool) -> bytes:
        offset = seq * self.k
        c = self.config
        payload = AtpPacket(1, c.job_id, aggregator_of(c.job_id, offset, c.aggregators),
                            c.index, offset, self.k, self._values[offset:offset + self.k],
                            resend=resend, rack=c.rack, bitmap0=1 << c.index).pack()
        self.stats.packets_sent += 1
        self.stats.bytes_sent += len(payload)
        return payload

    def _fill(self, now: float) -> list:
        out = []
        while len(self._pending) < int(self.window) and self._next < self.fragments:
            seq = self._next
            self._next += 1
            fragment = _Fragment(seq, now + self.config.timeout_s, self.config.timeout_s)
            self._pending[seq] = fragment
            heapq.heappush(self._deadlines, (fragment.deadline, seq))
            out.append(self._packet(seq, resend=False))
        return out

    def start(self, now: float) -> list:
        return self._fill(now)

    def on_packet(self, data: bytes, now: float) -> list:
        packet = unpack(data)
        if (packet is None or packet.msg_type != MSG_RESULT or packet.job != self.config.job_id
                or packet.k != self.k or packet.offset % self.k
                or packet.offset // self.k not in self._pending):
            self.stats.packets_ignored += 1       # foreign, malformed, or known already
            return []
        seq = packet.offset // self.k
        del self._pending[seq]
        self._sums[packet.offset:packet.offset + self.k] = packet.values
        self._acked += 1
        self.stats.results_accepted += 1
        self.stats.overflow |= packet.overflow
        if packet.ecn:
            self.stats.ecn_marks += 1
            if seq >= self._cut_at:
                self.window = max(1.0, self.window / 2)
                self._cut_at = self._next
                self.stats.window_cuts += 1
                self.stats.smallest_window = min(self.stats.smallest_window, self.window)
        else:
            self.window = min(float(self.config.window), self.window + 1 / self.window)
        return self._fill(now)

    def on_timer(self, now: float) -> list:
        out = []
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, seq = heapq.heappop(self._deadlines)
            fragment = self._pending.get(seq)
            if fragment is None or fragment.deadline != deadline:
                continue
            if fragment.retries >= self.config.max_retries:
                raise AtpStalled(f"job {self.config.job_id}: no acknowledgement for fragment "
                                 f"{seq} (offset {seq * self.k}) after {fragment.retries} "
                                 "resends; a worker or the parameter server may have died")
            fragment.retries += 1
            fragment.timeout = min(fragment.timeout * 2, self.config.max_timeout_s)
            fragment.deadline = now + fragment.timeout
            heapq.heappush(self._deadlines, (fragment.deadline, seq))
            self.stats.retransmissions += 1
            out.append(self._packet(seq, resend=True))
        return out

    def next_deadline(self):
        while self._deadlines:
            deadline, seq = self._deadlines[0]
            fragment = self._pending.get(seq)
            if fragment is not None and fragment.deadline == deadline:
                return deadline
            heapq.heappop(self._deadlines)
        return None
