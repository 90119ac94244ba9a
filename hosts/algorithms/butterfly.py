"""butterfly (recursive doubling): in step k rank r exchanges its whole vector with r XOR 2^k
and both add (IEEE addition commutes, so both get the same bits).  Needs a power of two:
when N is not one, each extra rank P+i first folds its vector into rank i and gets the
result back from it at the end (L + 2 steps; P = 2^floor(log2 N), L = log2 P).

Cost (V the vector's bytes, f = 1 when N is not a power of two): ranks below N-P send and
receive (L+1)V, the others below P LV, the folded ranks V; every step moves V over the
busiest link: (L + 2f)V.
"""

from __future__ import annotations

from hosts.algorithms.base import (Recv, Send, fold_steps, folded, folded_elements,
                                   power_of_two_below)

FORMULA = "(log2 P + 2f)·E·4/B"


def schedule(rank: int, world: int, elements: int, chunk_elements: int) -> list:
    def core(rank, p):
        ops = []
        distance = 1
        while distance < p:
            partner = rank ^ distance
            ops += [Send(partner, 0, elements), Recv(partner, 0, elements, True)]
            distance <<= 1
        return ops
    return folded(rank, world, elements, core)


def elements_moved(rank: int, world: int, elements: int) -> tuple[int, int]:
    log_p = power_of_two_below(world).bit_length() - 1
    both = folded_elements(rank, world, elements, log_p * elements)
    return both, both


def steps(world: int) -> int:
    return power_of_two_below(world).bit_length() - 1 + fold_steps(world)


def link_share(world: int) -> float:
    return float(steps(world))
