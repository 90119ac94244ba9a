"""`python -m experiments calibrate`: the simulation against the emulator on the same points.

    calibrate --topo leafspine:2,1,4 --bw 10 --k 256 [--modes ina,ring] [--elements E]
              [--workers N] [--window W] [--repeat R (3)] [--emulated DIR] [--out DIR]
              [--threshold PCT]
    calibrate --grid [--topo T] [--workers N] [--bw MBIT] [--loss PCT] [--k K]
              [--elements E] [--repeat R] [--reuse-emulated] [--out DIR]
                                                          (experiments/calibrate_grid.py)

Runs `python -m experiments compare` (the emulator, with the built-in switch; under
`flock /tmp/emulation.lock`, so that it never shares the machine with another emulation) into
DIR/emulated, unless --emulated names the results of such a run, then the simulation of the
same modes, workers, vector, K, window and link rate into DIR/simulated, and prints per mode
the median completion time and the mean UDP/TCP payload bytes sent per host of both, with
their relative difference (simulated - emulated) / emulated.  It prints the largest
difference and exits 1 when it is above the threshold (15%), 0 otherwise, 2 for bad input.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile

from contracts.cli import (DEFAULT_MODES, OneLineParser, RunFailed, UsageError, comma_list,
                           positive_float, positive_int)
from contracts.jobs import add_k_option, add_window_option
from contracts.wire import DEFAULT_K, DEFAULT_WINDOW
from jobs import results
from experiments import aggregate, calibrate_grid
from jobs.runner import progress
from experiments.simulated import run_requests
from simulation.run import Request
from experiments.simulate import percent
from hosts.algorithms import ALGORITHMS
from topologies.switches import REPO, python_executable

EMULATION_LOCK = "/tmp/emulation.lock"
DEFAULT_ELEMENTS = 1_000_000
DEFAULT_THRESHOLD_PCT = 15.0
# One emulated run on a busy 2-core machine can be 20% slow (timeouts, retransmissions):
# the median of three is what is compared.
DEFAULT_REPEAT = 3


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments calibrate",
                      description="Simulation against emulation on the same points.")
    p.add_argument("--topo", help="required, except with --grid (where it narrows the grid)")
    p.add_argument("--bw", type=positive_float, metavar="MBIT",
                   help="required, except with --grid (where it narrows the grid)")
    p.add_argument("--grid", action="store_true",
                   help="the whole calibration grid (experiments/calibrate_grid.py)")
    p.add_argument("--loss", type=percent, metavar="PCT",
                   help="with --grid: only the points with this loss")
    add_k_option(p, DEFAULT_K)
    p.add_argument("--modes", default=DEFAULT_MODES)
    p.add_argument("--elements", type=positive_int, default=DEFAULT_ELEMENTS)
    p.add_argument("--workers", type=positive_int, help="default: every host")
    add_window_option(p, DEFAULT_WINDOW)
    p.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT,
                   help="emulated runs per mode (their median is compared; the simulation "
                        "is deterministic)")
    p.add_argument("--reuse-emulated", action="store_true",
                   help="with --grid: take each point's emulation from an earlier grid in "
                        "--out when it is there (the simulation runs anew)")
    p.add_argument("--emulated", metavar="DIR",
                   help="results of an earlier compare on these points (no emulation run)")
    p.add_argument("--out", metavar="DIR", help="default: a new directory in /tmp")
    p.add_argument("--threshold", type=positive_float, default=DEFAULT_THRESHOLD_PCT,
                   metavar="PCT")
    return p


def compare_command(args, out_dir: str, modes: list) -> list:
    command = ["flock", EMULATION_LOCK, python_executable(), "-m", "experiments", "compare",
               "--topo", args.topo, "--modes", ",".join(modes), "--elements",
               str(args.elements), "--bw", f"{args.bw:g}", "--k", str(args.k), "--window",
               str(args.window), "--repeat", str(args.repeat), "--switch", "builtin",
               "--out", out_dir]
    return (command + (["--workers", str(args.workers)] if args.workers else [])
            + (["--loss", f"{args.loss:g}"] if getattr(args, "loss", None) else []))


def point_args(args, point):
    """calibrate's arguments for one grid point's emulation."""
    narrowed = copy.copy(args)
    narrowed.topo, narrowed.workers = point.topo, point.workers
    narrowed.bw, narrowed.loss = point.bw_mbit, point.loss_pct
    return narrowed


def emulate(args, out_dir: str, modes: list) -> list:
    command = compare_command(args, out_dir, modes)
    progress("emulating: " + " ".join(command))
    finished = subprocess.run(command, cwd=REPO, stdout=sys.stderr)
    if finished.returncode != 0:
        raise RunFailed(f"the emulation (compare) exited {finished.returncode}")
    return results.load_runs(out_dir)


def relative(simulated, emulated):
    if simulated is None or not emulated:
        return None
    return (simulated - emulated) / emulated


def comparison_rows(emulated: list, simulated: list) -> list:
    """Per mode: medians of seconds and mean bytes sent per host, both sides, differences."""
    rows = []
    emulated_summary = {r["mode"]: r for r in aggregate.summarize_runs(emulated)}
    for row in aggregate.summarize_runs(simulated):
        other = emulated_summary.get(row["mode"])
        if other is None:
            continue
        rows.append({"mode": row["mode"], "workers": row["workers"],
                     "emulated_s": other["median_s"], "simulated_s": row["median_s"],
                     "time_diff": relative(row["median_s"], other["median_s"]),
                     "emulated_bytes": other["bytes_per_host"],
                     "simulated_bytes": row["bytes_per_host"],
                     "bytes_diff": relative(row["bytes_per_host"], other["bytes_per_host"])})
    return rows


def format_rows(rows: list) -> str:
    def pct(value):
        return "-" if value is None else f"{100 * value:+.1f}%"

    def num(value, scale=1.0, digits=3):
        return "-" if value is None else f"{value / scale:.{digits}f}"
    lines = ["mode  workers  emulated_s  simulated_s  time_diff  emulated_MB/host  "
             "simulated_MB/host  bytes_diff"]
    for r in rows:
        lines.append(f"{r['mode']:<5} {r['workers']:>8} {num(r['emulated_s']):>11} "
                     f"{num(r['simulated_s']):>12} {pct(r['time_diff']):>10} "
                     f"{num(r['emulated_bytes'], 1e6):>17} {num(r['simulated_bytes'], 1e6):>18} "
                     f"{pct(r['bytes_diff']):>11}")
    return "\n".join(lines)


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    if args.grid:
        return calibrate_grid.run_grid(args, argv, emulate, lambda p: point_args(args, p))
    if not args.topo or not args.bw:
        raise UsageError("--topo and --bw are required (or --grid)")
    if args.loss is not None:
        raise UsageError("--loss narrows --grid only")
    modes = comma_list(choices=("ina",) + ALGORITHMS, error=UsageError,
                       bad="--modes: unknown mode {first!r}")(args.modes)
    out = args.out or tempfile.mkdtemp(prefix="calibrate-")
    if args.emulated:
        try:
            emulated = results.load_runs(args.emulated)
        except ValueError as e:
            raise UsageError(str(e)) from None
    else:
        emulated = emulate(args, os.path.join(out, "emulated"), modes)
    if not emulated or not all(run.correct for run in emulated):
        raise RunFailed("the emulation has no correct run to calibrate against")
    workers = emulated[0].workers
    if args.workers and args.workers != workers:
        raise UsageError(f"--workers {args.workers}, but the emulated runs have {workers}")
    todo = [Request(args.topo, mode, workers, emulated[0].elements, args.bw, k=args.k,
                    window=args.window)
            for mode in modes]                   # deterministic: one run per mode
    meta = {"command": ["python", "-m", "experiments", "calibrate"] + list(argv),
            "topo": args.topo, "switch": "simgrid", "k": args.k, "window": args.window,
            "link": {"bw_mbit": args.bw}, "started": results.now(),
            **results.provenance()}
    simulated = run_requests(todo, os.path.join(out, "simulated"), meta)
    rows = comparison_rows(emulated, simulated)
    if not rows:
        raise RunFailed("no mode was both emulated and simulated")
    print(format_rows(rows))
    worst = max(abs(d) for r in rows for d in (r["time_diff"], r["bytes_diff"])
                if d is not None)
    verdict = "within" if worst * 100 <= args.threshold else "ABOVE"
    print(f"largest relative difference: {100 * worst:.1f}% ({verdict} {args.threshold:g}%)")
    progress(f"results in {out}")
    return 0 if verdict == "within" else 1
