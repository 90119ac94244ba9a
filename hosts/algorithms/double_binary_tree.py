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

from hosts.algorithms.base import (HOP, Recv, Send, chunks, in_time_order,
                                   power_of_two_below)

FORMULA = "max(a+b)/2·E·4/B ≤ 2·E·4/B"
# The wave (`schedule`) takes about 2H hops to fill and drain (H the taller tree's height),
# while a rank sends less than its share; so each half is cut into at least
# CHUNKS_PER_LEVEL * H chunks, but none smaller than MIN_CHUNK_ELEMENTS (unless the caller's
# chunks are).  Simulated (experiments/fabric_bound.py) at 100 Mbit/s, with 64 KiB chunks as
# the other algorithms: 1.05x its bound on star:4, 1.27x on leafspine:2,1,4 (16 chunks a
# half); with these, 1.03x and 1.07x.
CHUNKS_PER_LEVEL = 32
MIN_CHUNK_ELEMENTS = 1024


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
    return max(depths(parent).values())


def heights(children: dict) -> dict:
    """{rank: height}: 0 for a leaf, one more than its highest child otherwise."""
    height: dict = {}

    def of(rank):
        if rank not in height:
            height[rank] = 1 + max((of(c) for c in children[rank]), default=-1)
        return height[rank]
    for rank in children:
        of(rank)
    return height


def depths(parents: dict) -> dict:
    depth: dict = {}

    def of(rank):
        if rank not in depth:
            depth[rank] = 0 if parents[rank] is None else 1 + of(parents[rank])
        return depth[rank]
    for rank in parents:
        of(rank)
    return depth


def schedule(rank: int, world: int, elements: int, chunk_elements: int) -> list:
    """Chunk i of a tree goes up and comes down as a wave, one level a HOP
    (base.in_time_order): a rank of height h sends it to its parent at time i + h·HOP, the
    root (height H) sends it down at i + H·HOP, a rank of depth d on at i + (H + d)·HOP.
    Each rank so receives chunk i of one tree's broadcast while it reduces later chunks of
    both trees.  (Reducing every chunk before broadcasting any, as this schedule first did,
    left the broadcast's links idle through the reduce phase: 2.6-2.7x its bound on star:4,
    3.8-4.3x on leafspine:2,1,4, in docs/results/baselines.md before the wave.)"""
    half = elements // 2
    trees = double_binary_trees(world)
    levels = [(heights(children), depths(parents)) for parents, children in trees]
    top_height = max(max(height.values()) for height, _ in levels)
    chunk_elements = min(chunk_elements, max(MIN_CHUNK_ELEMENTS, -(-(elements - half) // (
        CHUNKS_PER_LEVEL * max(1, top_height)))))
    timed = []
    for tree, ((parents, children), (height, depth), (lo, hi)) in enumerate(
            zip(trees, levels, ((0, half), (half, elements)))):
        top = max(height.values())
        up, down = parents[rank], children[rank]
        for i, (start, stop) in enumerate(chunks(lo, hi, chunk_elements)):
            for child in down:                                  # up: the children's ...
                timed.append((i + height[child] * HOP, (tree, 0, i, child),
                              Recv(child, start, stop, True)))
            if up is not None:                                  # ... sum goes on up
                timed.append((i + height[rank] * HOP, (tree, 0, i, rank),
                              Send(up, start, stop)))
                timed.append((i + (top + depth[up]) * HOP, (tree, 1, i, up),
                              Recv(up, start, stop, False)))
            for child in down:                                  # down to the children
                timed.append((i + (top + depth[rank]) * HOP, (tree, 1, i, rank),
                              Send(child, start, stop)))
    return in_time_order(timed)


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
