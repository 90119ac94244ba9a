"""double-binary-tree: two binary trees over all ranks, each reducing and then broadcasting
half of the vector, chunked and pipelined.  Tree A is the in-order binary tree on positions
1..N (rank = position - 1): a position's height is its number of trailing zero bits, so the
odd positions are the leaves and the even ones the inner nodes.  Tree B is tree A with the
positions mirrored (q = N+1-p) when N is even and shifted by one (q = p mod N + 1) when N
is odd, which turns A's leaves into B's inner nodes and back (for odd N one rank is a leaf
in both).  Every rank thus sends and receives at most about 2E values however large N is.
Any N.

Cost (V the vector's bytes, a(r) and b(r) rank r's neighbours, children and parent, in
trees A and B): rank r sends and receives (a(r) + b(r))V/2; 2 * depth steps, pipelined, so
the busiest link carries the busiest host's bytes: max_r (a+b)V/2, at most 2V.
"""

from __future__ import annotations

import functools

from hosts.algorithms.base import Recv, Send, chunks, power_of_two_below

FORMULA = "max(a+b)/2·E·4/B ≤ 2·E·4/B"


def inorder_tree(n: int) -> tuple[dict, dict, int]:
    """(parent, children, root) of the in-order binary tree on positions 1..n: position p
    with lowest set bit b has children p - b/2 and the largest p + b/2^j <= n (j >= 1)."""
    root = power_of_two_below(n)
    children: dict[int, list[int]] = {p: [] for p in range(1, n + 1)}
    parent: dict[int, int | None] = {root: None}
    for p in range(1, n + 1):
        half = (p & -p) >> 1
        if half:
            children[p].append(p - half)
            while half and p + half > n:
                half >>= 1
            if half:
                children[p].append(p + half)
        for child in children[p]:
            parent[child] = p
    return parent, children, root


@functools.lru_cache(maxsize=4)
def double_binary_trees(world: int) -> tuple[tuple[dict, dict], ...]:
    """The two trees as ({rank: parent rank or None}, {rank: [child ranks]}); built once per
    world (every rank's schedule and cost asks for them: rebuilding them each time made a
    simulation of N ranks quadratic), so callers must not change them."""
    parent, children, _ = inorder_tree(world)
    if world % 2 == 0:
        position_b = [world - rank for rank in range(world)]                # mirrored
    else:
        position_b = [(rank + 1) % world + 1 for rank in range(world)]      # shifted
    trees = []
    for position in ([rank + 1 for rank in range(world)], position_b):
        rank_at = {p: rank for rank, p in enumerate(position)}
        trees.append((
            {rank: None if parent[p] is None else rank_at[parent[p]]
             for rank, p in enumerate(position)},
            {rank: [rank_at[c] for c in children[p]] for rank, p in enumerate(position)}))
    return tuple(trees)


def tree_depth(parent: dict) -> int:
    def depth(rank):
        d = 0
        while parent[rank] is not None:
            rank, d = parent[rank], d + 1
        return d
    return max(depth(rank) for rank in parent)


def schedule(rank: int, world: int, elements: int, chunk_elements: int) -> list:
    half = elements // 2
    trees = list(zip(double_binary_trees(world), ((0, half), (half, elements))))
    parts = [chunks(lo, hi, chunk_elements) for _, (lo, hi) in trees]
    reduce_ops, broadcast_ops = [], []
    for i in range(max(len(p) for p in parts)):
        for ((parents, children), _), pieces in zip(trees, parts):
            if i >= len(pieces):
                continue
            lo, hi = pieces[i]
            up, down = parents[rank], children[rank]
            reduce_ops += [Recv(child, lo, hi, True) for child in down]
            broadcast_ops += [] if up is None else [Recv(up, lo, hi, False)]
            reduce_ops += [] if up is None else [Send(up, lo, hi)]
            broadcast_ops += [Send(child, lo, hi) for child in down]
    return reduce_ops + broadcast_ops


def _neighbours(rank: int, trees: list) -> list[int]:
    """Rank's neighbours (children and parent) in each tree."""
    return [len(children[rank]) + (parents[rank] is not None) for parents, children in trees]


def elements_moved(rank: int, world: int, elements: int) -> tuple[int, int]:
    halves = (elements // 2, elements - elements // 2)
    total = sum(n * part for n, part in zip(_neighbours(rank, double_binary_trees(world)),
                                            halves))
    return total, total


def steps(world: int) -> int:
    return 2 * max(tree_depth(parents) for parents, _ in double_binary_trees(world))


def link_share(world: int) -> float:
    trees = double_binary_trees(world)
    return max(sum(_neighbours(r, trees)) for r in range(world)) / 2
