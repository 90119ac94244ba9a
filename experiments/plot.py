"""`python -m experiments plot DIR [--out FIGDIR]`: figures and a Markdown table from
DIR/results.json (written by compare or sweep).

Files (in FIGDIR, default DIR):
  time_vs_elements.png    median completion time against vector size per mode (min/max as
                          error bars), with each mode's link-rate bound (headers included;
                          Gloo shares the ring's)
  speedup_vs_workers.png  each host-only mode's time / ina time against worker count, with
                          the ring's ideal 2(p-1)/p and the same ratio of the wire bounds
                          (only with two worker counts or more)
  bytes_per_host.png      bytes each host sent per mode, from the interface counters, with
                          each mode's payload formula (hosts/bounds.py) marked on its bar
  results.md              the summary table (experiments.aggregate.markdown_table)
Figures needing a link rate or two modes are left out, with one line saying why.  Every
figure carries a footer with the command, start time and commit of the run it shows
(results.json's meta).  A DIR with linkrate.json and no results.json (experiments linkrate)
gets its linkrate.png redrawn instead (experiments/linkrate.py).
"""

from __future__ import annotations

import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from contracts.cli import OneLineParser, UsageError  # noqa: E402
from contracts.jobs import ALLREDUCE, ELEMENT_BYTES  # noqa: E402
from experiments import aggregate  # noqa: E402
from experiments.figure import provenance, save_with_footer  # noqa: E402
from jobs import results  # noqa: E402
from hosts import bounds  # noqa: E402

MODE_STYLE = {"ina": ("tab:blue", "o", "in-network (ina)"),
              "ps": ("tab:red", "v", "parameter server (TCP)"),
              "binomial-tree": ("tab:purple", "P", "binomial tree (TCP)"),
              "butterfly": ("tab:brown", "D", "butterfly (TCP)"),
              "ring": ("tab:orange", "s", "ring (TCP)"),
              "rabenseifner": ("tab:pink", "X", "Rabenseifner (TCP)"),
              "rabenseifner-nearest": ("tab:cyan", "p", "Rabenseifner, nearest first (TCP)"),
              "double-binary-tree": ("tab:olive", "*", "double binary tree (TCP)"),
              "gloo": ("tab:green", "^", "Gloo (torch.distributed)")}
FIGURE_SIZE = (6.4, 4.2)


def bound_label(mode: str, collective: str = ALLREDUCE) -> str:
    """The legend of a bound line: the formula of `mode` for `collective` (hosts/bounds.py)."""
    if mode == "ina":
        return "ina link-rate bound: E·4/B + headers"
    return f"{mode} link-rate bound: {bounds.formula(mode, collective)} + headers"


SIZE_LINESTYLES = ("-", "-.", (0, (5, 1)), (0, (1, 1)))


def style(mode: str):
    return MODE_STYLE.get(mode, ("tab:gray", "x", mode))


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments plot",
                      description="Figures and a Markdown table from DIR/results.json "
                                  "(or linkrate.png from DIR/linkrate.json).")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--out", metavar="FIGDIR", help="where to write (default: DIR)")
    return p


def note(message: str) -> None:
    print(f"plot: {message}", file=sys.stderr, flush=True)


def describe_setting(rows: list) -> str:
    first = rows[0]
    rate = f", links {first['bw_mbit']:g} Mbit/s" if first["bw_mbit"] else ", links unshaped"
    k = f", K = {FOOTER['k']}" if FOOTER.get("k") else ""
    return f"{first['topo']}, {first['dtype']}{k}{rate}"


def plain_log_axes(ax, xticks: list) -> None:
    """Log axes labelled 20,000 and 0.5 rather than 2x10^4 and 5x10^-1; x ticks at the
    measured sizes."""
    ax.set_xticks(xticks)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if leading_digit(v) in (2, 5)
                                               else ""))


def leading_digit(value: float) -> int:
    return int(round(value / 10 ** math.floor(math.log10(value)))) if value > 0 else 0


# The footer of the figures being drawn (plot_all sets it from the results file's meta).
FOOTER = {"text": "", "k": None}


def _save(figure, path: str) -> str:
    return save_with_footer(figure, path, FOOTER["text"])


def time_vs_elements(rows: list, path: str):
    """One panel per worker count (at most three: the largest ones)."""
    worker_counts = sorted({r["workers"] for r in rows})[-3:]
    legend_beside = len(modes_in(rows)) > 3     # many modes: the legend beside the panels
    figure, axes = plt.subplots(1, len(worker_counts), squeeze=False, sharey=True,
                                figsize=(FIGURE_SIZE[0] * (1 + 0.45 * (len(worker_counts) - 1))
                                         + (3.5 if legend_beside else 0), FIGURE_SIZE[1]))
    for ax, workers in zip(axes[0], worker_counts):
        bounds_drawn = set()
        for mode in modes_in(rows):
            line = sorted((r for r in rows if r["mode"] == mode and r["workers"] == workers
                           and r["median_s"] is not None), key=lambda r: r["elements"])
            if not line:
                continue
            colour, marker, label = style(mode)
            x = [r["elements"] for r in line]
            y = [r["median_s"] for r in line]
            errors = [[m - r["min_s"] for m, r in zip(y, line)],
                      [r["max_s"] - m for m, r in zip(y, line)]]
            ax.errorbar(x, y, yerr=errors, color=colour, marker=marker, capsize=3,
                        label=f"{label}, median (min-max)")
            # ring and Gloo share one bound: draw it once
            kind = aggregate.algorithm_of(mode)
            if line[0]["bound_s"] and kind not in bounds_drawn:
                bounds_drawn.add(kind)
                ax.plot(x, [r["bound_s"] for r in line], color=colour, linestyle="--",
                        linewidth=1, marker="_", markersize=12,
                        label=bound_label(kind, line[0].get("collective") or ALLREDUCE))
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axes(ax, sorted({r["elements"] for r in rows}))
        ax.set_title(f"p = {workers} workers")
        ax.set_xlabel("vector size (elements of 4 bytes)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("completion time (s)")
    if legend_beside:
        axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    else:
        axes[0][0].legend(fontsize=7, loc="upper left")
    collective = rows[0].get("collective") or ALLREDUCE
    figure.suptitle(f"{collective.capitalize()} completion time ({describe_setting(rows)})",
                    fontsize=10)
    return _save(figure, path)


def speedup_vs_workers(rows: list, path: str):
    sizes = sorted({r["elements"] for r in rows if r["ina_speedup"] is not None})
    figure, ax = plt.subplots(figsize=FIGURE_SIZE)
    workers_seen = sorted({r["workers"] for r in rows})
    for mode in [m for m in modes_in(rows) if m != "ina"]:
        colour, marker, label = style(mode)
        for size_index, elements in enumerate(sizes):
            line = sorted((r for r in rows if r["mode"] == mode and r["elements"] == elements
                           and r["ina_speedup"] is not None), key=lambda r: r["workers"])
            if line:
                ax.plot([r["workers"] for r in line], [r["ina_speedup"] for r in line],
                        color=colour, marker=marker,
                        linestyle=SIZE_LINESTYLES[size_index % len(SIZE_LINESTYLES)],
                        label=f"{label} / ina, E = {elements:,}")
            allowed = [r for r in line if r["allowed_speedup"] is not None]
            if allowed:       # hollow: what the links alone allow the same pair
                ax.plot([r["workers"] for r in allowed], [r["allowed_speedup"] for r in allowed],
                        color=colour, marker=marker, markerfacecolor="none", linestyle="none",
                        label=f"{label}: the links allow, E = {elements:,}")
    dense = [p / 10 for p in range(10 * min(workers_seen), 10 * max(workers_seen) + 1)]
    ax.plot(dense, [aggregate.ideal_speedup(p) for p in dense], color="black",
            label="ring's ideal 2(p-1)/p (payload)")
    bw_rows = [r for r in rows if r["bw_mbit"]]
    if bw_rows:
        first = bw_rows[0]
        ratio = [aggregate.wire_bound_s("ring", first["elements"], p, first["bw_mbit"]) /
                 aggregate.wire_bound_s("ina", first["elements"], p, first["bw_mbit"])
                 for p in dense]
        ax.plot(dense, ratio, color="black", linestyle=":",
                label="ratio of wire bounds (headers included)")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks(workers_seen)
    ax.set_xlabel("workers p")
    ax.set_ylabel("speedup of ina (baseline time / ina time)")
    ax.set_title(f"In-network aggregation speedup ({describe_setting(rows)})", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return _save(figure, path)


def bytes_per_host(rows: list, path: str):
    """Grouped bars: per worker count, each mode's wire bytes sent per host (median), at the
    largest vector size."""
    largest = max(r["elements"] for r in rows)
    chosen = [r for r in rows if r["elements"] == largest and r["wire_bytes_per_host"]]
    modes = modes_in(chosen)
    worker_counts = sorted({r["workers"] for r in chosen})
    figure, ax = plt.subplots(figsize=FIGURE_SIZE)
    width = 0.8 / max(1, len(modes))
    marked = False
    for i, mode in enumerate(modes):
        colour, _, label = style(mode)
        for j, workers in enumerate(worker_counts):
            row = next((r for r in chosen if r["mode"] == mode and r["workers"] == workers), None)
            if row is None:
                continue
            x = j + (i - (len(modes) - 1) / 2) * width
            megabytes = row["wire_bytes_per_host"] / 1e6
            ax.bar(x, megabytes, width, color=colour, label=label if j == 0 else None)
            ax.text(x, megabytes, f"{megabytes:.2f}", ha="center", va="bottom", fontsize=7)
            if row.get("formula_bytes_per_host"):
                formula = row["formula_bytes_per_host"] / 1e6
                ax.plot([x - width / 2, x + width / 2], [formula, formula], color="black",
                        linewidth=2, label="payload by the formula" if not marked else None)
                marked = True
    vector_mb = largest * ELEMENT_BYTES[chosen[0]["dtype"]] / 1e6
    ax.axhline(vector_mb, color="black", linestyle="--", linewidth=1,
               label=f"vector size ({vector_mb:.2f} MB)")
    ax.set_xticks(range(len(worker_counts)))
    ax.set_xticklabels([f"p = {p}" for p in worker_counts])
    ax.set_ylabel("MB sent per host (interface counters)")
    ax.set_title(f"Bytes on the wire per host, E = {largest:,} ({describe_setting(chosen)})",
                 fontsize=10)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.3)     # room for the legend above the bars
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(figure, path)


def modes_in(rows: list) -> list:
    order = list(MODE_STYLE)
    return sorted({r["mode"] for r in rows}, key=lambda m: (order.index(m) if m in order
                                                            else len(order), m))


def write_markdown(rows: list, skipped: list, path: str, source: str, command: list) -> str:
    """results.md: the summary table, after the marker naming its results file `source`
    and the `command` that wrote it."""
    lines = [aggregate.markdown_marker(source, command), aggregate.markdown_table(rows)]
    lines += [f"\n{s['mode']} was skipped: {s['reason']}" for s in skipped]
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def plot_all(directory: str, out_dir: str) -> list:
    """Write every figure the data allows and results.md; returns the paths written."""
    if (not os.path.exists(os.path.join(directory, "results.json"))
            and os.path.exists(os.path.join(directory, "linkrate.json"))):
        from experiments import linkrate   # brings compare and Mininet: only this case needs it
        return [linkrate.redraw(directory, out_dir)]
    runs, skipped, meta = results.load_document(directory)
    FOOTER["text"], FOOTER["k"] = provenance(meta), meta.get("k")
    rows = [r for r in aggregate.summarize_runs(runs) if r["median_s"] is not None]
    if not rows:
        raise UsageError(f"{directory}/results.json has no correct run to plot")
    os.makedirs(out_dir, exist_ok=True)
    written = [time_vs_elements(rows, os.path.join(out_dir, "time_vs_elements.png"))]
    if not any(r["ina_speedup"] is not None for r in rows):
        note("no point has ina and another mode: speedup_vs_workers.png left out")
    elif len({r["workers"] for r in rows if r["ina_speedup"] is not None}) < 2:
        note("one worker count: speedup_vs_workers.png left out (time_vs_elements.png has "
             "the times)")
    else:
        written.append(speedup_vs_workers(rows, os.path.join(out_dir, "speedup_vs_workers.png")))
    if any(r["wire_bytes_per_host"] for r in rows):
        written.append(bytes_per_host(rows, os.path.join(out_dir, "bytes_per_host.png")))
    else:
        note("no interface counters in the runs: bytes_per_host.png left out")
    source = os.path.relpath(os.path.join(os.path.abspath(directory), "results.json"),
                             results.REPO)
    written.append(write_markdown(aggregate.summarize_runs(runs), skipped,
                                  os.path.join(out_dir, "results.md"), source,
                                  list(meta.get("command") or [])))
    return written


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    try:
        written = plot_all(args.directory, args.out or args.directory)
    except ValueError as e:
        raise UsageError(str(e)) from None
    for path in written:
        print(path)
    return 0
