"""rabenseifner: a reduce phase by recursive halving (in step k, partner r XOR P/2^(k+1);
each keeps half of its current block range and sends the other half), then all-gather by
recursive doubling in the reverse order; P blocks of E/P elements (P = 2^floor(log2 N),
L = log2 P).  Extra ranks fold in first and get the result back at the end as in butterfly
(2L + 2 steps).  The first partner is P/2 away: the largest halves travel between the most
distant ranks, which on a leaf-spine fabric with consecutive ranks under one leaf means
across the spine.  rabenseifner_nearest.py is the same with the partners nearest first.

Cost (V the vector's bytes, f = 1 when N is not a power of two): ranks below N-P send and
receive (2(P-1)/P + 1)V, the others below P 2(P-1)/P V, the folded ranks V; 2L + 2f steps;
busiest link (2(P-1)/P + 2f)V.
"""

from __future__ import annotations

from hosts.algorithms.base import (Recv, Send, block_bounds, fold_steps, folded,
                                   folded_elements, power_of_two_below)

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


def schedule(rank: int, world: int, elements: int, chunk_elements: int,
             nearest_first: bool = False) -> list:
    def core(rank, p):
        bounds = block_bounds(elements, p)

        def span(blocks):
            return int(bounds[blocks[0]]), int(bounds[blocks[1]])

        ops = []
        previous = (0, p)
        steps = list(zip(halving_ranges(rank, p, nearest_first),
                         halving_distances(p, nearest_first)))
        for (lo, hi), distance in steps:          # the reduce phase, recursive halving
            partner = rank ^ distance
            given = (previous[0], lo) if lo > previous[0] else (hi, previous[1])
            ops += [Send(partner, *span(given)), Recv(partner, *span((lo, hi)), True)]
            previous = (lo, hi)
        for (lo, hi), distance in reversed(steps):    # all-gather by recursive doubling
            partner = rank ^ distance
            size = hi - lo                        # the partner holds the other half
            other = (lo + size, hi + size) if not rank & distance else (lo - size, hi - size)
            ops += [Send(partner, *span((lo, hi))), Recv(partner, *span(other), False)]
        return ops
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
