"""Link-rate bounds of the host-only allreduce algorithms (hosts/schedules.py), in one place.

N ranks, a vector of E elements, V = E * 4 bytes, P = 2^floor(log2 N), L = log2 P, and
f = 1 when N is not a power of two (ranks P..N-1 fold into ranks 0..N-P-1), else 0.
Every rank receives as many bytes as it sends:

  algorithm           bytes sent by rank r                     steps           busiest link
  ps                  r = 0: (N-1)V; others: V                 2               2(N-1)V
  binomial-tree       (c(r) + [r > 0])V, c(r): r's children    2 ceil(log2 N)  2 ceil(log2 N)V
  butterfly           r < N-P: (L+1)V; r < P: LV; else V       L + 2f          (L + 2f)V
  ring                2(N-1)/N V                               2(N-1)          2(N-1)/N V
  rabenseifner        r < N-P: (2(P-1)/P + 1)V;                2L + 2f         (2(P-1)/P + 2f)V
                      r < P: 2(P-1)/P V; else V                (also -nearest: the same
                                                               bytes, partners in another order)
  double-binary-tree  (a(r) + b(r))V/2, a and b: r's           2 depth         max_r (a+b)V/2
                      neighbours (children, parent) in         (pipelined)     (at most 2V)
                      trees A and B

The byte columns are exact for E divisible by the number of parts (N for the ring, P for
rabenseifner, 2 for the double binary tree); otherwise parts differ by at most one element,
and `traffic` gives the exact count from the same partition the schedules use.  "Busiest
link" is the link-rate bound of the algorithm as scheduled, in bytes a link must carry one
after another: the sum over the steps of the largest transfer of a step for the
step-by-step algorithms (ps: the root first receives (N-1)V through one link, then sends
(N-1)V; tree and butterfly steps each move V), and the busiest host's bytes for the
pipelined ones (ring, double binary tree), whose steps overlap.  Divided by the link rate B
it is the time bound; on the wire TCP adds its headers (experiments/aggregate.py).

The other collectives (hosts/schedules.py's collective_schedule), S(j) the size of segment j
of block_bounds(E, N) in bytes (V/N when N divides E):

  collective      algorithm      bytes sent by r    received by r    steps           busiest link
  reduce-scatter  ring           V - S(r)           V - S(r-1)       N-1             (N-1)/N V
  allgather       ring           V - S(r+1)         V - S(r)         N-1             (N-1)/N V
  broadcast       binomial-tree  c(r)V              [r > 0]V         ceil(log2 N)    ceil(log2 N)V

(the broadcast is chunked, so its levels overlap: the root's link carries c(0) = ceil(log2 N)
vectors one after another, which bounds it).

In-network aggregation (`ina_traffic`, hosts/ina_collectives.py): UDP payload bytes as the
worker counts them, per round a 16-byte header plus 4K bytes of values, or the header alone
for a header-only (FLAG_NO_VALUES) packet.  C = chunks of the engine's vector (ceil(E/K);
reduce-scatter and allgather: the shards each padded to whole chunks, C_r of them rank r's),
W = the window, Z = closing rounds (one per slot used: min(W, C)), X = float32's
exponent-only rounds (min(W, C), header only except in allreduce):

  collective      bytes sent by r                      bytes received by r
  allreduce       (C + Z [+ X]) (16 + 4K)              the same
  reduce-scatter  C (16+4K) + (Z [+ X]) 16             C_r (16+4K) + (C - C_r + Z [+ X]) 16
  allgather       C_r (16+4K) + (C - C_r + Z) 16       C (16+4K) + Z 16
  broadcast       root: C (16+4K) + Z 16;              C (16+4K) + Z 16
                  others: (C + Z) 16

So an in-network reduce-scatter receives about V/p + 16 bytes per other chunk: 1/p of the
allreduce's plus the headers that tell a rank a chunk is done.  The busiest link still
carries the vector once (up for reduce-scatter, down for allgather and broadcast): the
link-rate bound is the allreduce's.
"""

from __future__ import annotations

from contracts.wire import HEADER_LEN, VALUE_BYTES
from hosts.ina_collectives import ShardLayout, check_collective
from hosts.schedules import (ALGORITHMS, binomial_children, block_bounds, ceil_log2,
                             check_supported, double_binary_trees, halving_ranges,
                             power_of_two_below, tree_depth)


def ina_traffic(collective: str, rank: int, world: int, elements: int, k: int,
                window: int, dtype: str = "int32", root: int = 0) -> tuple[int, int]:
    """(bytes sent, bytes received) of `rank` in an in-network `collective` without loss
    (the table above; retransmissions come on top)."""
    check_collective(collective)
    full, header = HEADER_LEN + VALUE_BYTES * k, HEADER_LEN
    if collective in ("reduce-scatter", "allgather"):
        layout = ShardLayout(elements, world, k)
        chunks = int(layout.chunk_bounds[-1])
        own = int(layout.chunk_bounds[rank + 1] - layout.chunk_bounds[rank])
    else:
        chunks, own = -(-elements // k), 0
    closing = min(window, chunks)
    exponent_only = min(window, chunks) if dtype == "float32" else 0
    if collective == "allreduce":
        both = (chunks + closing + exponent_only) * full
        return both, both
    if collective == "reduce-scatter":
        return ((chunks * full + (closing + exponent_only) * header),
                own * full + (chunks - own + closing + exponent_only) * header)
    received = chunks * full + closing * header
    if collective == "allgather":
        return own * full + (chunks - own + closing) * header, received
    sent = chunks * (full if rank == root else header) + closing * header
    return sent, received


def traffic(algorithm: str, rank: int, world: int, elements: int,
            itemsize: int = 4, collective: str = "allreduce") -> tuple[int, int]:
    """(bytes sent, bytes received) of `rank`: the tables above, exact."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}")
    check_supported(collective, algorithm)
    if world == 1:
        return 0, 0
    if collective == "allreduce":
        sent, received = _elements(algorithm, rank, world, elements)
    else:
        sent, received = _collective_elements(collective, rank, world, elements)
    return sent * itemsize, received * itemsize


def _collective_elements(collective: str, rank: int, world: int, e: int) -> tuple[int, int]:
    if collective == "broadcast":
        return len(binomial_children(rank, world)) * e, (rank > 0) * e
    seg = block_bounds(e, world)

    def size(s):
        s %= world
        return int(seg[s + 1] - seg[s])
    if collective == "reduce-scatter":
        return e - size(rank), e - size(rank - 1)
    return e - size(rank + 1), e - size(rank)             # allgather


def _elements(algorithm: str, rank: int, world: int, e: int) -> tuple[int, int]:
    if algorithm == "ps":
        both = (world - 1) * e if rank == 0 else e
        return both, both
    if algorithm == "binomial-tree":
        both = (len(binomial_children(rank, world)) + (rank > 0)) * e
        return both, both
    if algorithm == "ring":
        seg = block_bounds(e, world)

        def size(s):
            s %= world
            return int(seg[s + 1] - seg[s])
        # reduce-scatter sends every segment but r+1, all-gather every one but r+2;
        # it receives every segment but r, then every one but r+1
        return (2 * e - size(rank + 1) - size(rank + 2),
                2 * e - size(rank) - size(rank + 1))
    if algorithm == "double-binary-tree":
        total = 0
        for (parents, children), part in zip(double_binary_trees(world), (e // 2, e - e // 2)):
            total += (len(children[rank]) + (parents[rank] is not None)) * part
        return total, total
    p = power_of_two_below(world)
    if rank >= p:                                        # folded: vector out, sum back
        return e, e
    folding = e if rank + p < world else 0
    if algorithm == "butterfly":
        core = (p.bit_length() - 1) * e
    else:                                                # the two rabenseifners
        blocks = block_bounds(e, p)

        def size(lo, hi):
            return int(blocks[hi] - blocks[lo])
        # halving sends all blocks but its own and receives the halves it keeps;
        # doubling sends those halves back and receives all blocks but its own
        kept = halving_ranges(rank, p, nearest_first=algorithm == "rabenseifner-nearest")
        core = (e - size(*kept[-1])) + sum(size(lo, hi) for lo, hi in kept)
    return core + folding, core + folding


def steps(algorithm: str, world: int, collective: str = "allreduce") -> int:
    """Communication steps (the latency term): see the tables above."""
    check_supported(collective, algorithm)
    if world == 1:
        return 0
    if collective in ("reduce-scatter", "allgather"):
        return world - 1
    if collective == "broadcast":
        return ceil_log2(world)
    p = power_of_two_below(world)
    fold = 2 if p != world else 0
    log_p = p.bit_length() - 1
    return {"ps": 2,
            "binomial-tree": 2 * ceil_log2(world),
            "butterfly": log_p + fold,
            "ring": 2 * (world - 1),
            "rabenseifner": 2 * log_p + fold,
            "rabenseifner-nearest": 2 * log_p + fold,
            "double-binary-tree": 2 * max(tree_depth(parents) for parents, _ in
                                          double_binary_trees(world))}[algorithm]


def link_share(algorithm: str, world: int, collective: str = "allreduce") -> float:
    """The busiest-link bytes of the tables above in units of the vector V."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}")
    check_supported(collective, algorithm)
    if world == 1:
        return 0.0
    if collective in ("reduce-scatter", "allgather"):     # also for a real-valued p
        return (world - 1) / world
    if collective == "broadcast":
        return float(ceil_log2(world))
    if algorithm == "ring":               # also for a real-valued p (plotted curves)
        return 2 * (world - 1) / world
    p = power_of_two_below(world)
    fold = 2 if p != world else 0
    if algorithm == "ps":
        return 2.0 * (world - 1)
    if algorithm == "binomial-tree":
        return 2.0 * ceil_log2(world)
    if algorithm == "butterfly":
        return float(p.bit_length() - 1 + fold)
    if algorithm in ("rabenseifner", "rabenseifner-nearest"):
        return 2 * (p - 1) / p + fold
    trees = double_binary_trees(world)
    return max(sum(len(children[r]) + (parents[r] is not None) for parents, children in trees)
               for r in range(world)) / 2


FORMULAS = {"ps": "2(p-1)·E·4/B",
            "binomial-tree": "2⌈log2 p⌉·E·4/B",
            "butterfly": "(log2 P + 2f)·E·4/B",
            "ring": "2(p-1)/p·E·4/B",
            "rabenseifner": "(2(P-1)/P + 2f)·E·4/B",
            "rabenseifner-nearest": "(2(P-1)/P + 2f)·E·4/B",
            "double-binary-tree": "max(a+b)/2·E·4/B ≤ 2·E·4/B"}
COLLECTIVE_FORMULAS = {("reduce-scatter", "ring"): "(p-1)/p·E·4/B",
                       ("allgather", "ring"): "(p-1)/p·E·4/B",
                       ("broadcast", "binomial-tree"): "⌈log2 p⌉·E·4/B"}


def formula(algorithm: str, collective: str = "allreduce") -> str:
    """The link-rate bound of `algorithm` for `collective`, as text."""
    if collective == "allreduce":
        return FORMULAS[algorithm]
    return COLLECTIVE_FORMULAS[(collective, algorithm)]
