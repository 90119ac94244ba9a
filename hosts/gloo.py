"""`python -m hosts gloo`: one rank of `torch.distributed.all_reduce` with the Gloo backend.

A real, widely used host-only allreduce as a second peer for the comparison.  The input
vector, the verification and the report have the same form as `python -m hosts ring`
(hosts/vectors.py; float32 within the ring's error bound, since Gloo's CPU allreduce also
adds each element N-1 times in some order).  torch is optional: without it the command
fails with one line saying so (exit 1).  Byte counts are the host interface's transmit and
receive counters over the allreduce (Ethernet frames, headers included), read from
/proc/net/dev, which is the host's own network namespace; "packets" are frames.

The ranks' clocks start as those of the other modes (hosts/barrier.py): once the group is
up (dist.barrier()), where every rank reads the same monotonic clock (one machine), rank 0
sets a start instant barrier.start_lead_s() ahead, every rank sleeps until it and starts its
clock there; ranks on several machines (a cluster) start theirs as they leave the barrier.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from datetime import timedelta

import numpy as np

from contracts.jobs import GlooWorker
from hosts import barrier, cli, vectors
from hosts.allreduce import verify_result

TORCH_MISSING = "torch is not installed (pip install torch) - the gloo mode needs it"


def build_parser() -> cli.OneLineParser:
    """The options are contracts.jobs.GlooWorker's fields (the launchers write them too)."""
    return GlooWorker.parser()


def torch_distributed():
    """torch.distributed with Gloo, or RunFailed saying why it cannot be used."""
    try:    # here, not at the top: torch takes seconds to load and only gloo runs need it
        import torch
        import torch.distributed as dist
    except ImportError:
        raise cli.RunFailed(TORCH_MISSING) from None
    if not (dist.is_available() and dist.is_gloo_available()):
        raise cli.RunFailed(f"torch {torch.__version__} was built without Gloo support")
    torch.set_num_threads(1)     # the emulated hosts share the machine's few cores
    return torch, dist


def interface_counters(ifname: str) -> tuple[int, int, int, int]:
    """(rx_bytes, rx_packets, tx_bytes, tx_packets) of an interface in our namespace."""
    with open("/proc/net/dev") as handle:
        for line in handle:
            name, sep, fields = line.partition(":")
            if sep and name.strip() == ifname:
                values = [int(v) for v in fields.split()]
                return values[0], values[1], values[8], values[9]
    raise cli.RunFailed(f"interface {ifname} not found in /proc/net/dev")


def parse_master(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise cli.UsageError(f"--master {text!r} is not IP:PORT")
    return host, int(port)


def allreduce(args, data: np.ndarray):
    """Join the group, all_reduce (sum) once; returns (result, seconds, counter deltas,
    this process's CPU seconds over the all_reduce)."""
    torch, dist = torch_distributed()
    host, port = parse_master(args.master)
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    try:
        dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=args.rank,
                                world_size=args.world,
                                timeout=timedelta(seconds=args.timeout_s))
    except (RuntimeError, ValueError) as exc:
        raise cli.RunFailed(f"gloo rank {args.rank}: joining the group at {args.master} "
                            f"failed: {_first_line(exc)}") from None
    try:
        tensor = torch.from_numpy(np.array(data, copy=True))
        dist.barrier()                   # connections are up; time only the collective
        instant = common_start(torch, dist, args.rank, args.world)
        before = interface_counters(args.ifname) if args.ifname else None
        if instant is None:
            started = time.monotonic()
        else:
            barrier.sleep_until(instant)
            started = instant
        cpu_started = time.process_time()       # every thread's: Gloo's own too
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        seconds = time.monotonic() - started
        cpu_seconds = time.process_time() - cpu_started
        after = interface_counters(args.ifname) if args.ifname else None
        dist.barrier()                   # nobody tears down while a peer still reads
    except RuntimeError as exc:
        raise cli.RunFailed(f"gloo rank {args.rank}: all_reduce failed: "
                            f"{_first_line(exc)}") from None
    finally:
        dist.destroy_process_group()
    deltas = None if before is None else [b - a for a, b in zip(before, after)]
    return tensor.numpy(), seconds, deltas, cpu_seconds


def common_start(torch, dist, rank: int, world: int):
    """The group's start instant on this machine's monotonic clock, or None when its ranks
    read different clocks (several machines).  One all_reduce (MAX) of [clock, -clock,
    rank 0's instant]: max and min of the ranks' clock ids agree only when all are one."""
    clock = float(int(hashlib.sha256(barrier.clock_id().encode()).hexdigest()[:12], 16))
    proposed = time.monotonic() + barrier.start_lead_s(world) if rank == 0 else float("-inf")
    agreed = torch.tensor([clock, -clock, proposed], dtype=torch.float64)
    dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
    highest, lowest, instant = agreed[0].item(), -agreed[1].item(), agreed[2].item()
    return instant if highest == lowest else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def build_report(args, seconds: float, deltas, verification) -> dict:
    rx_bytes, rx_packets, tx_bytes, tx_packets = deltas if deltas else (None,) * 4
    return {
        "job": None, "rank": args.rank, "world": args.world, "elements": args.elements,
        "dtype": args.dtype, "transport": "gloo", "seconds": seconds,
        "bytes_counted": "interface" if deltas else None,
        "packets_sent": tx_packets, "packets_received": rx_packets,
        "bytes_sent": tx_bytes, "bytes_received": rx_bytes,
        "retransmissions": 0,            # TCP inside Gloo; not visible from here
        "correct": None if verification is None else verification.correct,
        "max_abs_err": None if verification is None else verification.max_abs_err,
        "error": None,
    }


def main(argv: list[str]) -> int:
    args = GlooWorker.from_argv(argv)
    cli.check_rank(args.rank, args.world)
    dtype = vectors.DTYPES[args.dtype]
    data = cli.load_vector(args, dtype)
    result, seconds, deltas, cpu_seconds = allreduce(args, data)
    verification = verify_result(args, dtype, result)
    report = build_report(args, seconds, deltas, verification)
    report["cpu_seconds"] = cpu_seconds         # as the host algorithms' reports have it
    cli.write_json(args.json, report)
    if args.output:
        cli.save_output(args.output, result)
    cli.check_verified(f"gloo rank {args.rank}", verification)
    return 0


if __name__ == "__main__":
    sys.exit(cli.run_cli(main, sys.argv[1:]))
