"""`python -m experiments scaling-figure DIR... --out PNG [--emulated DIR...]`: completion
time and the ring's time over ina's against the number of workers, from simulated runs
(results.json files written by `experiments simulate`, one or more points each), with
emulated runs (results.json of `experiments compare`) drawn on top as open markers.

`scaling-figure --by-size DIR... --out PNG`: each DIR one simulate run over several sizes
(--elements E1,E2,... --modes ina,hosts); against the bytes per worker, ina's time and the
fastest host mode's at each size (experiments/baseline.py, its name on the point), and on
the right best host / ina and ring / ina: one line style per set of processing costs (with and
without processing costs, say): runs with the same processing costs (meta.processing_us) are
one line, whichever DIR they are in.

Left: the median completion time of each mode per worker count (log-log), with each mode's
link-rate bound (experiments/aggregate.py, headers included) as a dotted line.  Right: the
ratio ring time / ina time per worker count, with the ratio of the bounds.  Simulated runs
that used packet trains are marked in the legend with the largest train.
"""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone

from contracts.cli import OneLineParser, UsageError
from jobs import results
from experiments import aggregate, baseline

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments scaling-figure",
                      description="Completion time and ring/ina against workers.")
    p.add_argument("directories", nargs="+", metavar="DIR", help="simulated results")
    p.add_argument("--emulated", nargs="*", default=[], metavar="DIR",
                   help="emulated results (compare) to draw on top")
    p.add_argument("--out", required=True, metavar="PNG")
    p.add_argument("--by-size", action="store_true",
                   help="against the vector size, ina against the fastest host mode")
    return p


def medians(runs: list) -> dict:
    """{(mode, workers): (median seconds, first row)} over the correct runs."""
    found = {}
    for row in aggregate.summarize_runs(runs):
        if row["median_s"] is not None:
            found[(row["mode"], row["workers"])] = (row["median_s"], row)
    return found


def load(directories: list) -> tuple[list, list]:
    runs, metas = [], []
    for directory in directories:
        try:
            found, _, meta = results.load_document(directory)
        except ValueError as e:
            raise UsageError(str(e)) from None
        runs += found
        metas.append(meta)
    return runs, metas


def largest_train(metas: list) -> int:
    return max((d.get("train", 1) for meta in metas for d in meta.get("simulation", [])),
               default=1)


def emulated_links(found: dict) -> str:
    rates = {row["bw_mbit"] for _, row in found.values()}
    return ", ".join("unshaped links" if rate is None else f"{rate:g} Mbit/s"
                     for rate in sorted(rates, key=lambda r: r or 0))


def draw(simulated: list, emulated: list, train: int, path: str, footer: str = "") -> str:
    import matplotlib   # noqa: PLC0415  (a second to load: only where figures are drawn)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt   # noqa: PLC0415  (as above)
    sim, emu = medians(simulated), medians(emulated)
    first = next(iter(sim.values()))[1]
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    colours = {"ina": "tab:blue", "ring": "tab:orange"}
    for mode in sorted({m for m, _ in sim}, key=lambda m: (m != "ina", m)):
        colour = colours.get(mode, "tab:gray")
        points = sorted((p, t) for (m, p), (t, _) in sim.items() if m == mode)
        left.plot([p for p, _ in points], [t for _, t in points], marker="o", color=colour,
                  label=f"{mode}, simulated" + (f" (trains up to {train})"
                                                if mode == "ina" and train > 1 else ""))
        bound = [aggregate.wire_bound_s(mode, first["elements"], p, first["bw_mbit"],
                                        simulated[0].k or 64) for p, _ in points]
        left.plot([p for p, _ in points], bound, linestyle=":", color=colour,
                  label=f"{mode} link-rate bound")
        points = sorted((p, t) for (m, p), (t, _) in emu.items() if m == mode)
        if points:
            left.plot([p for p, _ in points], [t for _, t in points], linestyle="none",
                      marker="s", markersize=10, markerfacecolor="none", color=colour,
                      label=f"{mode}, emulated ({emulated_links(emu)})")
    ratio = sorted((p, sim[("ring", p)][0] / t) for (m, p), (t, _) in sim.items()
                   if m == "ina" and ("ring", p) in sim)
    if ratio:
        right.plot([p for p, _ in ratio], [r for _, r in ratio], marker="o",
                   color="tab:orange", label="ring / ina, simulated")
        right.plot([p for p, _ in ratio],
                   [aggregate.wire_bound_s("ring", first["elements"], p, first["bw_mbit"]) /
                    aggregate.wire_bound_s("ina", first["elements"], p, first["bw_mbit"],
                                           simulated[0].k or 64) for p, _ in ratio],
                   linestyle=":", color="black", label="ratio of the link-rate bounds")
    emu_ratio = sorted((p, emu[("ring", p)][0] / t) for (m, p), (t, _) in emu.items()
                       if m == "ina" and ("ring", p) in emu)
    if emu_ratio:
        right.plot([p for p, _ in emu_ratio], [r for _, r in emu_ratio], linestyle="none",
                   marker="s", markersize=10, markerfacecolor="none", color="tab:orange",
                   label=f"ring / ina, emulated ({emulated_links(emu)})")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers p")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    left.set_yscale("log")
    right.set_yscale("log")
    left.set_ylabel("completion time (s)")
    right.set_ylabel("ring time / ina time")
    right.axhline(1.0, color="gray", linewidth=0.8)
    figure.suptitle(f"Allreduce of {first['elements']:,} int32 on fat trees, "
                    f"{first['bw_mbit'] / 1000:g} Gbit/s links, K = {simulated[0].k}",
                    fontsize=10)
    return save(figure, path, footer)


def save(figure, path: str, footer: str) -> str:
    """The figure with its footer (its own provenance, as experiments plot's figures carry)
    as a PNG at `path`."""
    from experiments.figure import save_with_footer   # matplotlib: only where figures are drawn
    return save_with_footer(figure, path, footer)


def processing_label(meta: dict) -> str:
    """The processing costs a simulate run had (meta.processing_us), as a legend label."""
    costs = meta.get("processing_us") or {}
    host, switch = costs.get("host_per_frame", 0), costs.get("switch_per_packet", 0)
    if not host and not switch:
        return "no processing time"
    return f"host {host:g} µs, switch {switch:g} µs per frame"


def by_processing(directories: list) -> dict:
    """{label: runs} over the directories, runs with the same processing costs together
    (one simulate run per set of sizes or modes merges into one line)."""
    series: dict = {}
    for directory in directories:
        runs, metas = load([directory])
        series.setdefault(processing_label(metas[0]), []).extend(runs)
    return series


def draw_by_size(directories: list, path: str, footer: str = "") -> str:
    import matplotlib   # noqa: PLC0415  (a second to load: only where figures are drawn)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt   # noqa: PLC0415  (as above)
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = ("-", "--", "-.", ":")
    first = None
    for i, (name, runs) in enumerate(by_processing(directories).items()):
        rows = sorted(baseline.best_host_rows(aggregate.summarize_runs(runs)),
                      key=lambda r: r["elements"])
        if not rows:
            raise UsageError(f"{', '.join(directories)}: no size with ina and a host mode")
        first = first or (rows[0], runs[0])
        style = styles[i % len(styles)]
        size = [r["elements"] * 4 for r in rows]
        left.plot(size, [r["ina_s"] for r in rows], linestyle=style, marker="o",
                  color="tab:blue", label=f"ina ({name})")
        left.plot(size, [r["best_s"] for r in rows], linestyle=style, marker="s",
                  color="tab:red", label=f"fastest host mode ({name})")
        for x, r in zip(size, rows):
            left.annotate(r["best_mode"], (x, r["best_s"]), fontsize=5.5, color="tab:red",
                          xytext=(3, -8), textcoords="offset points")
        right.plot(size, [r["speedup"] for r in rows], linestyle=style, marker="s",
                   color="tab:red", label=f"fastest host / ina ({name})")
        ring = [(x, r["ring_speedup"]) for x, r in zip(size, rows) if r["ring_speedup"]]
        right.plot([x for x, _ in ring], [v for _, v in ring], linestyle=style, marker=".",
                   color="tab:orange", alpha=0.6, label=f"ring / ina ({name})")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("bytes per worker (int32)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    left.set_ylabel("completion time (s)")
    right.set_ylabel("host time / ina time")
    right.axhline(1.0, color="gray", linewidth=0.8)
    row, run = first
    figure.suptitle(f"Allreduce, {row['workers']} workers on {row['topo']}, "
                    f"{row['bw_mbit'] / 1000:g} Gbit/s links, K = {run.k}: ina against the "
                    f"fastest host algorithm at each size", fontsize=10)
    return save(figure, path, footer)


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    if args.by_size:
        print(draw_by_size(args.directories, args.out, footer(argv)))
        return 0
    simulated, metas = load(args.directories)
    emulated, _ = load(args.emulated)
    if not medians(simulated):
        raise UsageError("no correct simulated run to draw")
    print(draw(simulated, emulated, largest_train(metas), args.out, footer(argv)))
    return 0


def footer(argv: list) -> str:
    """This command (directories shortened to their names), when it drew, at which commit;
    each point's own command and time are in its results.json."""
    words = ["python", "-m", "experiments", "scaling-figure"]
    words += [os.path.basename(w.rstrip("/")) if os.path.isdir(w) else w for w in argv]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    drawn = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return "  |  ".join([" ".join(words), f"drawn {drawn}",
                         f"git {commit}" if commit else "commit not recorded"])
