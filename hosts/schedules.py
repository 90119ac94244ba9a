"""Running the host algorithms' schedules: the collectives they serve and an in-process run.

The algorithms themselves, each a schedule plus its cost, are one file each under
hosts/algorithms/ (the registry and the list ALGORITHMS: hosts/algorithms/__init__.py; the
operations Send and Recv: hosts/algorithms/base.py).  `schedule` is the allreduce of one of
them; `collective_schedule` picks the schedule of a collective; `simulate` runs the
schedules of all ranks in one process (no sockets) for the tests; hosts/allreduce.py runs
one rank's schedule over TCP.

Every allreduce result element is a sum of the N inputs formed by N-1 additions in some
order, so float32 results lie within gamma_{N-1} * sum |x| of the exact sum, as the ring's
do, and all ranks end with the same bits (results are copied, never recomputed).  The bytes
each rank sends and receives, and the steps, are stated in hosts/bounds.py.

The other collectives (`collective_schedule`): each names the phases of the algorithms that
make it (contracts/collectives/, host_phases): the ring's two phases on their own, the
binomial tree's halves; the other algorithms have no schedule for them.

ALGORITHMS, Send, Recv, peers_of and block_bounds are named here too for the simulator's
modules (simulation/run.py, host_algorithms.py, cpp_engine.py), which import them from here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from contracts import collectives
from contracts.collectives.base import WHOLE
from contracts.jobs import COLLECTIVES, SUPPORTED  # noqa: F401  (the registry's)
from hosts import algorithms
from hosts.algorithms import ALGORITHMS
from hosts.algorithms.base import Recv, Send, block_bounds, peers_of  # noqa: F401


def check_supported(collective, algorithm: str):
    """The phases of `algorithm` that make `collective` (contracts/collectives/: WHOLE, its
    allreduce, or the phases its file names); ValueError (one line) when it has none."""
    algorithms.module(algorithm)                      # an unknown name fails here
    return collectives.get(collective).phases(algorithm)


def phase_arguments(collective, algorithm: str) -> tuple:
    """What the algorithm's schedule and cost functions take after their usual arguments for
    `collective`: nothing for its allreduce, else the phases."""
    phases = check_supported(collective, algorithm)
    return () if phases is WHOLE else (phases,)


def collective_schedule(collective, algorithm: str, rank: int, world: int,
                        elements: int, chunk_elements: int) -> list:
    """Rank `rank`'s operations for one collective over a buffer of `elements` values: the
    algorithm's allreduce, or its phases that the collective names (the ring's reduce phase
    alone for the sum into shards, its gather phase for allgather, the binomial tree's broadcast
    or reduce half for broadcast and reduce; contracts/collectives/)."""
    phases = phase_arguments(collective, algorithm)
    if world == 1 or elements == 0:
        return []
    ops = algorithms.module(algorithm).schedule(rank, world, elements, max(1, chunk_elements),
                                                *phases)
    return [op for op in ops if op.stop > op.start]     # empty blocks of short vectors


def schedule(algorithm: str, rank: int, world: int, elements: int,
             chunk_elements: int) -> list:
    """Rank `rank`'s allreduce operations (the algorithm's file under hosts/algorithms/)."""
    return collective_schedule(collectives.ALLREDUCE, algorithm, rank, world, elements,
                               chunk_elements)


# ---- sums ---------------------------------------------------------------------------------
def accumulate(destination: np.ndarray, incoming: np.ndarray) -> bool:
    """destination += incoming; int32 wraps as hardware would; True if it wrapped."""
    if destination.dtype == np.int32 and len(destination):
        total = destination + incoming                  # numpy's int32 sum wraps
        # a sum wrapped where it has the sign of neither addend (three passes, no int64 copy:
        # 2.7x faster than the widened sum at 16,384 elements)
        wrapped = np.bitwise_and(destination ^ total, incoming ^ total)
        destination[:] = total
        return bool(wrapped.min() < 0)
    np.add(destination, incoming, out=destination)
    return False


@dataclass
class Simulated:
    results: list            # per rank
    bytes_sent: list         # per rank
    bytes_received: list
    overflow: list


def _take(wire: deque, wanted: int) -> np.ndarray:
    """The next `wanted` elements of a stream held as a queue of arrays."""
    pieces = []
    while wanted:
        head = wire.popleft()
        if len(head) > wanted:
            wire.appendleft(head[wanted:])
            head = head[:wanted]
        pieces.append(head)
        wanted -= len(head)
    return np.concatenate(pieces) if len(pieces) != 1 else pieces[0]


def simulate(algorithm: str, inputs: list, chunk_elements: int = 1 << 14,
             collective: str = "allreduce") -> Simulated:
    """Run every rank's schedule in this process, each pair of ranks joined by a FIFO
    stream of elements (as TCP is a stream of bytes: no sockets here); raises RuntimeError
    on a deadlock or on elements sent but never received.  The results are the whole
    buffers (for a sharded result, rank r's segment r of it is the collective's result)."""
    world = len(inputs)
    buffers = [np.array(x, copy=True) for x in inputs]
    elements = len(buffers[0])
    programs = [collective_schedule(collective, algorithm, rank, world, elements,
                                    chunk_elements) for rank in range(world)]
    position = [0] * world
    wires: dict[tuple[int, int], deque] = {}
    sent, received, overflow = [0] * world, [0] * world, [False] * world
    while any(position[r] < len(programs[r]) for r in range(world)):
        progressed = False
        for rank in range(world):
            while position[rank] < len(programs[rank]):
                op = programs[rank][position[rank]]
                if isinstance(op, Send):
                    data = buffers[rank][op.start:op.stop].copy()
                    wires.setdefault((rank, op.peer), deque()).append(data)
                    sent[rank] += data.nbytes
                else:
                    wire = wires.get((op.peer, rank))
                    wanted = op.stop - op.start
                    if not wire or sum(len(piece) for piece in wire) < wanted:
                        break
                    data = _take(wire, wanted)
                    target = buffers[rank][op.start:op.stop]
                    if op.reduce:
                        overflow[rank] |= accumulate(target, data)
                    else:
                        target[:] = data
                    received[rank] += data.nbytes
                position[rank] += 1
                progressed = True
        if not progressed:
            stuck = {r: programs[r][position[r]] for r in range(world)
                     if position[r] < len(programs[r])}
            raise RuntimeError(f"{algorithm}: deadlock with N={world}: {stuck}")
    left = {key: sum(len(piece) for piece in q) for key, q in wires.items() if q}
    if left:
        raise RuntimeError(f"{algorithm}: messages never received: {left}")
    return Simulated(buffers, sent, received, overflow)
