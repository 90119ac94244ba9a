"""The host-only allreduce algorithms as schedules: per rank, a list of sends and receives.

A schedule is what rank r does, in order: `Send(peer, start, stop)` sends elements
[start, stop) of its buffer as they are at that moment; `Recv(peer, start, stop, reduce)`
receives that many elements from `peer` and adds them into (reduce) or stores them over
(not reduce) the same elements.  Sends never block (hosts/transport.py queues them), a
receive waits for its data, and between two ranks the messages arrive in the order sent.
`simulate` runs the schedules of all ranks in one process (no sockets) for the tests;
hosts/allreduce.py runs one rank's schedule over TCP.

With N ranks, E elements, P = 2^floor(log2 N) and L = log2 P:

* ps (parameter server): every rank sends its vector to rank 0, which adds them (chunk by
  chunk, round-robin over the ranks, so all N-1 flows converge on its link at once: incast)
  and then sends the sum back to each rank.  Two steps; any N.
* binomial-tree: binomial reduce to rank 0 (in step k, a rank whose lowest set bit is 2^k
  sends its partial sum to rank - 2^k), then binomial broadcast back down the same tree:
  2*ceil(log2 N) steps of the whole vector; any N, no folding needed.
* butterfly (recursive doubling): in step k rank r exchanges its whole vector with r XOR 2^k
  and both add (IEEE addition commutes, so both get the same bits).  Needs a power of two:
  when N is not one, each extra rank P+i first folds its vector into rank i and gets the
  result back from it at the end (L + 2 steps).
* ring: reduce-scatter then all-gather around the ring in N segments, chunked and pipelined
  (`ring_plan`): 2(N-1) steps; any N.
* rabenseifner: reduce-scatter by recursive halving (in step k, partner r XOR P/2^(k+1);
  each keeps half of its current block range and sends the other half), then all-gather by
  recursive doubling in the reverse order; P blocks of E/P elements.  Extra ranks fold in
  first and get the result back at the end as in butterfly (2L + 2 steps).  The first
  partner is P/2 away: the largest halves travel between the most distant ranks, which on
  a leaf-spine fabric with consecutive ranks under one leaf means across the spine.
* rabenseifner-nearest: the same with the partners in MPICH's order, nearest first (in
  step k, partner r XOR 2^k; rank r ends the halving with block bit-reverse(r) rather than
  block r): the same bytes and steps, but the largest halves stay between neighbours.
* double-binary-tree: two binary trees over all ranks, each reducing and then broadcasting
  half of the vector, chunked and pipelined.  Tree A is the in-order binary tree on
  positions 1..N (rank = position - 1): a position's height is its number of trailing zero
  bits, so the odd positions are the leaves and the even ones the inner nodes.  Tree B is
  tree A with the positions mirrored (q = N+1-p) when N is even and shifted by one
  (q = p mod N + 1) when N is odd, which turns A's leaves into B's inner nodes and back
  (for odd N one rank is a leaf in both).  Every rank thus sends and receives at most about
  2E values however large N is.  Any N.

Every result element is a sum of the N inputs formed by N-1 additions in some order, so
float32 results lie within gamma_{N-1} * sum |x| of the exact sum, as the ring's do, and all
ranks end with the same bits (results are copied, never recomputed).  The bytes each rank
sends and receives, and the steps, are stated in hosts/bounds.py.

The other collectives (`collective_schedule`, SUPPORTED): reduce-scatter and allgather are
the ring's two phases on their own, broadcast is the binomial tree's broadcast half from
rank 0; the other algorithms have no schedule for them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

ALGORITHMS = ("ps", "binomial-tree", "butterfly", "ring", "rabenseifner",
              "double-binary-tree", "rabenseifner-nearest")
RABENSEIFNERS = ("rabenseifner", "rabenseifner-nearest")     # the two partner orders
COLLECTIVES = ("allreduce", "reduce-scatter", "allgather", "broadcast")
# The algorithms each collective has a schedule for (see collective_schedule).
SUPPORTED = {"allreduce": ALGORITHMS, "reduce-scatter": ("ring",), "allgather": ("ring",),
             "broadcast": ("binomial-tree",)}


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


def peers_of(ops: list) -> set:
    return {op.peer for op in ops}


def power_of_two_below(world: int) -> int:
    """P = 2^floor(log2 N): the ranks that take part after folding."""
    return 1 << (world.bit_length() - 1)


def ceil_log2(world: int) -> int:
    return (world - 1).bit_length()


def check_supported(collective: str, algorithm: str) -> None:
    """ValueError (one line) unless `algorithm` has a schedule for `collective`."""
    if collective not in SUPPORTED:
        raise ValueError(f"unknown collective {collective!r} (choose from "
                         f"{', '.join(COLLECTIVES)})")
    if algorithm not in SUPPORTED[collective]:
        raise ValueError(f"{algorithm} is not supported for the collective {collective} "
                         f"(supported: {', '.join(SUPPORTED[collective])})")


def collective_schedule(collective: str, algorithm: str, rank: int, world: int,
                        elements: int, chunk_elements: int) -> list:
    """Rank `rank`'s operations for one collective over a buffer of `elements` values:

    * allreduce: `schedule` (every rank ends with the sum);
    * reduce-scatter (ring): the ring's reduce-scatter phase with the segments shifted so
      that rank r ends with segment r of the sum (block_bounds(E, N)), N-1 steps;
    * allgather (ring): rank r starts with its own segment r valid and every rank ends with
      all N segments, each copied from its owner, N-1 steps;
    * broadcast (binomial-tree): rank 0's buffer goes down the binomial tree rooted at 0
      (a rank receives from binomial_parent and forwards to binomial_children, largest
      subtree first), chunked so the levels pipeline; ceil(log2 N) levels.
    """
    check_supported(collective, algorithm)
    if collective == "allreduce":
        return schedule(algorithm, rank, world, elements, chunk_elements)
    if world == 1 or elements == 0:
        return []
    chunk_elements = max(1, chunk_elements)
    if collective == "broadcast":
        parent, children = binomial_parent(rank), binomial_children(rank, world)
        ops = []
        for lo, hi in chunks(0, elements, chunk_elements):
            ops += [] if parent is None else [Recv(parent, lo, hi, False)]
            ops += [Send(child, lo, hi) for child in reversed(children)]
        return ops
    ops = _ring(rank, world, elements, chunk_elements, collective)
    return [op for op in ops if op.stop > op.start]


def schedule(algorithm: str, rank: int, world: int, elements: int,
             chunk_elements: int) -> list:
    """Rank `rank`'s allreduce operations (see the module docstring)."""
    if world == 1 or elements == 0:
        return []
    builders = {"ps": _ps, "binomial-tree": _binomial_tree, "butterfly": _butterfly,
                "ring": _ring, "rabenseifner": _rabenseifner,
                "rabenseifner-nearest": _rabenseifner_nearest,
                "double-binary-tree": _double_binary_tree}
    if algorithm not in builders:
        raise ValueError(f"unknown algorithm {algorithm!r} (choose from "
                         f"{', '.join(ALGORITHMS)})")
    ops = builders[algorithm](rank, world, elements, max(1, chunk_elements))
    return [op for op in ops if op.stop > op.start]     # empty blocks of short vectors


def chunks(start: int, stop: int, chunk_elements: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + chunk_elements, stop)) for lo in range(start, stop, chunk_elements)]


# ---- parameter server -----------------------------------------------------------------------
def _ps(rank, world, elements, chunk_elements):
    if rank != 0:
        return [Send(0, 0, elements), Recv(0, 0, elements, False)]
    ops = [Recv(peer, lo, hi, True) for lo, hi in chunks(0, elements, chunk_elements)
           for peer in range(1, world)]
    return ops + [Send(peer, 0, elements) for peer in range(1, world)]


# ---- binomial tree ----------------------------------------------------------------------------
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


def _binomial_tree(rank, world, elements, chunk_elements):
    children = binomial_children(rank, world)
    parent = binomial_parent(rank)
    ops = [Recv(child, 0, elements, True) for child in children]
    if parent is not None:
        ops += [Send(parent, 0, elements), Recv(parent, 0, elements, False)]
    return ops + [Send(child, 0, elements) for child in reversed(children)]


# ---- folding of the ranks beyond a power of two ---------------------------------------------
def _folded(rank, world, elements, core):
    """Ranks P..N-1 fold their vector into rank - P first and get the result back last;
    ranks 0..P-1 run `core(rank, P)` in between."""
    p = power_of_two_below(world)
    if rank >= p:
        return [Send(rank - p, 0, elements), Recv(rank - p, 0, elements, False)]
    extra = rank + p if rank + p < world else None
    ops = [] if extra is None else [Recv(extra, 0, elements, True)]
    ops += core(rank, p)
    return ops + ([] if extra is None else [Send(extra, 0, elements)])


def _butterfly(rank, world, elements, chunk_elements):
    def core(rank, p):
        ops = []
        distance = 1
        while distance < p:
            partner = rank ^ distance
            ops += [Send(partner, 0, elements), Recv(partner, 0, elements, True)]
            distance <<= 1
        return ops
    return _folded(rank, world, elements, core)


def block_bounds(elements: int, blocks: int) -> np.ndarray:
    """Bounds of `blocks` near-equal parts (sizes differ by at most one element)."""
    return np.linspace(0, elements, blocks + 1).astype(np.int64)


def halving_distances(p: int, nearest_first: bool = False) -> list[int]:
    """The partner distances of Rabenseifner's halving steps: P/2, P/4, .., 1, or the
    reverse (MPICH's nearest-first order)."""
    distances = [p >> k for k in range(1, p.bit_length())]
    return distances[::-1] if nearest_first else distances


def halving_ranges(rank: int, p: int, nearest_first: bool = False) -> list[tuple[int, int]]:
    """Rabenseifner's block ranges of `rank` after each halving step: the range kept in
    the step with partner rank XOR d (d from halving_distances), the upper half where rank
    has bit d set; the last one is the block it owns (block `rank`, or its bit reverse
    nearest first)."""
    lo, hi = 0, p
    kept = []
    for distance in halving_distances(p, nearest_first):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if rank & distance else (lo, mid)
        kept.append((lo, hi))
    return kept


def _rabenseifner(rank, world, elements, chunk_elements, nearest_first=False):
    def core(rank, p):
        bounds = block_bounds(elements, p)

        def span(blocks):
            return int(bounds[blocks[0]]), int(bounds[blocks[1]])

        ops = []
        previous = (0, p)
        steps = list(zip(halving_ranges(rank, p, nearest_first),
                         halving_distances(p, nearest_first)))
        for (lo, hi), distance in steps:          # reduce-scatter by recursive halving
            partner = rank ^ distance
            given = (previous[0], lo) if lo > previous[0] else (hi, previous[1])
            ops += [Send(partner, *span(given)), Recv(partner, *span((lo, hi)), True)]
            previous = (lo, hi)
        for (lo, hi), distance in reversed(steps):    # all-gather by recursive doubling
            partner = rank ^ distance
            size = hi - lo                        # the partner holds the other half
            other = (lo + size, hi + size) if not rank & distance else (lo - size, hi - size)
            ops += [Send(partner, *span((lo, hi))), Recv(partner, *span(other), False)]
        return ops
    return _folded(rank, world, elements, core)


def _rabenseifner_nearest(rank, world, elements, chunk_elements):
    return _rabenseifner(rank, world, elements, chunk_elements, nearest_first=True)


# ---- ring ---------------------------------------------------------------------------------------
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


# Per collective, the ring's phases: (reduce, offset): N-1 steps each; in step s of a phase
# rank r sends segment r - s + offset and receives segment r - s - 1 + offset.
RING_PHASES = {"allreduce": ((True, 0), (False, 1)),    # r ends the first phase with r+1
               "reduce-scatter": ((True, -1),),         # ends with segment r
               "allgather": ((False, 0),)}              # starts with segment r


def ring_plan(rank: int, world: int, elements: int, chunk_elements: int,
              collective: str = "allreduce") -> RingPlan:
    """Steps 0..2N-3 (N-1 for reduce-scatter and allgather: RING_PHASES); the segment sent
    in step t is the one received in step t-1, chunked the same way, so chunk i of step t
    waits only for chunk i of step t-1."""
    bounds = block_bounds(elements, world)

    def segment_chunks(segment: int) -> list[slice]:
        start, stop = int(bounds[segment % world]), int(bounds[segment % world + 1])
        return [slice(lo, hi) for lo, hi in chunks(start, stop, chunk_elements)]

    sends: list[tuple[slice, int]] = []
    receives: list[tuple[slice, bool]] = []
    previous_receive_start = None
    steps = [(reducing, offset, s) for reducing, offset in RING_PHASES[collective]
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


def _ring(rank, world, elements, chunk_elements, collective="allreduce"):
    """The ring plan as operations: each send right after the receive it waits for."""
    plan = ring_plan(rank, world, elements, chunk_elements, collective)
    right, left = (rank + 1) % world, (rank - 1) % world
    waiting: dict[int, list] = {}
    for part, prerequisite in plan.sends:
        waiting.setdefault(prerequisite, []).append(Send(right, part.start, part.stop))
    ops = list(waiting.pop(-1, []))
    for j, (part, reduce) in enumerate(plan.receives):
        ops.append(Recv(left, part.start, part.stop, reduce))
        ops += waiting.pop(j, [])
    return ops


# ---- double binary tree ------------------------------------------------------------------
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


def double_binary_trees(world: int) -> list[tuple[dict, dict]]:
    """The two trees as ({rank: parent rank or None}, {rank: [child ranks]})."""
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
    return trees


def tree_depth(parent: dict) -> int:
    def depth(rank):
        d = 0
        while parent[rank] is not None:
            rank, d = parent[rank], d + 1
        return d
    return max(depth(rank) for rank in parent)


def _double_binary_tree(rank, world, elements, chunk_elements):
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


# ---- sums ---------------------------------------------------------------------------------
def accumulate(destination: np.ndarray, incoming: np.ndarray) -> bool:
    """destination += incoming; int32 wraps as hardware would; True if it wrapped."""
    if destination.dtype == np.int32:
        wide = destination.astype(np.int64) + incoming
        destination[:] = wide.astype(np.int32)
        return bool(np.any(wide != destination))
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
    buffers (for reduce-scatter, rank r's segment r of it is the collective's result)."""
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
