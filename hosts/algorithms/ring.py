"""ring: reduce-scatter then all-gather around the ring in N segments, chunked and
pipelined (`ring_plan`): 2(N-1) steps; any N.  A phase alone is the host reduce-scatter or
allgather: the collectives name the phases they take (contracts/collectives/, host_phases).

Cost (V the vector's bytes, S(j) the size of segment j of block_bounds(E, N), V/N when N
divides E): each rank sends and receives 2(N-1)/N V; the steps overlap, so the busiest link
carries one host's bytes: 2(N-1)/N V.  A phase (reducing, offset) alone sends every segment
but r + offset + 1 and receives every one but r + offset: (N-1)/N V each (reduce-scatter,
offset -1: sends V - S(r), receives V - S(r-1); allgather, offset 0: V - S(r+1), V - S(r)).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.algorithms.base import Recv, Send, block_bounds, chunks

FORMULA = "2(p-1)/p·E·4/B"


@dataclass(frozen=True)
class RingPlan:
    """Rank r's ring transfers in order.

    sends[j] = (elements, prerequisite): the elements to send right, and the index in
    `receives` that must have arrived first (-1 for none).  receives[j] = (elements,
    reduce): the elements arriving from the left, added (reduce-scatter) or stored
    (all-gather).
    """

    sends: list[tuple[slice, int]]
    receives: list[tuple[slice, bool]]


# The ring's phases, (reducing, offset): N-1 steps each; in step s of a phase rank r sends
# segment r - s + offset and receives segment r - s - 1 + offset, adding it when reducing.
# The allreduce: reduce-scatter (r ends it with segment r+1), then all-gather.
ALLREDUCE_PHASES = ((True, 0), (False, 1))


def ring_plan(rank: int, world: int, elements: int, chunk_elements: int,
              phases: tuple = ALLREDUCE_PHASES) -> RingPlan:
    """Steps 0..len(phases)(N-1)-1; the segment sent in step t is the one received in step
    t-1, chunked the same way, so chunk i of step t waits only for chunk i of step t-1."""
    bounds = block_bounds(elements, world)

    def segment_chunks(segment: int) -> list[slice]:
        start, stop = int(bounds[segment % world]), int(bounds[segment % world + 1])
        return [slice(lo, hi) for lo, hi in chunks(start, stop, chunk_elements)]

    sends: list[tuple[slice, int]] = []
    receives: list[tuple[slice, bool]] = []
    previous_receive_start = None
    steps = [(reducing, offset, s) for reducing, offset in phases
             for s in range(world - 1)]
    for reducing, offset, s in steps:
        send_segment = rank - s + offset
        receive_segment = rank - s - 1 + offset
        for i, part in enumerate(segment_chunks(send_segment)):
            sends.append((part, -1 if previous_receive_start is None
                          else previous_receive_start + i))
        previous_receive_start = len(receives)
        receives.extend((part, reducing) for part in segment_chunks(receive_segment))
    return RingPlan(sends, receives)


def schedule(rank: int, world: int, elements: int, chunk_elements: int,
             phases: tuple = ALLREDUCE_PHASES) -> list:
    """The ring plan as operations: each send right after the receive it waits for."""
    plan = ring_plan(rank, world, elements, chunk_elements, phases)
    right, left = (rank + 1) % world, (rank - 1) % world
    waiting: dict[int, list] = {}
    for part, prerequisite in plan.sends:
        waiting.setdefault(prerequisite, []).append(Send(right, part.start, part.stop))
    ops = list(waiting.pop(-1, []))
    for j, (part, reduce) in enumerate(plan.receives):
        ops.append(Recv(left, part.start, part.stop, reduce))
        ops += waiting.pop(j, [])
    return ops


def elements_moved(rank: int, world: int, elements: int,
                   phases: tuple = ALLREDUCE_PHASES) -> tuple[int, int]:
    seg = block_bounds(elements, world)

    def size(s):
        s %= world
        return int(seg[s + 1] - seg[s])
    # a phase sends every segment but r + offset + 1 and receives every one but r + offset
    return (sum(elements - size(rank + offset + 1) for _, offset in phases),
            sum(elements - size(rank + offset) for _, offset in phases))


def steps(world: int, phases: tuple = ALLREDUCE_PHASES) -> int:
    return len(phases) * (world - 1)


def link_share(world: float, phases: tuple = ALLREDUCE_PHASES) -> float:
    """Also for a real-valued world (plotted curves)."""
    return len(phases) * (world - 1) / world


def formula(phases: tuple = ALLREDUCE_PHASES) -> str:
    return FORMULA if len(phases) == 2 else "(p-1)/p·E·4/B"
