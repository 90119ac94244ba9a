"""The designs side by side (docs/designs.md): ours, SwitchML and ATP, with the ring beside
them, on the same fabric, each table from one `experiments compare` per setting, in one
results file.

    sudo .venv/bin/python scripts/bench_designs.py --out docs/results/designs/designs.json \
        [--repeat 3] [--work-dir DIR] [--tables fabric,loss,tenants,two-level]
    .venv/bin/python scripts/bench_designs.py --markdown docs/results/designs/designs.json

Tables (each a list of compares, modes alternating within each):
  fabric     star:8, 500,000 int32, 100 Mbit/s: ina, switchml, atp, ring
  loss       the same at 1% loss on every link
  tenants    star:8, 200,000 int32, 100 Mbit/s, 1, 2 and 4 jobs (8, 4, 2 workers each), the
             switch's ATP pool 64 aggregators: fewer than the jobs keep in flight
  two-level  leafspine:2,1,4, 500,000 int32, 100 Mbit/s: ina, atp, ring (SwitchML refuses
             a tree of several switches)
A row per (table, jobs, mode): the correct runs of all jobs, their median and the wire bound,
the wire bytes each host sent, the switch memory the design holds for a job (from the
program's P4Info: the bytes of every register cell of the design, times the cells a job
reserves on each switch: ours and SwitchML 2 x window, ATP none, its pool shared), the
retransmissions, and for ATP what its servers got (fragments whole from the switches, one
worker's fragments, collisions).  Exits 1 if a run was not correct, 2 on bad input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:    # run as a script: only scripts/ is on the path
    sys.path.insert(0, REPO_ROOT)

from contracts.cli import OneLineParser, RunFailed, UsageError, run_command  # noqa: E402
from contracts.jobs import default_k  # noqa: E402
from jobs.results import now, provenance  # noqa: E402

CONTROLS = {"ina": "AggIngress.aggregation.", "switchml": "AggIngress.switchml.",
            "atp": "AggIngress.atp."}
TABLES = (
    ("fabric", "star:8", 500000, [], "ina,switchml,atp,ring", (1,)),
    ("loss", "star:8", 500000, ["--loss", "1"], "ina,switchml,atp,ring", (1,)),
    ("tenants", "star:8", 200000, ["--aggregators", "64"], "ina,switchml,atp", (1, 2, 4)),
    ("two-level", "leafspine:2,1,4", 500000, [], "ina,atp,ring", (1,)),
)


def parse_args(argv):
    parser = OneLineParser(prog="bench_designs.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="FILE")
    parser.add_argument("--work-dir", default="/var/tmp/ina-bench-designs", metavar="DIR")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tables", default=",".join(t[0] for t in TABLES))
    args = parser.parse_args(argv)
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    known = [t[0] for t in TABLES]
    args.tables = [t for t in args.tables.split(",") if t]
    for name in args.tables:
        if name not in known:
            raise UsageError(f"--tables: unknown table {name!r} (choose from "
                             f"{', '.join(known)})")
    return args


def cell_bytes(k: int, aggregators: int | None) -> dict:
    """{design: bytes of one register cell of its control} in the program built at K = k."""
    from controller.client import Pipeline
    from topologies.program import compile_program
    with tempfile.TemporaryDirectory() as build:
        program = compile_program("builtin", build, k, defines=(
            {"ATP_AGGREGATORS": aggregators} if aggregators else None))
        p4info = Pipeline.from_files(program.p4info, program.device_config).p4info
    sizes = {}
    for register in p4info.registers:
        for design, prefix in CONTROLS.items():
            if register.preamble.name.startswith(prefix):
                width = register.type_spec.bitstring.bit.bitwidth
                sizes[design] = sizes.get(design, 0) + (width + 7) // 8
    return sizes


def compare(args, name, topo, elements, extra, modes, jobs) -> dict:
    out = os.path.join(args.work_dir, f"{name}-{jobs}")
    workers = 8 // jobs
    command = [sys.executable, "-m", "experiments", "compare", "--topo", topo, "--modes",
               modes, "--elements", str(elements), "--bw", "100", "--repeat",
               str(args.repeat), "--jobs", str(jobs), "--workers", str(workers),
               "--out", out, *extra]
    print(f"bench_designs: {name}, {jobs} job(s): {' '.join(command[3:])}", flush=True)
    result = subprocess.run(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True)
    path = os.path.join(out, "results.json")
    if not os.path.exists(path):
        raise RunFailed(f"{name}: compare wrote no results ({result.stderr.strip()[-300:]})")
    with open(path) as handle:
        document = json.load(handle)
    document["exit_code"] = result.returncode
    return document


def rows_of(name, jobs, document, sizes, aggregators) -> list:
    rows = []
    runs = document["runs"]
    for summary in document["summary"]:
        mode = summary["mode"]
        mine = [r for r in runs if r["mode"] == mode]
        servers = [rep["server"] for r in mine for rep in r.get("reports", [])
                   if "server" in rep]
        windows = {r.get("window") for r in mine}
        window = max(w for w in windows if w) if any(windows) else None
        memory = (2 * window * sizes[mode] / 1024 if mode in ("ina", "switchml") and window
                  else 0 if mode == "atp" else None)
        done = sum(s["acks_sent"] - s["answered_again"] for s in servers)
        rows.append({
            "table": name, "topo": summary["topo"], "jobs": jobs,
            "workers": summary["workers"], "elements": summary["elements"],
            "bw_mbit": summary["bw_mbit"], "loss_pct": document["meta"]["link"].get("loss_pct"),
            "mode": mode, "correct_runs": summary["correct_runs"], "runs": summary["runs"],
            "median_s": summary["median_s"], "bound_s": summary["bound_s"],
            "of_bound": summary["of_bound"],
            "wire_mb_per_host": (summary["wire_bytes_per_host"] / 1e6
                                 if summary["wire_bytes_per_host"] else None),
            "window": window, "kb_per_job_per_switch": memory,
            "atp_pool_kb": (aggregators * sizes["atp"] / 1024 if mode == "atp" else None),
            "retransmissions": sum(r["retransmissions"] or 0 for r in mine),
            "server_whole_pct": 100 * sum(s["whole"] for s in servers) / done if done else None,
            "server_collisions": sum(s["collisions"] for s in servers) if servers else None,
            "git_commit": document["meta"].get("git_commit"),
            "load_average": document["meta"].get("load_average")})
    return rows


COLUMNS = (("table", "table"), ("jobs", "jobs"), ("workers", "workers/job"),
           ("mode", "mode"), ("runs", "correct/runs"), ("median_s", "median s"),
           ("bound_s", "link bound s"), ("of_bound", "median/bound"),
           ("wire_mb_per_host", "wire MB sent/host"),
           ("kb_per_job_per_switch", "switch KB per job"),
           ("retransmissions", "retransmissions"),
           ("server_whole_pct", "ATP: whole at the server %"),
           ("server_collisions", "ATP: collisions"))
KEYS = {"runs": "correct_runs runs"}


def markdown(path: str) -> str:
    """The results file's rows as the Markdown table of docs/designs.md, with its marker."""
    with open(path) as handle:
        document = json.load(handle)
    marker = ("<!-- measured: " + os.path.relpath(os.path.abspath(path), REPO_ROOT) +
              "\ncommand: sudo .venv/bin/python scripts/bench_designs.py --out "
              "docs/results/designs/designs.json\ncolumns: " +
              " | ".join(f"{title}={KEYS.get(key, key)}" for key, title in COLUMNS) + "\n-->")

    def cell(key, row):
        value = row.get(key)
        if key == "runs":
            return f"{row['correct_runs']}/{row['runs']}"
        if value is None:
            return "-"
        if key in ("median_s", "bound_s"):
            return f"{value:.3f}"
        if key in ("of_bound", "wire_mb_per_host"):
            return f"{value:.2f}"
        if key in ("kb_per_job_per_switch", "server_whole_pct"):
            return f"{value:.1f}"
        return str(value)
    lines = [marker, "| " + " | ".join(t for _, t in COLUMNS) + " |",
             "|" + "|".join("---" if k in ("table", "mode") else "--:" for k, _ in COLUMNS)
             + "|"]
    lines += ["| " + " | ".join(cell(k, r) for k, _ in COLUMNS) + " |"
              for r in document["rows"]]
    return "\n".join(lines)


def main(argv) -> int:
    if argv[:1] == ["--markdown"]:
        if len(argv) != 2:
            raise UsageError("--markdown FILE")
        print(markdown(argv[1]))
        return 0
    args = parse_args(argv)
    meta = {"started": now(), **provenance(), "command": ["scripts/bench_designs.py", *argv],
            "repeat": args.repeat}
    rows, failed = [], []
    for name, topo, elements, extra, modes, job_counts in TABLES:
        if name not in args.tables:
            continue
        aggregators = int(extra[extra.index("--aggregators") + 1]) \
            if "--aggregators" in extra else 2048
        sizes = cell_bytes(default_k("builtin"), aggregators)
        for jobs in job_counts:
            document = compare(args, name, topo, elements, extra, modes, jobs)
            found = rows_of(name, jobs, document, sizes, aggregators)
            rows += found
            failed += [f"{name} {jobs} job(s) {r['mode']}" for r in found
                       if r["correct_runs"] != r["runs"]]
    meta["finished"] = now()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump({"meta": meta, "rows": rows}, handle, indent=1)
    for row in rows:
        print(f"{row['table']:9} {row['jobs']} {row['mode']:8} {row['correct_runs']}/"
              f"{row['runs']} {row['median_s']} s, {row['of_bound']} of bound")
    if failed:
        raise RunFailed("not every run was correct: " + "; ".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(run_command(lambda: main(sys.argv[1:])))
