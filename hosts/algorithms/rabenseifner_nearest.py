"""rabenseifner-nearest: rabenseifner.py with the partners in MPICH's order, nearest first
(in step k, partner r XOR 2^k; rank r ends the halving with block bit-reverse(r) rather
than block r): the same bytes, steps and busiest link, but the largest halves stay between
neighbours.
"""

from __future__ import annotations

from hosts.algorithms import rabenseifner

FORMULA = rabenseifner.FORMULA
steps = rabenseifner.steps
link_share = rabenseifner.link_share


def schedule(rank: int, world: int, elements: int, chunk_elements: int) -> list:
    return rabenseifner.schedule(rank, world, elements, chunk_elements, nearest_first=True)


def elements_moved(rank: int, world: int, elements: int) -> tuple[int, int]:
    return rabenseifner.elements_moved(rank, world, elements, nearest_first=True)
