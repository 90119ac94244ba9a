"""Figures of `python -m experiments train` (and `python -m experiments train-plot DIR
[--out FIGDIR]`, which redraws them from DIR/results.json):

  train_loss.png     the training loss (the global batch's, per step) against step and
                     against wall time, one line per mode, at the largest worker count
  scale_factor.png   T_n / (n T_1) against the worker count n per mode, with 1 (ideal), each
                     mode's link ceiling (with --bw: see scale_figure), and
                     the machine's own ceiling min(1, cores / n): the n training processes
                     share its cores, so even free communication cannot do better
                     (only with runs at more than one n and a single-worker run)
  step_time.png      seconds per step split into computation and communication, per mode
                     and worker count (median over the steps)
  stragglers.png     with --host-slowdown: per mode, every rank's median computation and
                     communication per step at the largest n (the others wait for the
                     straggler inside their allreduce)

Every figure's title says the setup (topology, workers p, K, link rate) and its footer the
command, start time and commit of the run (results.json's meta, as experiments.plot does);
legends sit outside the axes, where they cover no data.
"""

from __future__ import annotations

import json
import os

import numpy as np

from contracts.cli import OneLineParser, UsageError
from experiments.figure import provenance, save_with_footer
from experiments.plot import plt, style
from jobs.training import add_scale_factors, throughput

SINGLE_STYLE = ("black", "o", "1 worker (no allreduce)")


def _style(mode: str):
    return SINGLE_STYLE if mode == "single" else style(mode)


PARALLEL_LINES = {"hook": "-", "ddp": "--", "fsdp": ":"}


def _run_style(run: dict):
    """(colour, line style, label) of a run: colour by mode, line by --parallel (hook runs,
    and results from before --parallel, keep the mode's own label)."""
    color, _marker, label = _style(run["mode"])
    parallel = run.get("parallel", "hook")
    if parallel != "hook":
        label = f"{run['mode']} ({parallel})"
    return color, PARALLEL_LINES.get(parallel, "-"), label


def draw(runs: list, out_dir: str, cpus: int | None = None, bw_mbit=None,
         meta: dict | None = None) -> list:
    """Write the figures for `runs` (results.json's entries) into out_dir; their paths.
    `meta` (results.json's): the setup in the titles, the run's provenance in the footers."""
    done = [r for r in runs if not r.get("error") and "per_step" in r]
    if not done:
        return []
    SETUP["meta"], SETUP["bw_mbit"] = dict(meta or {}), bw_mbit
    os.makedirs(out_dir, exist_ok=True)
    paths = [loss_figure(done, out_dir), step_time_figure(done, out_dir)]
    largest = [r for r in done if r["workers"] == max(x["workers"] for x in done)]
    if any(rank.get("slowdown", 1) > 1 for r in largest for rank in r.get("per_rank", [])):
        paths.append(straggler_figure(largest, out_dir))
    if len({r["workers"] for r in done}) > 1 and any(r.get("scale_factor") for r in done):
        paths.append(scale_figure(done, out_dir, cpus, bw_mbit))
    return paths


# What draw() was told: results.json's meta and the link rate.
SETUP = {"meta": {}, "bw_mbit": None}


def setting(workers=None) -> str:
    """The setup for a title: "star:4, p = 4, K = 64, links unshaped"."""
    meta = SETUP["meta"]
    bw = SETUP["bw_mbit"] if SETUP["bw_mbit"] is not None else meta.get("link_bw_mbit")
    parts = [meta.get("topo") or "",
             f"p = {workers}" if isinstance(workers, int) else (workers or ""),
             f"K = {meta['k']}" if meta.get("k") else "",
             f"links {bw:g} Mbit/s" if bw else "links unshaped"]
    return ", ".join(part for part in parts if part)


def _legend_outside(axis, **options) -> None:
    """The legend right of the axes: it covers no data."""
    axis.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **options)


def _save(fig, out_dir: str, name: str) -> str:
    return save_with_footer(fig, os.path.join(out_dir, name), provenance(SETUP["meta"]))


def loss_figure(runs: list, out_dir: str) -> str:
    largest = max(r["workers"] for r in runs)
    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(11.5, 4), sharey=True)
    for run in (r for r in runs if r["workers"] == largest):
        color, line, label = _run_style(run)
        loss = run["per_step"]["loss"]
        by_step.plot(np.arange(len(loss)), loss, color=color, label=label, linewidth=1,
                     linestyle=line)
        by_time.plot(run["per_step"]["wall"], loss, color=color, label=label, linewidth=1,
                     linestyle=line)
    by_step.set_xlabel("step")
    by_step.set_ylabel("training loss (global batch)")
    by_time.set_xlabel("wall time (s)")
    by_step.set_yscale("log")
    for axis in (by_step, by_time):
        axis.grid(alpha=0.3)
    _legend_outside(by_time, fontsize=8)
    kinds = sorted({r.get("parallel", "hook") for r in runs})
    what = "DDP" if kinds == ["hook"] else "/".join(k.upper() if k != "hook" else "DDP+hook"
                                                     for k in kinds)
    fig.suptitle(f"{what} training on digits ({setting(largest)})", fontsize=10)
    return _save(fig, out_dir, "train_loss.png")


def scale_figure(runs: list, out_dir: str, cpus: int | None, bw_mbit=None) -> str:
    """With a link rate, each mode's link ceiling too: T_n / (n T_1) = t_1 / t_n, and a step
    takes at least t_1 (the single worker's step) plus the bytes a host sent in it over the
    link rate, so the factor is at most t_1 / (t_1 + bytes per step / B)."""
    fig, axis = plt.subplots(figsize=(9, 4.2))
    counts = sorted({r["workers"] for r in runs})
    single = next((r for r in runs if r["mode"] == "single"), None)
    if single:
        color, marker, label = SINGLE_STYLE
        axis.plot([1], [1.0], color=color, marker=marker, linestyle="", label=label)
    for mode in dict.fromkeys(r["mode"] for r in runs if r["mode"] != "single"):
        chosen = sorted((r for r in runs if r["mode"] == mode and r.get("scale_factor")
                         is not None), key=lambda r: r["workers"])
        if not chosen:
            continue
        color, marker, label = _style(mode)
        axis.plot([r["workers"] for r in chosen], [r["scale_factor"] for r in chosen],
                  color=color, marker=marker, label=label)
        if bw_mbit and single:
            t1 = single["seconds_per_step"]["total"]
            axis.plot([r["workers"] for r in chosen],
                      [t1 / (t1 + r["bytes_per_step"] * 8 / (bw_mbit * 1e6)) for r in chosen],
                      color=color, linestyle=":", linewidth=1,
                      label=f"{mode}: link ceiling at {bw_mbit:g} Mbit/s")
    axis.axhline(1.0, color="gray", linestyle=":", label="ideal (T_n = n T_1)")
    if cpus:
        axis.plot(counts, [min(1.0, cpus / n) for n in counts], color="gray", linestyle="--",
                  label=f"{cpus} cores shared by n processes: min(1, {cpus}/n)")
    axis.set_xticks(counts)
    axis.set_xlabel("workers n")
    axis.set_ylabel("scale factor T_n / (n T_1)")
    axis.set_yscale("log")
    axis.grid(alpha=0.3)
    _legend_outside(axis, fontsize=7)
    axis.set_title(f"Scale factor ({setting('p = ' + ', '.join(map(str, counts)))})",
                   fontsize=10)
    return _save(fig, out_dir, "scale_factor.png")


def step_time_figure(runs: list, out_dir: str) -> str:
    fig, axis = plt.subplots(figsize=(8.4, 4.2))
    labels, compute, comm, colors = [], [], [], []
    for run in sorted(runs, key=lambda r: (r["workers"], r.get("parallel", "hook"),
                                           r["mode"])):
        parallel = run.get("parallel", "hook")
        labels.append(f"{run['mode']}" + (f" {parallel}" if parallel != "hook" else "")
                      + f"\nn={run['workers']}")
        compute.append(run["seconds_per_step"]["compute"] * 1e3)
        comm.append(run["seconds_per_step"]["communication"] * 1e3)
        colors.append(_style(run["mode"])[0])
    x = np.arange(len(labels))
    axis.bar(x, compute, color="lightgray", edgecolor="black", label="computation")
    axis.bar(x, comm, bottom=compute, color=colors, edgecolor="black",
             label="communication (mode colour)")
    axis.set_xticks(x, labels, fontsize=7)
    axis.set_ylabel("ms per step (median)")
    axis.grid(alpha=0.3, axis="y")
    _legend_outside(axis, fontsize=8)
    counts = sorted({r["workers"] for r in runs})
    axis.set_title(f"Seconds per step ({setting(counts[0] if len(counts) == 1 else None)})",
                   fontsize=10)
    return _save(fig, out_dir, "step_time.png")


def straggler_figure(runs: list, out_dir: str) -> str:
    fig, axes = plt.subplots(1, len(runs), figsize=(3.6 * len(runs), 4), sharey=True,
                             squeeze=False)
    for axis, run in zip(axes[0], runs):
        ranks = run["per_rank"]
        x = np.arange(len(ranks))
        compute = [r["compute"] * 1e3 for r in ranks]
        comm = [r["communication"] * 1e3 for r in ranks]
        axis.bar(x, compute, color="lightgray", edgecolor="black", label="computation")
        axis.bar(x, comm, bottom=compute, color=_style(run["mode"])[0], edgecolor="black",
                 label="communication")
        axis.set_xticks(x, [f"{r['host']}" + (f"\n×{r['slowdown']:g}" if r["slowdown"] > 1
                                              else "") for r in ranks])
        axis.set_title(_style(run["mode"])[2], fontsize=9)
        axis.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel("ms per step (median)")
    _legend_outside(axes[0][-1], fontsize=8)
    fig.suptitle(f"Per-rank step time with a straggler ({setting(len(runs[0]['per_rank']))})",
                 fontsize=10)
    return _save(fig, out_dir, "stragglers.png")


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments train-plot",
                      description="Redraw experiments train's figures from DIR/results.json.")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--out", metavar="FIGDIR", help="default: DIR")
    p.add_argument("--cpus", type=int, help="cores of the machine the runs were made on "
                                            "(default: results.json's meta.cpus)")
    return p


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    path = os.path.join(args.directory, "results.json")
    try:
        with open(path) as handle:
            document = json.load(handle)
        runs, meta = document["runs"], document["meta"]
    except (OSError, ValueError, KeyError) as e:
        raise UsageError(f"{path}: not a results.json of experiments train ({e})") from None
    for run in runs:                  # as experiments train computes them today
        if not run.get("error") and "per_step" in run:
            run.update(throughput(run))
    add_scale_factors(runs)
    for figure in draw(runs, args.out or args.directory, args.cpus or meta.get("cpus"),
                       meta.get("link_bw_mbit"), meta):
        print(figure)
    return 0
