"""Every rank's host schedule as the simulator's messages (`host_programs`), shared by the
Python actors (simulation/host_algorithms.py) and the C++ engine's input (simulation/run.py).

A schedule (hosts/schedules.py) is a byte stream between two ranks, as TCP is; a simulated
message is received whole, so the sends and receives of each stream are cut at the same
places here, the bytes and their order unchanged.
"""

from __future__ import annotations

import bisect

from hosts.allreduce import DEFAULT_CHUNK_BYTES
from hosts.schedules import Recv, Send, schedule

CHUNK_ELEMENTS = DEFAULT_CHUNK_BYTES // 4     # the workers' --chunk-bytes default, int32


def host_programs(algorithm: str, world: int, elements: int,
                  chunk_elements: int = CHUNK_ELEMENTS) -> list:
    """Every rank's schedule (hosts/schedules.py) with its messages cut to match: a schedule
    is a byte stream between two ranks (TCP), so a rank may send in one piece what its peer
    receives in several (ps: a worker sends its vector whole, rank 0 receives it chunk by
    chunk); a simulated message is received whole, so each Send and Recv is split at every
    boundary either side has in that stream.  The bytes and their order are unchanged."""
    programs = [schedule(algorithm, rank, world, elements, chunk_elements)
                for rank in range(world)]
    cuts: dict = {}
    for rank, ops in enumerate(programs):
        ends: dict = {}
        for op in ops:
            side = ((rank, op.peer) if isinstance(op, Send) else (op.peer, rank),
                    isinstance(op, Send))
            ends[side] = ends.get(side, 0) + op.stop - op.start
            cuts.setdefault(side[0], set()).add(ends[side])
    if _same_cuts(programs, cuts):
        return programs
    ordered = {pair: sorted(ends) for pair, ends in cuts.items()}
    matched = []
    for rank, ops in enumerate(programs):
        offset: dict = {}
        out = []
        for op in ops:
            pair = (rank, op.peer) if isinstance(op, Send) else (op.peer, rank)
            first = offset.get((pair, isinstance(op, Send)), 0)
            last = first + op.stop - op.start
            offset[(pair, isinstance(op, Send))] = last
            ends = ordered[pair]
            start = op.start
            for end in ends[bisect.bisect_right(ends, first):bisect.bisect_left(ends, last) + 1]:
                stop = op.start + end - first
                out.append(Send(op.peer, start, stop) if isinstance(op, Send)
                           else Recv(op.peer, start, stop, op.reduce))
                start = stop
        matched.append(out)
    return matched


def _same_cuts(programs: list, cuts: dict) -> bool:
    """Whether every stream already has its sends and receives cut at the same places."""
    counts: dict = {}
    for rank, ops in enumerate(programs):
        for op in ops:
            pair = (rank, op.peer) if isinstance(op, Send) else (op.peer, rank)
            counts[pair] = counts.get(pair, 0) + 1
    return all(counts[pair] == 2 * len(ends) for pair, ends in cuts.items())
