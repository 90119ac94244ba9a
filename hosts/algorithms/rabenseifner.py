"""rabenseifner: a reduce phase by recursive halving (in step k, partner r XOR P/2^(k+1);
each keeps half of its current block range and sends the other half), then all-gather by
recursive doubling in the reverse order; P blocks of E/P elements (P = 2^floor(log2 N),
L = log2 P).  Extra ranks fold in first and get the result back at the end as in butterfly
(2L + 2 steps).  The first partner is P/2 away: the largest halves travel between the most
distant ranks, which on a leaf-spine fabric with consecutive ranks under one leaf means
across the spine.  rabenseifner_nearest.py is the same with the partners nearest first.
The steps overlap: a chunk goes on to the next partner as soon as it holds what it needs
(`schedule`, `_Plan`).

Cost (V the vector's bytes, f = 1 when N is not a power of two): ranks below N-P send and
receive (2(P-1)/P + 1)V, the others below P 2(P-1)/P V, the folded ranks V; 2L + 2f steps;
busiest link (2(P-1)/P + 2f)V.
"""

from __future__ import annotations

import bisect
import functools

from hosts.algorithms.base import (HOP, Recv, Send, block_bounds, fold_steps, folded,
                                   folded_elements, in_time_order, power_of_two_below)

FORMULA = "(2(P-1)/P + 2f)·E·4/B"


def halving_distances(p: int, nearest_first: bool = False) -> list[int]:
    """The partner distances of Rabenseifner's halving steps: P/2, P/4, .., 1, or the
    reverse (MPICH's nearest-first order)."""
    distances = [p >> k for k in range(1, p.bit_length())]
    return distances[::-1] if nearest_first else distances


def halving_ranges(rank: int, p: int, nearest_first: bool = False) -> list[tuple[int, int]]:
    """Rabenseifner's block ranges of `rank` after each halving step: the range kept in
    the step with partner rank XOR d (d from halving_distances), the upper half where rank
    has bit d set; the last one is the block it owns (block `rank`, or its bit reverse
    nearest first)."""
    lo, hi = 0, p
    kept = []
    for distance in halving_distances(p, nearest_first):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if rank & distance else (lo, mid)
        kept.append((lo, hi))
    return kept


class _Plan:
    """The send times of every message of the power-of-two core (base.in_time_order),
    computed as needed and kept.  A step's range is cut into chunks; a chunk goes out HOP
    after the last message that brought it data it needs, and a step's chunks one time
    apart at most, the readiest first (of those equally ready, the ones the partner sends
    on soonest).  A rank's times depend on its partners' (what they sent it), so both ends
    of a message compute the same time for it."""

    def __init__(self, p: int, elements: int, chunk_elements: int, nearest_first: bool):
        self.p, self.nearest_first, self.chunk_elements = p, nearest_first, chunk_elements
        self.bounds = block_bounds(elements, p)
        self.distances = halving_distances(p, nearest_first)
        largest = int(max(self.bounds[1:] - self.bounds[:-1]))
        self.pieces_per_block = max(1, -(-largest // chunk_elements))
        self.blocks_per_chunk = power_of_two_below(max(1, min(p, chunk_elements
                                                             // max(1, largest))))
        self._sends: dict = {}       # (rank, phase, step): [(start, stop, time)] sent
        self._received_by_start: dict = {}

    def span(self, blocks: tuple[int, int]) -> tuple[int, int]:
        return int(self.bounds[blocks[0]]), int(self.bounds[blocks[1]])

    def kept(self, rank: int, step: int) -> tuple[int, int]:
        """Blocks rank keeps in halving step `step` (and sends in that doubling step)."""
        return halving_ranges(rank, self.p, self.nearest_first)[step]

    def given(self, rank: int, step: int) -> tuple[int, int]:
        """Blocks rank sends in halving step `step`: its range before, less the kept."""
        before = (0, self.p) if step == 0 else self.kept(rank, step - 1)
        lo, hi = self.kept(rank, step)
        return (before[0], lo) if lo > before[0] else (hi, before[1])

    def sends(self, rank: int, phase: str, step: int) -> list:
        """[(start, stop, send time)] of what rank sends its partner in `step` of `phase`
        ("halving" or "doubling"), in the order sent."""
        key = (rank, phase, step)
        if key not in self._sends:
            if phase == "halving":
                span = self.given(rank, step)
                sources = [("halving", k) for k in range(step)]
            else:
                last = len(self.distances) - 1
                span = self.kept(rank, step)
                sources = [("halving", k) for k in range(last + 1)] + \
                          [("doubling", k) for k in range(last, step, -1)]
            arrivals = [self._by_start(rank, *source) for source in sources]
            soon = self._sent_on_soon(rank ^ self.distances[step], phase, step)
            pieces = []
            for lo, hi in self._cut(span):
                ready = max((time + HOP for source in arrivals
                             for time in _overlapping(source, lo, hi)), default=0)
                pieces.append((ready, soon(lo), lo, hi))
            times, previous = [], -1
            for ready, _, lo, hi in sorted(pieces):
                previous = max(ready, previous + 1)
                times.append((lo, hi, previous))
            self._sends[key] = times
        return self._sends[key]

    def _cut(self, blocks: tuple[int, int]) -> list:
        """The chunks of a step's block range: each block cut into the same number of
        pieces of at most the chunk size, or, where blocks are smaller than a chunk, as
        many blocks a chunk as fit (a power of two of them, which the ranges of every step
        are made of; a range of fewer blocks is one chunk).  Chunks of one step so lie
        inside those of the steps before, and every rank's plan has the same shape."""
        lo, hi = blocks
        if self.blocks_per_chunk > 1:
            edges = list(range(lo, hi, self.blocks_per_chunk)) + [hi]
            return [self.span(pair) for pair in zip(edges[:-1], edges[1:])]
        pieces = []
        for block in range(lo, hi):
            start, stop = self.span((block, block + 1))
            cuts = block_bounds(stop - start, self.pieces_per_block) + start
            pieces += [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]
        return pieces

    def _by_start(self, rank: int, phase: str, step: int) -> tuple[list, list]:
        """(starts, [(start, stop, time)]) of what rank received in that step, by start."""
        key = (rank, phase, step)
        if key not in self._received_by_start:
            pieces = sorted(self.received(rank, phase, step))
            self._received_by_start[key] = ([piece[0] for piece in pieces], pieces)
        return self._received_by_start[key]

    def received(self, rank: int, phase: str, step: int) -> list:
        """[(start, stop, send time)] of what rank's partner sends it in that step."""
        return self.sends(rank ^ self.distances[step], phase, step)

    def _sent_on_soon(self, partner: int, phase: str, step: int):
        """How soon the partner sends an element on (0: in the next halving step)."""
        later = [self.given(partner, k) for k in range(step + 1, len(self.distances))] \
            if phase == "halving" else []

        def soon(element):
            return next((n for n, (lo, hi) in enumerate(later)
                         if self.bounds[lo] <= element < self.bounds[hi]), len(later))
        return soon


def _overlapping(source: tuple[list, list], lo: int, hi: int):
    """The times of the pieces of `source` (_Plan._by_start: pieces that do not overlap)
    that overlap [lo, hi)."""
    starts, pieces = source
    i = bisect.bisect_right(starts, hi - 1) - 1
    while i >= 0 and pieces[i][1] > lo:
        yield pieces[i][2]
        i -= 1


@functools.lru_cache(maxsize=8)
def _plan(p: int, elements: int, chunk_elements: int, nearest_first: bool) -> _Plan:
    return _Plan(p, elements, chunk_elements, nearest_first)


def schedule(rank: int, world: int, elements: int, chunk_elements: int,
             nearest_first: bool = False) -> list:
    """Rank's operations, pipelined across the steps (base.in_time_order): a chunk goes on
    to the next partner as soon as it holds what it needs, not when the whole step is done.
    Step by step, the waits between steps cost Rabenseifner 1.10-1.14x its bound on star:4
    at 100 Mbit/s (docs/results/baselines.md)."""
    def core(rank, p):
        plan = _plan(p, elements, chunk_elements, nearest_first)
        timed = []
        for step, distance in enumerate(plan.distances):
            partner = rank ^ distance
            for phase, reduce in (("halving", True), ("doubling", False)):
                for start, stop, time in plan.sends(rank, phase, step):
                    timed.append((time, (phase, step, start), Send(partner, start, stop)))
                for start, stop, time in plan.received(rank, phase, step):
                    timed.append((time, (phase, step, start),
                                  Recv(partner, start, stop, reduce)))
        return in_time_order(timed)
    return folded(rank, world, elements, core)


def elements_moved(rank: int, world: int, elements: int,
                   nearest_first: bool = False) -> tuple[int, int]:
    p = power_of_two_below(world)
    core = 0
    if rank < p:
        blocks = block_bounds(elements, p)

        def size(lo, hi):
            return int(blocks[hi] - blocks[lo])
        # halving sends all blocks but its own and receives the halves it keeps;
        # doubling sends those halves back and receives all blocks but its own
        kept = halving_ranges(rank, p, nearest_first)
        core = (elements - size(*kept[-1])) + sum(size(lo, hi) for lo, hi in kept)
    both = folded_elements(rank, world, elements, core)
    return both, both


def steps(world: int) -> int:
    return 2 * (power_of_two_below(world).bit_length() - 1) + fold_steps(world)


def link_share(world: int) -> float:
    p = power_of_two_below(world)
    return 2 * (p - 1) / p + fold_steps(world)
