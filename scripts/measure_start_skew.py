"""How far apart the ranks of one run start their clocks at the start barrier
(hosts/barrier.py): each rank's clock start when it wakes on go (what a cluster's ranks
still do, and every rank did before the common start instant) against the common instant.

    python scripts/measure_start_skew.py --out FILE [--ranks 4,8] [--trials 20] [--busy 0,2]
        [--after sleep,spin]

For each rank count and number of busy processes (spinning, as an emulation's switches and
kernel keep cores busy), TRIALS times each way, alternating: RANKS worker processes of this
Python arrive at a StartBarrier in a fresh folder and the launcher releases them, with
common_start False ("wake") or True ("common").  Each rank records the barrier's Start (its
clock's start, and when it saw go) and when arrive() returned, and then for AFTER_S either
sleeps (as a rank whose links set its pace) or spins (as one the CPU paces: a rank that woke
first takes a core from those still waking).  Per trial: the spread of the
ranks' clock starts (what a run's time, its slowest rank's, counts), of their wake-ups, the
latest wake-up after go was written, and the ranks that woke after the instant.  FILE gets
every trial and, per way, the median and largest spreads; meta: cores, load, commit.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:    # run as a script: only scripts/ is on the path
    sys.path.insert(0, REPO_ROOT)

from contracts.cli import OneLineParser, UsageError, run_command  # noqa: E402
from hosts.barrier import StartBarrier  # noqa: E402
from jobs.results import now, provenance  # noqa: E402

WAYS = ("wake", "common")
# One rank: arrive, then print its Start and when arrive() returned (all CLOCK_MONOTONIC).
AFTER_S = 0.05
RANK = ("import json, sys, time; from hosts.barrier import StartBarrier; "
        "s = StartBarrier(sys.argv[1]).arrive(int(sys.argv[2]), timeout_s=60); "
        "back = time.monotonic(); "
        f"end = back + {AFTER_S}\n"
        "if sys.argv[3] == 'sleep': time.sleep(end - back)\n"
        "while time.monotonic() < end: pass\n"
        "print(json.dumps({'at': s.at, 'woke': s.woke, 'common': s.common, 'back': back}))")
AFTERS = ("sleep", "spin")
SPIN = "while True: pass"


def parse_args(argv):
    parser = OneLineParser(prog="measure_start_skew.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="FILE")
    parser.add_argument("--ranks", default="4,8", help="rank counts, comma-separated")
    parser.add_argument("--trials", type=int, default=20, help="per way and setting")
    parser.add_argument("--busy", default="0,2",
                        help="spinning processes beside the ranks, comma-separated counts")
    parser.add_argument("--after", default="sleep,spin",
                        help="what a rank does once its clock started: sleep, spin or both")
    args = parser.parse_args(argv)
    try:
        args.ranks = [int(r) for r in args.ranks.split(",") if r]
        args.busy = [int(b) for b in args.busy.split(",") if b]
    except ValueError:
        raise UsageError("--ranks and --busy take whole numbers, comma-separated") from None
    args.after = [a for a in args.after.split(",") if a]
    if not args.after or set(args.after) - set(AFTERS):
        raise UsageError(f"--after takes {' or '.join(AFTERS)}, comma-separated")
    if args.trials < 1 or not args.ranks or min(args.ranks) < 2 or min(args.busy, default=0) < 0:
        raise UsageError("--trials must be at least 1, --ranks at least 2, --busy at least 0")
    return args


def trial(ranks: int, way: str, after: str) -> dict:
    """One release of `ranks` rank processes; its spreads in ms."""
    with tempfile.TemporaryDirectory(prefix="skew-") as folder:
        processes = [subprocess.Popen([sys.executable, "-c", RANK, folder, str(rank), after],
                                      cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
                     for rank in range(ranks)]
        said = []
        StartBarrier(folder).release(range(ranks), timeout_s=60,
                                     alive=lambda: all(p.poll() is None for p in processes),
                                     before_go=lambda: said.append(time.monotonic()),
                                     common_start=way == "common")
        starts = []
        for process in processes:
            out, _ = process.communicate(timeout=60)
            if process.returncode != 0:
                raise RuntimeError(f"a rank exited {process.returncode}")
            starts.append(json.loads(out))
    go = said[0]
    at = [s["at"] for s in starts]
    woke = [s["woke"] for s in starts]
    back = [s["back"] for s in starts]
    return {"way": way, "ranks": ranks,
            "clock_start_spread_ms": (max(at) - min(at)) * 1e3,
            "wake_spread_ms": (max(woke) - min(woke)) * 1e3,
            "last_wake_after_go_ms": (max(woke) - go) * 1e3,
            "returned_spread_ms": (max(back) - min(back)) * 1e3,
            "woke_after_instant": sum(w > a for w, a in zip(woke, at)) if way == "common"
            else None}


def summary(trials: list) -> list:
    rows = []
    keys = sorted({(t["after"], t["ranks"], t["busy"], t["way"]) for t in trials})
    for after, ranks, busy, way in keys:
        mine = [t for t in trials
                if (t["after"], t["ranks"], t["busy"], t["way"]) == (after, ranks, busy, way)]
        row = {"after": after, "ranks": ranks, "busy": busy, "way": way, "trials": len(mine)}
        for key in ("clock_start_spread_ms", "wake_spread_ms", "last_wake_after_go_ms",
                    "returned_spread_ms"):
            values = [t[key] for t in mine]
            row[f"median_{key}"] = round(statistics.median(values), 3)
            row[f"max_{key}"] = round(max(values), 3)
        row["woke_after_instant"] = (sum(t["woke_after_instant"] for t in mine)
                                     if way == "common" else None)
        rows.append(row)
    return rows


def run(argv) -> int:
    args = parse_args(argv)
    meta = {"started": now(), **provenance(), "command": ["scripts/measure_start_skew.py",
                                                          *argv]}
    trials = []
    for busy in args.busy:
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
        try:
            for after in args.after:
                for ranks in args.ranks:
                    for index in range(args.trials):
                        for way in WAYS:
                            trials.append({**trial(ranks, way, after), "busy": busy,
                                           "after": after, "trial": index})
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
    meta["finished"] = now()
    meta["load_average_end"] = [round(load, 2) for load in os.getloadavg()]
    rows = summary(trials)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "summary": rows, "trials": trials}, f, indent=1)
    for row in rows:
        print(f"{row['after']:5} ranks {row['ranks']} busy {row['busy']} {row['way']:6}: "
              f"clock starts "
              f"{row['median_clock_start_spread_ms']:.3f} ms apart (max "
              f"{row['max_clock_start_spread_ms']:.3f}), woke {row['median_wake_spread_ms']:.3f}"
              f" ms apart, last {row['max_last_wake_after_go_ms']:.3f} ms after go",
              file=sys.stderr)
    return 0


def main(argv=None):
    return run_command(lambda: run(sys.argv[1:] if argv is None else argv), label="error",
                       failures=(OSError, RuntimeError))


if __name__ == "__main__":
    sys.exit(main())
