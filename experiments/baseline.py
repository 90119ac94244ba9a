"""The best host algorithm as the baseline of in-network aggregation.

At every point (topology, collective, dtype, workers, elements, link rate: aggregate's
POINT_FIELDS) the baseline of ina is the fastest host-only mode that ran there correctly,
by its median time (aggregate.summarize_runs' rows), not the ring alone: below a few
hundred kilobytes per worker the latency-bound algorithms (trees, butterfly, Rabenseifner)
beat the ring's 2(p-1) steps, which is what NCCL and MPI pick there.  `best_host_rows`
gives one row per point that has ina and at least one host mode; `markdown` lays them out.
`report(out_dir, runs, meta, say)` prints the table and writes DIR/baseline.json: `simulate`
calls it after its results; `compare` can make the same call.
"""

from __future__ import annotations

import json
import os

from experiments.aggregate import HOST_ONLY_MODES, POINT_FIELDS, summarize_runs

BASELINE_FILE = "baseline.json"


def best_host_rows(summary: list) -> list:
    """Per point with ina and a host-only mode, in first-seen order: the point's fields,
    ina_s, best_mode, best_s, speedup (best_s / ina_s), and the ring's ring_s and
    ring_speedup when the ring ran there (None otherwise); best_allowed and ring_allowed:
    what the links alone allow (the bounds' ratio; None unshaped)."""
    points: dict = {}              # point -> {mode: its summary row}
    for row in summary:
        if row.get("median_s") is None:            # no correct run of the mode here
            continue
        point = tuple(row.get(name) for name in POINT_FIELDS)
        points.setdefault(point, {})[row["mode"]] = row
    rows = []
    for point, of_mode in points.items():
        times = {mode: row["median_s"] for mode, row in of_mode.items()}
        hosts = {mode: s for mode, s in times.items() if mode in HOST_ONLY_MODES}
        if "ina" not in times or not hosts:
            continue
        # the fastest; a tie goes to the mode listed first in HOST_ONLY_MODES
        best = min(hosts, key=lambda mode: (hosts[mode], HOST_ONLY_MODES.index(mode)))
        ina_s, ring_s = times["ina"], hosts.get("ring")
        rows.append({**dict(zip(POINT_FIELDS, point)), "ina_s": ina_s, "best_mode": best,
                     "best_s": hosts[best], "speedup": hosts[best] / ina_s,
                     "ring_s": ring_s, "ring_speedup": ring_s / ina_s if ring_s else None,
                     "best_allowed": of_mode[best].get("allowed_speedup"),
                     "ring_allowed": of_mode["ring"].get("allowed_speedup") if ring_s else None,
                     "host_modes": sorted(hosts, key=HOST_ONLY_MODES.index)})
    return rows


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def markdown(rows: list) -> str:
    """The rows as a GitHub Markdown table."""
    def times(value) -> str:
        return "-" if value is None else f"{value:.2f}×"
    lines = ["| topology | workers | elements | link Mbit/s | ina s | fastest host mode | "
             "its s | best/ina | links allow | ring s | ring/ina | links allow |",
             "|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        lines.append(
            f"| {r['topo']} | {r['workers']} | {r['elements']} | "
            f"{'-' if r['bw_mbit'] is None else format(r['bw_mbit'], 'g')} | "
            f"{_seconds(r['ina_s'])} | {r['best_mode']} | {_seconds(r['best_s'])} | "
            f"{r['speedup']:.2f}× | {times(r.get('best_allowed'))} | {_seconds(r['ring_s'])} | "
            f"{times(r['ring_speedup'])} | {times(r.get('ring_allowed'))} |")
    return "\n".join(lines)


def write(out_dir: str, rows: list, meta: dict) -> str:
    """DIR/baseline.json: {"meta": the run's meta, "rows": best_host_rows}; its path."""
    path = os.path.join(out_dir, BASELINE_FILE)
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return path


def report(out_dir: str, runs: list, meta: dict, say, fabric=None) -> list:
    """The table of best_host_rows on stdout and in DIR/baseline.json (`say` names the
    file), when some point has ina and a host mode; the rows.  fabric: as summarize_runs'."""
    rows = best_host_rows(summarize_runs(runs, fabric))
    if rows:
        print()
        print(markdown(rows))
        say(f"wrote {write(out_dir, rows, meta)}")
    return rows
