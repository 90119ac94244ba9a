"""What every host algorithm's file builds on: the two operations of a schedule (`Send`,
`Recv`), the near-equal partition of a vector (`block_bounds`), chunking, and the folding of
the ranks beyond a power of two (butterfly and both Rabenseifners use it).

A schedule is what rank r does, in order: `Send(peer, start, stop)` sends elements
[start, stop) of its buffer as they are at that moment; `Recv(peer, start, stop, reduce)`
receives that many elements from `peer` and adds them into (reduce) or stores them over
(not reduce) the same elements.  Sends never block (hosts/transport.py queues them), a
receive waits for its data, and between two ranks the messages arrive in the order sent.

A pipelined schedule is easiest to state as messages with times (`in_time_order`): each
message's send time is at least HOP after the send times of the messages it needs, both of
its ends compute the same time for it, and every rank does its operations in time order, a
message's receive RECEIVE_LAG after its send, a time's sends before its receives.  Both ends
then see each pair's messages in one order, and no rank waits forever: once every operation
before time t is done, every send of time t can be posted, and so every receive of time t
finds its data (sent at t - RECEIVE_LAG).  The lag lets a rank post the sends of the next
time before it waits for what was just sent to it: without it each time step cost a
message's whole trip, and the double binary tree took 1.4x its bound in the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.collectives.base import block_bounds  # noqa: F401  (the shards every rank agrees on)


@dataclass(frozen=True)
class Send:
    peer: int
    start: int
    stop: int


@dataclass(frozen=True)
class Recv:
    peer: int
    start: int
    stop: int
    reduce: bool


RECEIVE_LAG = 1
HOP = RECEIVE_LAG + 1        # from a message's send to the earliest send that needs it


def in_time_order(timed: list) -> list:
    """The operations of [(send time, tie, op)] in time order (the module docstring): a
    Recv at its message's send time + RECEIVE_LAG, a time's sends before its receives.
    `tie` orders the messages of one time and must be the same at both ends of a message."""
    keyed = [(time + (RECEIVE_LAG if isinstance(op, Recv) else 0), isinstance(op, Recv), tie,
              op) for time, tie, op in timed]
    return [op for _, _, _, op in sorted(keyed, key=lambda entry: entry[:3])]


def peers_of(ops: list) -> set:
    return {op.peer for op in ops}


def power_of_two_below(world: int) -> int:
    """P = 2^floor(log2 N): the ranks that take part after folding."""
    return 1 << (world.bit_length() - 1)


def ceil_log2(world: int) -> int:
    return (world - 1).bit_length()


def fold_steps(world: int) -> int:
    """2f: the two extra steps (fold in, result back) when N is not a power of two."""
    return 2 if power_of_two_below(world) != world else 0


def chunks(start: int, stop: int, chunk_elements: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + chunk_elements, stop)) for lo in range(start, stop, chunk_elements)]


def folded(rank, world, elements, core):
    """Ranks P..N-1 fold their vector into rank - P first and get the result back last;
    ranks 0..P-1 run `core(rank, P)` in between."""
    p = power_of_two_below(world)
    if rank >= p:
        return [Send(rank - p, 0, elements), Recv(rank - p, 0, elements, False)]
    extra = rank + p if rank + p < world else None
    ops = [] if extra is None else [Recv(extra, 0, elements, True)]
    ops += core(rank, p)
    return ops + ([] if extra is None else [Send(extra, 0, elements)])


def folded_elements(rank: int, world: int, elements: int, core: int) -> int:
    """Elements rank sends (and receives) in a folded algorithm whose power-of-two core
    moves `core` of them: a folded rank only its vector out and the sum back."""
    p = power_of_two_below(world)
    if rank >= p:
        return elements
    return core + (elements if rank + p < world else 0)
