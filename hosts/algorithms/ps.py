"""ps (parameter server): every rank sends its vector to rank 0, which adds them (chunk by
chunk, round-robin over the ranks, so all N-1 flows converge on its link at once: incast)
and then sends the sum back to each rank.  Two steps; any N.

Cost (V the vector's bytes): rank 0 sends and receives (N-1)V, the others V; the busiest
link is the root's, which first receives (N-1)V and then sends (N-1)V: 2(N-1)V.
"""

from __future__ import annotations

from hosts.algorithms.base import Recv, Send, chunks

FORMULA = "2(p-1)·E·4/B"


def schedule(rank: int, world: int, elements: int, chunk_elements: int) -> list:
    if rank != 0:
        return [Send(0, 0, elements), Recv(0, 0, elements, False)]
    ops = [Recv(peer, lo, hi, True) for lo, hi in chunks(0, elements, chunk_elements)
           for peer in range(1, world)]
    return ops + [Send(peer, 0, elements) for peer in range(1, world)]


def elements_moved(rank: int, world: int, elements: int) -> tuple[int, int]:
    both = (world - 1) * elements if rank == 0 else elements
    return both, both


def steps(world: int) -> int:
    return 2


def link_share(world: int) -> float:
    return 2.0 * (world - 1)
