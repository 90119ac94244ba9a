"""`python -m hosts allreduce --algorithm NAME [--collective NAME]`: the host-only allreduce
baselines over TCP (contracts.jobs.HOST_ALGORITHMS), and the other collectives of
contracts.jobs.COLLECTIVES with the algorithms that have them (contracts.jobs.SUPPORTED;
another pair is a one-line usage error).

Every rank's input is its seed vector of --elements values (vectors.generate).  The results,
each verified exactly (float32 sums within the sum's bound below), are
vectors.collective_reference's: the part of the whole result (a sum, or the ranks' copied
contributions) that the rank holds, each collective's file says which (contracts/collectives/;
shards: block_bounds(E, N), E/N values).

Every algorithm is a schedule of sends and receives per rank (one file each under
hosts/algorithms/, where each is described, including how ranks beyond a power of two are
folded in; hosts/schedules.py picks the collective's); this module runs one
rank's schedule over one TCP transport (hosts/transport.py), verifies the result against the
seed's exact sum (hosts/vectors.py) and writes the report.  `python -m hosts ring` is this
command with --algorithm ring.  int32 sums are exact (wrap-around is reported as
`overflow`); float32 results lie within gamma_{N-1} * sum |x| of the exact sum, since every
element is a sum formed by N-1 float32 additions in some order.  Byte counts are TCP
payload bytes (their formula per algorithm: hosts/bounds.py); "packets" are messages, each
a whole array or a chunk of --chunk-bytes; "retransmissions" are the segments the kernel
retransmitted on this rank's connections (TCP_INFO).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from contracts import collectives
from contracts.jobs import (CONNECT_TIMEOUT_S, DEFAULT_CHUNK_BYTES,  # noqa: F401
                            HostAlgorithmWorker)
from hosts import barrier, cli, schedules, vectors
from hosts.algorithms import ALGORITHMS
from hosts.algorithms.base import Recv, Send, peers_of
from hosts.ina.quantize import FLOAT32_UNIT_ROUNDOFF
from hosts.transport import Transport, TransportStats, parse_peers


def build_parser(algorithm: str | None = None) -> cli.OneLineParser:
    """`hosts allreduce`'s parser, or `hosts ALGORITHM`'s: the options are
    contracts.jobs.HostAlgorithmWorker's fields, from which the launchers write it too."""
    return HostAlgorithmWorker.parser_for(algorithm)


@dataclass
class AllreduceStats(TransportStats):
    """The transport's counts of the run, and whether an int32 sum wrapped."""
    overflow: bool = False


def peer_ranks(algorithm: str, rank: int, world: int, collective: str = "allreduce") -> set:
    """The ranks `rank` exchanges data with (for a vector long enough that no part is
    empty; a shorter one leaves some connections unused)."""
    return peers_of(schedules.collective_schedule(collective, algorithm, rank, world,
                                                  2 * world, 1 << 30))


class HostAllreduce:
    """One rank of a host-only allreduce: connect(), allreduce(data), close()."""

    def __init__(self, algorithm: str, rank: int, world: int, peers: list[tuple[str, int]],
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, timeout_s: float = CONNECT_TIMEOUT_S,
                 collective: str = "allreduce"):
        if algorithm not in ALGORITHMS:
            raise cli.UsageError(f"unknown algorithm {algorithm!r} (choose from "
                                 f"{', '.join(ALGORITHMS)})")
        try:
            schedules.check_supported(collective, algorithm)
        except ValueError as exc:
            raise cli.UsageError(str(exc)) from None
        self.algorithm, self.rank, self.world = algorithm, rank, world
        self.collective = collective
        self.chunk_bytes = chunk_bytes
        self.stats = AllreduceStats()
        self.transport = Transport(rank, peers, peer_ranks(algorithm, rank, world, collective),
                                   f"{algorithm} rank {rank}", timeout_s)

    def connect(self) -> None:
        self.transport.connect()

    def close(self, graceful: bool = False) -> None:
        """`graceful` after a successful allreduce: wait until the peers have closed too
        (Transport.close)."""
        self.transport.close(graceful)

    def allreduce(self, data: np.ndarray, copy: bool = True) -> np.ndarray:
        """Run the collective on `data` (allreduce: sum it over all ranks); call connect()
        first.  Returns the whole buffer: for a sharded result, see `result_of`.  copy
        False: in `data` itself (a contiguous array of the caller's, changed)."""
        buffer = np.array(data, copy=True) if copy else data
        chunk_elements = max(1, self.chunk_bytes // buffer.itemsize)
        ops = schedules.collective_schedule(self.collective, self.algorithm, self.rank,
                                            self.world, len(buffer), chunk_elements)
        scratch = np.empty(max((op.stop - op.start for op in ops
                                if isinstance(op, Recv) and op.reduce), default=0),
                           dtype=buffer.dtype)
        for op in ops:
            part = buffer[op.start:op.stop]
            if isinstance(op, Send):
                self.transport.post(op.peer, part)
            elif op.reduce:
                incoming = scratch[:len(part)]
                self.transport.receive(op.peer, incoming)
                self.stats.overflow |= schedules.accumulate(part, incoming)
            else:
                self.transport.receive(op.peer, part)
        self.transport.flush()
        self.stats = AllreduceStats(**vars(self.transport.stats), overflow=self.stats.overflow)
        return buffer


def float32_sum_bound(world: int, reference: vectors.Reference) -> np.ndarray:
    """Error bound of N-1 float32 additions in any order: gamma_{N-1} * sum |x|."""
    nu = (world - 1) * FLOAT32_UNIT_ROUNDOFF
    return nu / (1 - nu) * reference.magnitude


def shard(rank: int, world: int, elements: int) -> slice:
    """Rank `rank`'s segment of a vector (vectors.shard_bounds)."""
    return slice(*vectors.shard_bounds(rank, world, elements))


def result_of(collective, buffer: np.ndarray, rank: int, world: int) -> np.ndarray:
    """The collective's result in a rank's buffer after its schedule ran: the part the rank
    holds (contracts/collectives/; the whole buffer for most)."""
    start, stop = collectives.get(collective).holds(rank, world, len(buffer))
    return buffer[start:stop]


def verify_result(args, dtype, result: np.ndarray,
                  collective: str = "allreduce") -> vectors.Verification | None:
    """`result` against the exact answer of `collective` (vectors.collective_reference,
    shared with the in-network worker); float32 sums within the bound of N-1 additions."""
    if args.seed is None:
        return None
    reference = vectors.collective_reference(collective, args.seed, args.rank, args.world,
                                             args.elements, dtype)
    summed = collectives.get(collective).sums
    tolerance = float32_sum_bound(args.world, reference) if summed and dtype != np.int32 else 0
    return vectors.verify(result, reference, tolerance)


def main(argv: list[str], algorithm: str | None = None) -> int:
    """`hosts allreduce` (algorithm None: from --algorithm) or `hosts <algorithm>`."""
    args = HostAlgorithmWorker.from_argv(argv, build_parser(algorithm))
    algorithm = algorithm or args.algorithm
    cli.check_rank(args.rank, args.world)
    try:
        schedules.check_supported(args.collective, algorithm)
    except ValueError as exc:
        raise cli.UsageError(str(exc)) from None
    dtype = vectors.DTYPES[args.dtype]
    peers = parse_peers(args.peers, args.world)
    data = cli.load_vector(args, dtype)
    member = HostAllreduce(algorithm, args.rank, args.world, peers, args.chunk_bytes,
                           args.timeout_s, args.collective)
    try:
        member.connect()
        # A rank ready early waits here while the last ones launched still connect, each
        # for up to --timeout-s: its wait for go must outlast that.
        buffer = np.array(data, copy=True)  # before the clock, as Gloo's tensor (4 ms at 4 MB)
        started = barrier.wait_for_start(args, barrier.GO_WAIT_S + args.timeout_s)
        cpu_started = time.process_time()
        result = result_of(args.collective, member.allreduce(buffer, copy=False), args.rank,
                           args.world)
        seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu_started
        barrier.wait_for_others(args)
        member.close(graceful=True)
    finally:
        member.close()
    verification = verify_result(args, dtype, result, args.collective)
    report = build_report(args, algorithm, member.stats, seconds, verification)
    report["cpu_seconds"] = cpu_seconds         # this process's, over the timed part
    cli.write_json(args.json, report)
    if args.output:
        cli.save_output(args.output, result)
    cli.check_verified(f"{algorithm} rank {args.rank}", verification)
    return 0


def build_report(args, algorithm: str, stats: AllreduceStats, seconds: float,
                 verification) -> dict:
    return {
        "job": None, "rank": args.rank, "world": args.world, "elements": args.elements,
        "dtype": args.dtype, "algorithm": algorithm, "transport": f"tcp-{algorithm}",
        "collective": args.collective,
        "chunk_bytes": args.chunk_bytes, "seconds": seconds,
        "packets_sent": stats.messages_sent, "packets_received": stats.messages_received,
        "bytes_sent": stats.bytes_sent, "bytes_received": stats.bytes_received,
        # segments TCP retransmitted on this rank's connections (kernel TCP_INFO)
        "retransmissions": stats.tcp_retransmissions,
        "correct": None if verification is None else verification.correct,
        "max_abs_err": None if verification is None else verification.max_abs_err,
        "overflow": stats.overflow,
        "error": None,
    }
