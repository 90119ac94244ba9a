"""binomial-tree: binomial reduce to rank 0 (in step k, a rank whose lowest set bit is 2^k
sends its partial sum to rank - 2^k), then binomial broadcast back down the same tree:
2*ceil(log2 N) steps of the whole vector, the broadcast chunked so that its levels
pipeline; any N, no folding needed.  Its phases, "reduce" and "broadcast", alone are the
host reduce to rank 0 and broadcast from it (the collectives name the phases they take:
contracts/collectives/, host_phases).

Cost (V the vector's bytes, c(r) rank r's children): rank r sends and receives
(c(r) + [r > 0])V; every step moves V over the busiest link: 2 ceil(log2 N)V.  The reduce
alone: r sends [r > 0]V and receives c(r)V; the broadcast alone the other way round; each
ceil(log2 N) steps, ceil(log2 N)V over the root's link.
"""

from __future__ import annotations

from hosts.algorithms.base import Recv, Send, ceil_log2, chunks

FORMULA = "2⌈log2 p⌉·E·4/B"
REDUCE, BROADCAST = "reduce", "broadcast"
ALLREDUCE_PHASES = (REDUCE, BROADCAST)


def binomial_children(rank: int, world: int) -> list[int]:
    """Children of `rank` in the binomial tree rooted at 0, in the order of the reduce steps."""
    children = []
    bit = 1
    while bit < world and not rank & bit:
        if rank + bit < world:
            children.append(rank + bit)
        bit <<= 1
    return children


def binomial_parent(rank: int) -> int | None:
    return None if rank == 0 else rank - (rank & -rank)


def schedule(rank: int, world: int, elements: int, chunk_elements: int,
             phases: tuple = ALLREDUCE_PHASES) -> list:
    """The reduce, whole vectors step by step, then the broadcast chunked (broadcast_schedule):
    sent whole, a rank's vectors to its children shared its link at once, so the largest
    subtree got the sum only after all of them had it, a level later at every level
    (1.49x the bound at 10 Mbit/s on leafspine:2,1,4; docs/results/baselines.md)."""
    ops = []
    if REDUCE in phases:
        parent = binomial_parent(rank)
        ops += [Recv(child, 0, elements, True) for child in binomial_children(rank, world)]
        ops += [] if parent is None else [Send(parent, 0, elements)]
    if BROADCAST in phases:
        ops += broadcast_schedule(rank, world, elements, chunk_elements)
    return ops


def broadcast_schedule(rank: int, world: int, elements: int, chunk_elements: int) -> list:
    """Rank 0's buffer down the tree: receive from the parent, forward to the children,
    largest subtree first, chunk by chunk."""
    parent, children = binomial_parent(rank), binomial_children(rank, world)
    ops = []
    for lo, hi in chunks(0, elements, chunk_elements):
        ops += [] if parent is None else [Recv(parent, lo, hi, False)]
        ops += [Send(child, lo, hi) for child in reversed(children)]
    return ops


def elements_moved(rank: int, world: int, elements: int,
                   phases: tuple = ALLREDUCE_PHASES) -> tuple[int, int]:
    up, down = (rank > 0) * elements, len(binomial_children(rank, world)) * elements
    sent = (up if REDUCE in phases else 0) + (down if BROADCAST in phases else 0)
    received = (down if REDUCE in phases else 0) + (up if BROADCAST in phases else 0)
    return sent, received


def steps(world: int, phases: tuple = ALLREDUCE_PHASES) -> int:
    return len(phases) * ceil_log2(world)


def link_share(world: int, phases: tuple = ALLREDUCE_PHASES) -> float:
    return float(len(phases) * ceil_log2(world))


def formula(phases: tuple = ALLREDUCE_PHASES) -> str:
    return FORMULA if len(phases) == 2 else "⌈log2 p⌉·E·4/B"
