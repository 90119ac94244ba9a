"""`python -m hosts ring`: the ring allreduce over TCP, the same as
`python -m hosts allreduce --algorithm ring` (hosts/allreduce.py).

The vector is cut into `world` segments.  Reduce phase: in step s (0..N-2) rank r sends
segment r-s to its right neighbour and adds segment r-s-1 from its left neighbour into its
own copy; afterwards rank r holds the full sum of segment r+1.  All-gather: in step s rank r
sends segment r+1-s and stores segment r-s as received.  Segments travel in chunks of
--chunk-bytes, and sends never wait for the receives of other data: chunk i of a step is
forwarded as soon as chunk i of the previous step has arrived, so sending right and
receiving left overlap (pipelined, as NCCL and Gloo do).  The schedule is
hosts/algorithms/ring.py's `ring_plan`; connections, sending and receiving are
hosts/transport.py's, shared with the other host-only algorithms.  float32 sums are done in
float32 in ring order; int32 sums are exact (wrap-around is reported as `overflow`).
"""

from __future__ import annotations

from hosts import allreduce
from hosts.algorithms.ring import RingPlan, ring_plan  # noqa: F401
from hosts.allreduce import (DEFAULT_CHUNK_BYTES, AllreduceStats,  # noqa: F401
                             verify_result)
from hosts.transport import (CONNECT_TIMEOUT_S, parse_peers,  # noqa: F401
                             tcp_retransmissions)

RingStats = AllreduceStats
float32_ring_bound = allreduce.float32_sum_bound


class RingAllreduce(allreduce.HostAllreduce):
    """One rank's ring allreduce (connect(), allreduce(data), close())."""

    def __init__(self, rank: int, world: int, peers: list[tuple[str, int]],
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, timeout_s: float = CONNECT_TIMEOUT_S):
        super().__init__("ring", rank, world, peers, chunk_bytes, timeout_s)


def main(argv: list[str]) -> int:
    return allreduce.main(argv, algorithm="ring")
