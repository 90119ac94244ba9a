"""The fair-fight benchmark: every host algorithm, Gloo and in-network aggregation at each
link rate, each against its link bound, in one results file.

    sudo .venv/bin/python scripts/bench_baselines.py --out docs/results/baselines/baselines.json \
        [--points leafspine:2,1,4@500000,star:4@1000000] [--dtypes int32,float32] \
        [--bw 10,100,0] [--repeat 3] [--modes ...]

For every point (topology and vector size), dtype and link rate it runs `experiments compare`
with every mode at once (--repeat runs of each, alternating), keeps each compare's results in
WORK_DIR/<point>, and writes FILE: "rows", one per (point, dtype, link, mode) with the median
and range of the correct runs, the wire bound, median/bound, ina's speed-up over the mode and
what the links alone allow (the bounds' ratio), and "meta" (commit, cores, load, the command).
It prints a line per point as it goes and, at the end, every row over AT_BOUND of the larger
of its bounds (each row also names the commit and load its compare ran at).
Exits 1 if a run was not correct, 2 on bad input.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:    # run as a script: only scripts/ is on the path
    sys.path.insert(0, REPO_ROOT)

from contracts.cli import OneLineParser, RunFailed, UsageError, run_command  # noqa: E402
from experiments.aggregate import AT_BOUND  # noqa: E402
from jobs.results import now, provenance  # noqa: E402

ALL_MODES = ("ina,ps,binomial-tree,butterfly,ring,rabenseifner,rabenseifner-nearest,"
             "double-binary-tree,gloo")


def parse_args(argv):
    parser = OneLineParser(prog="bench_baselines.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="FILE")
    parser.add_argument("--work-dir", default="/var/tmp/ina-bench-baselines", metavar="DIR",
                        help="each compare's results directory goes under it")
    parser.add_argument("--points", default="leafspine:2,1,4@500000,star:4@1000000",
                        help="TOPO@ELEMENTS, comma-separated (a TOPO's own commas stay)")
    parser.add_argument("--dtypes", default="int32,float32")
    parser.add_argument("--bw", default="10,100,0", help="Mbit/s; 0: unshaped")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default=ALL_MODES)
    parser.add_argument("--collect", action="store_true",
                        help="run nothing: write FILE from the compares already in WORK_DIR")
    args = parser.parse_args(argv)
    args.points = _points(args.points)
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    try:
        args.bw = [float(b) for b in args.bw.split(",") if b]
    except ValueError:
        raise UsageError(f"--bw {args.bw!r}: give Mbit/s, comma-separated") from None
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    return args


def _points(text: str) -> list:
    """[(topology, elements)] from "leafspine:2,1,4@500000,star:4@1000000"."""
    points, rest = [], text
    while rest:
        topo, sep, tail = rest.partition("@")
        digits = tail.split(",", 1)
        if not sep or not topo or not digits[0].isdigit():
            raise UsageError(f"--points {text!r}: give TOPO@ELEMENTS, comma-separated")
        points.append((topo.strip(","), int(digits[0])))
        rest = digits[1] if len(digits) > 1 else ""
    return points


def compare(topo: str, elements: int, dtype: str, bw: float, args, out_dir: str) -> dict:
    command = [sys.executable, "-m", "experiments", "compare", "--topo", topo,
               "--modes", args.modes, "--elements", str(elements), "--dtype", dtype,
               "--repeat", str(args.repeat), "--out", out_dir]
    if bw:
        command += ["--bw", f"{bw:g}"]
    results = os.path.join(out_dir, "results.json")
    if os.path.exists(results):             # an earlier run's: never read as this one's
        os.remove(results)
    finished = subprocess.run(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)
    last_words = (finished.stderr.strip().splitlines() or ["no output"])[-1]
    if not os.path.exists(results):
        raise RunFailed(f"compare at {topo} {dtype} {bw:g} Mbit/s wrote no results: "
                        + last_words)
    with open(results) as f:
        document = json.load(f)
    if not document.get("summary"):         # stopped before any run finished
        raise RunFailed(f"compare at {topo} {dtype} {bw:g} Mbit/s finished no run (exit "
                        f"{finished.returncode}): {last_words}")
    document["command"] = command[1:]
    document["exit_code"] = finished.returncode
    return document


def collected(out_dir: str) -> dict:
    """A compare of an earlier run of this script (--collect)."""
    try:
        with open(os.path.join(out_dir, "results.json")) as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"--collect: no results in {out_dir} ({e})") from None
    failed = any(not run["correct"] for run in document["runs"])
    return {**document, "exit_code": 1 if failed else 0}


def of_larger_bound(row: dict):
    """Median over the larger of the row's bounds: the fabric's where the simulator gave one
    (no implementation beats it), else the host link's."""
    fabric = row.get("of_fabric_bound")
    return row["of_bound"] if fabric is None or row["of_bound"] is None \
        else min(row["of_bound"], fabric)


def rows_of(document: dict) -> list:
    """One row per summary row, with the medians over its correct runs of the workers' CPU
    seconds (their timed parts, all ranks) and of the machine's busy cores (jobs/cpu.py):
    what says which resource set the pace where the links did not."""
    keep = ("topo", "dtype", "elements", "workers", "bw_mbit", "mode", "runs", "correct_runs",
            "median_s", "min_s", "max_s", "bound_s", "of_bound", "fabric_bound_s",
            "of_fabric_bound", "ina_speedup", "allowed_speedup", "paced_by",
            "wire_bytes_per_host")
    rows = []
    for summary in document["summary"]:
        row = {key: summary.get(key) for key in keep}
        runs = [run for run in document.get("runs", []) if run.get("correct")
                and all(run.get(key) == summary.get(key)
                        for key in ("mode", "topo", "dtype", "elements", "bw_mbit"))]
        for key, source in (("worker_cpu_s", "worker_cpu_seconds"),
                            ("machine_busy_cores", "machine_busy_cores")):
            values = [run[source] for run in runs if run.get(source) is not None]
            row[key] = statistics.median(values) if values else None
        rows.append(row)
    return rows


MARKDOWN = (("topology", "topo"), ("dtype", "dtype"), ("link Mbit/s", "bw_mbit"),
            ("mode", "mode"), ("correct/runs", "correct_runs runs"), ("median s", "median_s"),
            ("min–max s", "min_s max_s"), ("link bound s", "bound_s"),
            ("median/bound", "of_bound"), ("fabric bound s", "fabric_bound_s"),
            ("median/fabric bound", "of_fabric_bound"), ("ina speedup", "ina_speedup"),
            ("links allow", "allowed_speedup"), ("paced by", "paced_by"))


def markdown(rows: list, source: str, command: list) -> str:
    """The rows as a Markdown table with its measured marker (tests/docs/figures.py)."""
    def cell(row, keys):
        values = [row.get(k) for k in keys.split()]
        if keys == "correct_runs runs":
            return f"{values[0]}/{values[1]}"
        if keys == "bw_mbit":
            return f"{values[0]:g}" if values[0] else "unshaped"
        if any(v is None for v in values):
            return "-"
        if keys in ("ina_speedup", "allowed_speedup"):
            return f"{values[0]:.2f}×"
        if isinstance(values[0], float):
            return "–".join(f"{v:.2f}" for v in values)
        return str(values[0])
    lines = [f"<!-- measured: {source}", f"command: {' '.join(command)}",
             "columns: " + " | ".join(f"{title}={keys}" for title, keys in MARKDOWN), "-->",
             "| " + " | ".join(title for title, _ in MARKDOWN) + " |",
             "|" + "|".join("---" if keys in ("topo", "dtype", "mode", "paced_by") else "--:"
                            for _, keys in MARKDOWN) + "|"]
    lines += ["| " + " | ".join(cell(row, keys) for _, keys in MARKDOWN) + " |"
              for row in rows]
    return "\n".join(lines)


def main(argv) -> int:
    args = parse_args(argv)
    meta = {**provenance(), "started": now(), "command": ["scripts/bench_baselines.py", *argv]}
    rows, metas, failed, segmentation = [], [], False, set()
    for topo, elements in args.points:
        for dtype in args.dtypes:
            for bw in args.bw:
                name = f"{topo.replace(':', '').replace(',', '-')}-{elements}-{dtype}-{bw:g}"
                started = time.monotonic()
                out_dir = os.path.join(args.work_dir, name)
                document = (collected(out_dir) if args.collect
                            else compare(topo, elements, dtype, bw, args, out_dir))
                metas.append(document["meta"])
                failed |= document["exit_code"] != 0
                segmentation.add(document["meta"].get("segmentation_offload"))
                point_rows = rows_of(document)
                for row in point_rows:
                    row["load_1min"] = document["meta"].get("load_average", [None])[0]
                    row["git_commit"] = document["meta"].get("git_commit")
                rows += point_rows
                worst = max(point_rows, key=lambda r: of_larger_bound(r) or 0)
                print(f"bench: {name}: {time.monotonic() - started:.0f} s, slowest "
                      f"{worst['mode']} at {of_larger_bound(worst) or 0:.2f}× its bound"
                      if of_larger_bound(worst) else f"bench: {name}: done", flush=True)
    if args.collect:      # when and where the compares ran, not this collection
        first = min(metas, key=lambda m: m["started"])
        meta.update({key: first[key] for key in ("cores", "load_average", "git_commit",
                                                 "started")})
        meta["command"] = [part for part in meta["command"] if part != "--collect"]
    meta["finished"] = now()
    meta["segmentation_offload"] = sorted(map(str, segmentation))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
        f.write("\n")
    over = [r for r in rows if of_larger_bound(r) and of_larger_bound(r) > AT_BOUND]
    for r in over:
        print(f"bench: over {AT_BOUND:.2f}× its bound: {r['mode']} at {r['topo']} {r['dtype']} "
              f"{r['bw_mbit']:g} Mbit/s: {of_larger_bound(r):.2f}×")
    print(markdown(rows, os.path.relpath(os.path.abspath(args.out), REPO_ROOT),
                   ["sudo", ".venv/bin/python", *meta["command"]]))
    print(f"bench: wrote {args.out} ({len(rows)} rows, {len(over)} over {AT_BOUND:.2f}×)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_command(lambda: main(sys.argv[1:]), label="bench_baselines.py"))
