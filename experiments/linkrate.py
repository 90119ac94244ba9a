"""`python -m experiments linkrate`: where each switch back end stops being link-bound.

    linkrate --topo leafspine:2,1,4 --bw 10,100,1000,0 --backends c,python
             --modes ina,ring --elements 500000 --k 256 --out DIR [--repeat N] [--workers P]

For every back end and link rate (0: unshaped links) it runs `compare` into
DIR/<backend>-<bw>mbit/ (or DIR/<backend>-unshaped/), then writes DIR/linkrate.json (per back
end and rate: each mode's median seconds, its link bound and median/bound, and the speedup of
in-network aggregation over every host mode; with the command, start time and commit) and
draws DIR/linkrate.png (`python -m experiments plot DIR` redraws it): in-network
aggregation's time over its link bound against the link rate, one line per back end (1.0 is
link-bound), and the ring's time over in-network aggregation's.  Each row also keeps the
machine's 1-minute load average when its compare started and the median CPU seconds its
workers and switches used per run: on a shared machine, what else ran explains a slow point.
"""

from __future__ import annotations

import json
import os
import statistics

from contracts.cli import DEFAULT_MODES, OneLineParser, UsageError, comma_list, positive_int
from contracts.jobs import add_dtype_option, add_k_option
from contracts.wire import DEFAULT_K
from jobs import results
from experiments import compare
from experiments.aggregate import summarize_runs
from jobs.runner import progress
from p4switch.targets import BACKENDS
from topologies.spec import parse_topology


number_list = comma_list(float, minimum=0, bad="expected comma-separated numbers, got {text!r}",
                         unknown="expected numbers >= 0 (0: unshaped), got {text!r}")
backend_list = comma_list(choices=BACKENDS,
                          bad=f"expected a comma list of {', '.join(BACKENDS)}, got {{text!r}}")


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments linkrate",
                      description="In-network aggregation against its link bound, per link "
                                  "rate and switch back end.")
    p.add_argument("--topo", required=True)
    p.add_argument("--bw", type=number_list, required=True, metavar="MBIT1,MBIT2,...",
                   help="link rates in Mbit/s; 0 leaves the links unshaped")
    p.add_argument("--backends", type=backend_list, default=["c", "python"])
    p.add_argument("--modes", default=DEFAULT_MODES)
    p.add_argument("--elements", type=positive_int, required=True)
    p.add_argument("--workers", type=positive_int)
    add_dtype_option(p)
    add_k_option(p, DEFAULT_K)
    p.add_argument("--repeat", type=positive_int, default=1)
    p.add_argument("--out", required=True, metavar="DIR")
    return p


def run_directory(out: str, backend: str, bw: float) -> str:
    label = f"{bw:g}mbit" if bw else "unshaped"
    return os.path.join(out, f"{backend}-{label}")


def compare_argv(args, backend: str, bw: float) -> list:
    argv = ["--topo", args.topo, "--modes", args.modes, "--elements", str(args.elements),
            "--dtype", args.dtype, "--k", str(args.k), "--repeat", str(args.repeat),
            "--switch", "builtin", "--switch-backend", backend,
            "--out", run_directory(args.out, backend, bw)]
    if bw:
        argv += ["--bw", f"{bw:g}"]
    if args.workers:
        argv += ["--workers", str(args.workers)]
    return argv


def summarize(args, loads: dict = None) -> list:
    """One row per back end, rate and mode (see the module docstring); `loads`: the load
    average at the start of each (backend, rate)'s compare."""
    rows = []
    for backend in args.backends:
        for bw in args.bw:
            directory = run_directory(args.out, backend, bw)
            runs = results.load_runs(directory)
            for row in summarize_runs(runs):
                rows.append({"backend": backend, "bw_mbit": bw or None, "mode": row["mode"],
                             "median_s": row["median_s"], "bound_s": row["bound_s"],
                             "of_bound": row["of_bound"],
                             "ina_speedup": row["ina_speedup"],
                             "correct_runs": row["correct_runs"], "runs": row["runs"],
                             "cpu_seconds": median_cpu_seconds(runs, row["mode"]),
                             "load_1min": (loads or {}).get((backend, bw))})
    return rows


def median_cpu_seconds(runs: list, mode: str):
    """Median over the mode's runs of its workers' plus its switches' CPU seconds (None
    when a run lacks either)."""
    totals = [r.worker_cpu_seconds + r.switch_cpu_seconds for r in runs
              if r.mode == mode and r.worker_cpu_seconds is not None
              and r.switch_cpu_seconds is not None]
    return statistics.median(totals) if totals else None


def setup_title(command: list) -> str:
    """The setup of a linkrate run, from its command: topology, p, K, E, dtype."""
    args = build_parser().parse_args(list(command)[4:])
    try:
        hosts = len(parse_topology(args.topo).hosts)
    except ValueError:
        hosts = None
    workers = args.workers or hosts
    return ", ".join(part for part in (args.topo, f"p = {workers}" if workers else "",
                                       f"K = {args.k}", f"E = {args.elements:,} {args.dtype}")
                     if part)


def plot(rows: list, path: str, document: dict | None = None) -> None:
    """linkrate.png from the rows; `document` (linkrate.json: command, started, git_commit)
    gives the title's setup and the footer's provenance (experiments.figure.provenance)."""
    import matplotlib   # here, not at the top: matplotlib takes a second to load, runs need none
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from experiments.figure import provenance, save_with_footer

    rates = sorted({r["bw_mbit"] for r in rows if r["bw_mbit"]})
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    for backend in dict.fromkeys(r["backend"] for r in rows):
        ina = {r["bw_mbit"]: r for r in rows if r["backend"] == backend and r["mode"] == "ina"}
        shaped = [bw for bw in rates if bw in ina and ina[bw]["of_bound"]]
        left.plot(shaped, [ina[bw]["of_bound"] for bw in shaped], marker="o",
                  label=f"{backend} back end")
        ring = {r["bw_mbit"]: r for r in rows if r["backend"] == backend and r["mode"] == "ring"}
        points = [bw for bw in rates + [None] if bw in ring and ring[bw]["ina_speedup"]]
        xs = [bw if bw else max(rates) * 4 for bw in points]
        line, = right.plot(xs, [ring[bw]["ina_speedup"] for bw in points], marker="o",
                           label=f"{backend} back end")
        # what the links alone allow: the ratio of the two bounds (shaped rates only)
        allowed = [bw for bw in shaped if bw in ring and ring[bw]["bound_s"]]
        if allowed:
            right.plot(allowed, [ring[bw]["bound_s"] / ina[bw]["bound_s"] for bw in allowed],
                       color=line.get_color(), marker="o", markerfacecolor="none",
                       linestyle="--", label=f"{backend}: the links allow")
    left.axhline(1.0, color="grey", linestyle=":", label="link-bound (1.0)")
    left.set(xlabel="link rate (Mbit/s)", ylabel="ina time / its link bound (log)",
             title="in-network aggregation vs its link bound")
    right.axhline(1.0, color="grey", linestyle=":", label="as fast as the ring (1.0)")
    right.set(xlabel="link rate (Mbit/s; rightmost: unshaped)",
              ylabel="ring time / ina time", title="speedup over the ring")
    for axis in (left, right):
        if any(len(line.get_xdata()) for line in axis.get_lines()
               if line.get_linestyle() != ":"):
            axis.set_xscale("log")      # not without points: a log axis needs some
        axis.grid(True, which="both", alpha=0.3)
        # below the axes: a legend inside would cover points
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    if any(r["of_bound"] for r in rows):
        left.set_yscale("log")
    if rates:
        right.set_xticks(rates + [max(rates) * 4],
                         [f"{bw:g}" for bw in rates] + ["unshaped"])
        right.minorticks_off()
    document = document or {}
    if document.get("command"):
        fig.suptitle(f"Allreduce per link rate and switch back end "
                     f"({setup_title(document['command'])})", fontsize=10)
    save_with_footer(fig, path, provenance(document), dpi=120)


def redraw(directory: str, out_dir: str) -> str:
    """linkrate.png again from DIR/linkrate.json (`python -m experiments plot DIR`)."""
    source = os.path.join(directory, "linkrate.json")
    try:
        with open(source) as handle:
            document = json.load(handle)
        rows = document["rows"]
    except (OSError, ValueError, KeyError) as e:
        raise UsageError(f"{source}: not a linkrate.json ({e})") from None
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "linkrate.png")
    plot(rows, path, document)
    return path


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    if "ina" not in args.modes.split(","):
        raise UsageError("--modes must include ina (the rates are measured against it)")
    failed, loads, started = 0, {}, results.now()
    for backend in args.backends:
        for bw in args.bw:
            loads[(backend, bw)] = round(os.getloadavg()[0], 2)
            progress(f"linkrate: {backend} back end, "
                     f"{f'{bw:g} Mbit/s' if bw else 'unshaped links'} "
                     f"(load average {loads[(backend, bw)]:g})")
            failed |= compare.main(compare_argv(args, backend, bw))
    rows = summarize(args, loads)
    os.makedirs(args.out, exist_ok=True)
    document = {"command": ["python", "-m", "experiments", "linkrate"] + list(argv),
                "started": started, **results.provenance(), "rows": rows}
    with open(os.path.join(args.out, "linkrate.json"), "w") as f:
        json.dump(document, f, indent=1)
    plot(rows, os.path.join(args.out, "linkrate.png"), document)
    for row in rows:
        print(f"{row['backend']:>6} {('%g' % row['bw_mbit']) if row['bw_mbit'] else 'unshaped':>9}"
              f" {row['mode']:>5} {row['median_s'] or float('nan'):8.3f} s"
              + (f"  {row['of_bound']:.2f}x bound" if row["of_bound"] else "")
              + (f"  ring/ina {row['ina_speedup']:.2f}" if row["ina_speedup"] else "")
              + (f"  {row['cpu_seconds']:.2f} CPU-s" if row["cpu_seconds"] is not None else "")
              + (f"  load {row['load_1min']:g}" if row["load_1min"] is not None else ""))
    progress(f"linkrate: wrote {os.path.join(args.out, 'linkrate.json')} and linkrate.png")
    return 1 if failed else 0
