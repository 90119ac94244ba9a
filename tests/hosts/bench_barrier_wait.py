"""Benchmark (not a test): the CPU that ranks waiting at the start barrier cost, as in the
minutes a launch of 1,024 workers takes (fattree:16, docs/scaling.md).

    .venv/bin/python tests/hosts/bench_barrier_wait.py [--threads 64,256,1024] [--seconds 3]
        [--json FILE]

For each count N: N - 1 threads of this process arrive at a StartBarrier (as the workers of
worker groups do) and a launcher thread waits in release() for all N, while the last rank is
not ready yet; the process's CPU time over --seconds of that wait, as a share of one core, is
the figure (the machine's idle work included: compare counts in one run). Then the last rank
arrives, every thread goes, and all of them depart.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from hosts.barrier import StartBarrier  # noqa: E402
from jobs.results import provenance  # noqa: E402


def measure(count: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        barrier = StartBarrier(folder)

        def rank(r):
            barrier.arrive(r, timeout_s=seconds + 60)
            barrier.depart(r, timeout_s=10)

        ranks = [threading.Thread(target=rank, args=(r,)) for r in range(count - 1)]
        for thread in ranks:
            thread.start()
        launcher = threading.Thread(target=barrier.release,
                                    kwargs={"ranks": range(count), "timeout_s": seconds + 60})
        launcher.start()
        while len(barrier.missing(range(count))) > 1:
            time.sleep(0.01)
        time.sleep(0.2)
        cpu, wall = time.process_time(), time.monotonic()
        time.sleep(seconds)
        share = (time.process_time() - cpu) / (time.monotonic() - wall)
        last = threading.Thread(target=rank, args=(count - 1,))
        last.start()
        for thread in [*ranks, last, launcher]:
            thread.join(seconds + 60)
    return {"threads": count, "cpu_share_of_a_core": round(share, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="64,256,1024")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    rows = []
    for count in (int(n) for n in args.threads.split(",")):
        rows.append(measure(count, args.seconds))
        print(f"{count} ranks waiting (one not ready), and the launcher: "
              f"{rows[-1]['cpu_share_of_a_core'] * 100:.1f}% of a core", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": {**provenance(), "seconds": args.seconds}, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
