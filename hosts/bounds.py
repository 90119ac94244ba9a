"""Link-rate bounds of the host-only allreduce algorithms, in one table.

Each row is stated again next to the schedule it counts, in that algorithm's file under
hosts/algorithms/ (elements_moved, steps, link_share, FORMULA); the functions here dispatch
to those files and add the other collectives and in-network aggregation.

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

The other collectives (contracts/collectives/: each names the phases of the algorithms that
make it; hosts/schedules.py's collective_schedule), S(j) the size of segment j of
block_bounds(E, N) in bytes (V/N when N divides E):

  collective      algorithm      bytes sent by r    received by r    steps           busiest link
  REDUCE_SCATTER  ring           V - S(r)           V - S(r-1)       N-1             (N-1)/N V
  allgather       ring           V - S(r+1)         V - S(r)         N-1             (N-1)/N V
  broadcast       binomial-tree  c(r)V              [r > 0]V         ceil(log2 N)    ceil(log2 N)V
  reduce          binomial-tree  [r > 0]V           c(r)V            ceil(log2 N)    ceil(log2 N)V

(the broadcast is chunked, so its levels overlap: the root's link carries c(0) = ceil(log2 N)
vectors one after another, which bounds it; the reduce's root receives them the same way).

In-network aggregation (`ina_traffic`, hosts/ina/ina_collectives.py): UDP payload bytes as the
worker counts them, per round a 16-byte header plus 4K bytes of values, or the header alone
for a header-only (FLAG_NO_VALUES) packet.  C = chunks of the engine's vector (ceil(E/K);
REDUCE_SCATTER and ALLGATHER: the shards each padded to whole chunks, C_r of them rank r's),
W = the window, Z = closing rounds (one per slot used: min(W, C)), X = float32's
exponent-only rounds (min(W, C), header only except in allreduce):

  collective      bytes sent by r                      bytes received by r
  allreduce       (C + Z [+ X]) (16 + 4K)              the same
  REDUCE_SCATTER  C (16+4K) + (Z [+ X]) 16             C_r (16+4K) + (C - C_r + Z [+ X]) 16
  allgather       C_r (16+4K) + (C - C_r + Z) 16       C (16+4K) + Z 16
  broadcast       root: C (16+4K) + Z 16;              C (16+4K) + Z 16
                  others: (C + Z) 16
  reduce          C (16+4K) + (Z [+ X]) 16             root: C (16+4K) + (Z [+ X]) 16;
                                                       others: (C + Z [+ X]) 16

So an in-network REDUCE_SCATTER receives about V/p + 16 bytes per other chunk: 1/p of the
allreduce's plus the headers that tell a rank a chunk is done.  The busiest link still
carries the vector once (up for the sums, down for allgather and broadcast): the link-rate
bound is the allreduce's.  Every row is one rule (ina_traffic): a full packet per chunk whose
values the rank sends (receives), a header per other chunk, plus Z [+ X] rounds, full both
ways in allreduce, headers in the others.
"""

from __future__ import annotations

from hosts import algorithms
from hosts.algorithms import ALGORITHMS
from hosts.ina.ina_collectives import ina_traffic  # noqa: F401  (the in-network rows above)
from hosts.schedules import phase_arguments


def traffic(algorithm: str, rank: int, world: int, elements: int,
            itemsize: int = 4, collective="allreduce") -> tuple[int, int]:
    """(bytes sent, bytes received) of `rank`: the tables above, exact."""
    phases = phase_arguments(collective, algorithm)
    if world == 1:
        return 0, 0
    sent, received = algorithms.module(algorithm).elements_moved(rank, world, elements,
                                                                 *phases)
    return sent * itemsize, received * itemsize


def steps(algorithm: str, world: int, collective="allreduce") -> int:
    """Communication steps (the latency term): see the tables above."""
    phases = phase_arguments(collective, algorithm)
    return 0 if world == 1 else algorithms.module(algorithm).steps(world, *phases)


def link_share(algorithm: str, world: int, collective="allreduce") -> float:
    """The busiest-link bytes of the tables above in units of the vector V (the ring's also
    for a real-valued world: plotted curves)."""
    phases = phase_arguments(collective, algorithm)
    return 0.0 if world == 1 else algorithms.module(algorithm).link_share(world, *phases)


FORMULAS = {name: algorithms.module(name).FORMULA for name in ALGORITHMS}


def formula(algorithm: str, collective="allreduce") -> str:
    """The link-rate bound of `algorithm` for `collective`, as text."""
    phases = phase_arguments(collective, algorithm)
    return algorithms.module(algorithm).formula(*phases) if phases else FORMULAS[algorithm]
