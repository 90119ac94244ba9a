"""Repeated runs summarized: median and spread per mode and point, link-rate bounds, speedup.

A point is one experimental setting (topology, dtype, workers, elements, link rate).  For
each mode at a point, the correct runs' times give the median, min/max and quartiles.
Link-rate bounds, with B the link rate in bytes/s and E elements of 4 bytes:

* in-network aggregation (every design: ours, SwitchML, contracts/designs/): every host
  link carries the vector once each way, E·4/B; on the
  wire each packet of K values also carries 58 bytes of headers (Ethernet 14, IPv4 20,
  UDP 8, aggregation 16), so the bound is ceil(E/K)·(4K + 58)/B.  float32 adds up to W
  exponent-only rounds (block floating point).  One step.
* the host-only algorithms over TCP (ps, binomial-tree, butterfly, ring, rabenseifner,
  double-binary-tree; Gloo's allreduce counts as the ring): the busiest link carries
  hosts.bounds.link_share(mode, p) vectors, e.g. 2(p-1)/p·E·4/B for the ring, 2(p-1)·E·4/B
  for the parameter server; the bytes each host sends and the steps are hosts/bounds.py's
  table.  TCP segments of 1448 payload bytes (MSS with timestamps at MTU 1500) travel as
  1514-byte frames.

Other collectives (--collective): a run's point includes its collective, and the bounds,
bytes and steps are hosts/bounds.py's for that collective (hosts/bounds.py
COLLECTIVE_FORMULAS: the ring's one phase, (p-1)/p·E·4/B; binomial broadcast:
ceil(log2 p)·E·4/B).

On a fabric whose uplinks are shared (leafspine:2,1,4: a leaf's four hosts behind one
uplink) a host algorithm whose partners sit on different leaves cannot reach that bound:
"fabric_bound_s" is its time on the same topology when only the links cost time (the
simulator; experiments/fabric_bound.py, compare computes it), "of_fabric_bound" the median
over it, and "allowed_speedup" ("links allow") the larger of the mode's two bounds over ina's:
what the links alone allow.  "paced_by" says what set the pace: "links" within AT_BOUND of
that bound, else the CPU of the hosts, the switches or the kernel, or "latency"
(jobs/cpu.py paced_by).

"bound_s" below is the wire bound (headers included), which is what a shaped link can reach;
"formula_bytes_per_host" (and "formula_bytes_received_per_host") is the payload each host
sends (receives) by the formula, averaged over the hosts (ina's other collectives:
hosts.bounds.ina_traffic, aggregation headers included) (compare with the measured "wire_bytes_per_host"), and "steps" the algorithm's steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from contracts import collectives, designs
from contracts.wire import DEFAULT_K, INA_FRAME_OVERHEAD, TCP_FRAME_BYTES, TCP_PAYLOAD_PER_FRAME
from hosts import bounds
from hosts.algorithms import ALGORITHMS
from jobs import cpu, results
from contracts.jobs import ALLREDUCE, DEFAULT_DTYPE, ELEMENT_BYTES
POINT_FIELDS = ("topo", "collective", "dtype", "workers", "elements", "bw_mbit")
AT_BOUND = 1.10        # a side within this of its link bound runs at the links' pace
HOST_ONLY_MODES = ALGORITHMS + ("gloo",)
MODE_ORDER = designs.NAMES + HOST_ONLY_MODES


def algorithm_of(mode: str) -> str:
    """The host algorithm whose formulas a TCP mode follows (Gloo: the ring)."""
    return "ring" if mode == "gloo" else mode


def payload_bound_s(mode: str, elements: int, workers: int, bw_mbit: float,
                    dtype: str = DEFAULT_DTYPE, collective: str = ALLREDUCE) -> float:
    """The textbook bound: E·4/B for ina, link_share(mode, p)·E·4/B for the host modes."""
    vector_bits = elements * ELEMENT_BYTES[dtype] * 8
    return link_share(mode, workers, collective) * vector_bits / (bw_mbit * 1e6)


def link_share(mode: str, workers: int, collective: str = ALLREDUCE) -> float:
    """Vectors the busiest link carries one after another (hosts/bounds.py)."""
    if designs.is_design(mode):
        return 1.0
    return bounds.link_share(algorithm_of(mode), workers, collective)


def formula_bytes_per_host(mode: str, elements: int, workers: int,
                           dtype: str = DEFAULT_DTYPE, collective: str = ALLREDUCE,
                           k: int = DEFAULT_K, window: int = 0, received: bool = False) -> float:
    """Payload bytes a host sends (or receives) by the formula, mean over the hosts.  ina:
    the vector for a plain collective (allreduce: every round full both ways), the others
    hosts.bounds.ina_traffic (the aggregation headers included: a header-only packet is all
    header)."""
    itemsize = ELEMENT_BYTES[dtype]
    if designs.is_design(mode) and collectives.get(collective).plain:     # headers: wire_overhead
        return float(elements * itemsize)
    if designs.is_design(mode):
        return float(np.mean([bounds.ina_traffic(collective, rank, workers, elements, k,
                                                 window, dtype)[received]
                              for rank in range(workers)]))
    algorithm = algorithm_of(mode)
    return float(np.mean([bounds.traffic(algorithm, rank, workers, elements, itemsize,
                                         collective)[received] for rank in range(workers)]))


def formula_steps(mode: str, workers: int, collective: str = ALLREDUCE) -> int:
    return 1 if designs.is_design(mode) else bounds.steps(algorithm_of(mode), workers, collective)


def wire_overhead(mode: str, k: int = DEFAULT_K, dtype: str = DEFAULT_DTYPE, elements: int = 0,
                  window: int = 0) -> float:
    """Wire bytes per payload byte for the mode's packets."""
    if designs.is_design(mode):
        chunks = math.ceil(elements / k) if elements else 1
        rounds = chunks + (min(window, chunks) if dtype == "float32" else 0)
        value_bytes = k * ELEMENT_BYTES[dtype]
        return rounds * (value_bytes + INA_FRAME_OVERHEAD) / (chunks * value_bytes)
    return TCP_FRAME_BYTES / TCP_PAYLOAD_PER_FRAME


def wire_bound_s(mode: str, elements: int, workers: int, bw_mbit: float, k: int = DEFAULT_K,
                 dtype: str = DEFAULT_DTYPE, window: int = 0, collective: str = ALLREDUCE) -> float:
    overhead = wire_overhead(mode, k, dtype, elements, window)
    if designs.is_design(mode):    # whole packets: the last one is padded to K values
        elements = math.ceil(elements / k) * k
    return payload_bound_s(mode, elements, workers, bw_mbit, dtype, collective) * overhead


def ideal_speedup(workers: int) -> float:
    """ring time / ina time when both run at the link rate, payload only."""
    return 2 * (workers - 1) / workers


@dataclass(frozen=True)
class Spread:
    runs: int
    median: float
    minimum: float
    maximum: float
    q1: float
    q3: float


def spread(values: list) -> Optional[Spread]:
    """Median, min/max and quartiles (linear interpolation); None without values."""
    if not values:
        return None
    data = np.asarray(values, dtype=float)
    q1, median, q3 = np.percentile(data, [25, 50, 75])
    return Spread(len(data), float(median), float(data.min()), float(data.max()),
                  float(q1), float(q3))


def point_of(run) -> tuple:
    return tuple(getattr(run, name, "allreduce" if name == "collective" else None)
                 for name in POINT_FIELDS)


def summarize_runs(runs: list, fabric=None) -> list:
    """One row (dict) per (point, mode), in first-seen order; see module docstring.
    fabric: (point fields, mode) -> the fabric bound, s, or None (experiments/fabric_bound.py);
    with it, a host mode's "links allow" and "paced by" count the larger of its two bounds."""
    groups: dict = {}
    for run in runs:
        groups.setdefault((point_of(run), run.mode), []).append(run)
    medians = {key: spread([r.seconds for r in group if r.correct])
               for key, group in groups.items()}
    bounds = {(point, mode): _wire_bound(group[0], dict(zip(POINT_FIELDS, point))["collective"])
              for (point, mode), group in groups.items()}
    rows = []
    for (point, mode), group in groups.items():
        times = medians[(point, mode)]
        ina = medians.get((point, "ina"))
        first = group[0]
        collective = dict(zip(POINT_FIELDS, point))["collective"]
        bound, ina_bound = bounds[(point, mode)], bounds.get((point, "ina"))
        row = dict(zip(POINT_FIELDS, point))
        fabric_s = fabric(row, mode) if fabric else None
        limit = max(b for b in (bound, fabric_s, 0.0) if b is not None) or None
        row.update(
            mode=mode, runs=len(group), correct_runs=sum(r.correct for r in group),
            median_s=times and times.median, min_s=times and times.minimum,
            max_s=times and times.maximum, q1_s=times and times.q1, q3_s=times and times.q3,
            bound_s=bound,
            payload_bound_s=(payload_bound_s(mode, first.elements, first.workers,
                                              first.bw_mbit, first.dtype, collective)
                             if first.bw_mbit else None),
            of_bound=times.median / bound if times and bound else None,
            fabric_bound_s=fabric_s,
            of_fabric_bound=times.median / fabric_s if times and fabric_s else None,
            formula_bytes_per_host=(formula_bytes_per_host(mode, first.elements,
                                                           first.workers, first.dtype,
                                                           collective, first.k or DEFAULT_K,
                                                           first.window or 0)
                                    if mode in MODE_ORDER else None),
            formula_bytes_received_per_host=(formula_bytes_per_host(
                mode, first.elements, first.workers, first.dtype, collective, first.k or DEFAULT_K,
                first.window or 0, received=True) if mode in MODE_ORDER else None),
            steps=(formula_steps(mode, first.workers, collective)
                   if mode in MODE_ORDER else None),
            wire_bytes_per_host=_median([r.wire_bytes_per_host for r in group]),
            wire_bytes_received_per_host=_median([r.wire_bytes_received_per_host
                                                  for r in group]),
            bytes_per_host=_median([r.bytes_per_host for r in group]),
            ina_speedup=(times.median / ina.median
                         if mode != "ina" and times and ina else None),
            # what the links alone allow: this mode's bound over ina's at the point
            allowed_speedup=(limit / ina_bound if mode != "ina" and limit and ina_bound
                             else None),
            paced_by=_paced_by(group, times.median / limit if times and limit else None))
        rows.append(row)
    return rows


def _wire_bound(first, collective: str) -> Optional[float]:
    """wire_bound_s of a group's runs (None unshaped)."""
    return (wire_bound_s(first.mode, first.elements, first.workers, first.bw_mbit,
                         first.k or DEFAULT_K, first.dtype, first.window or 0, collective)
            if first.bw_mbit else None)


def _paced_by(group: list, of_bound: Optional[float]) -> Optional[str]:
    """What set the pace of a mode's runs at a point: "links" within AT_BOUND of the link
    bound, else jobs.cpu.paced_by of the median CPU figures (None without them)."""
    if of_bound is not None and of_bound <= AT_BOUND:
        return "links"
    machine = _median([r.machine_busy_cores for r in group])
    if machine is None:
        return None
    # the cores of the machine the runs ran on (this machine's for files older than that)
    cores = _median([r.machine_cores for r in group]) or cpu.cores()
    return cpu.paced_by(_median([r.worker_cpu_seconds for r in group]),
                        _median([r.switch_cpu_seconds for r in group]),
                        _median([r.other_cpu_seconds for r in group]), machine, cores,
                        _median([r.retransmissions for r in group]) or 0)


def _median(values: list) -> Optional[float]:
    present = [v for v in values if v is not None]
    return float(np.median(present)) if present else None


# -- Markdown ---------------------------------------------------------------------------

MARKDOWN_COLUMNS = (
    ("topo", "topology"), ("collective", "collective"), ("mode", "mode"),
    ("workers", "workers"), ("elements", "elements"), ("dtype", "dtype"),
    ("bw_mbit", "link Mbit/s"), ("runs", "correct/runs"), ("median_s", "median s"),
    ("range", "min–max s"), ("bound_s", "link bound s"), ("of_bound", "median/bound"),
    ("fabric_bound_s", "fabric bound s"), ("of_fabric_bound", "median/fabric bound"),
    ("formula_bytes_per_host", "formula MB sent/host"),
    ("wire_bytes_per_host", "wire MB sent/host"),
    ("wire_bytes_received_per_host", "wire MB received/host"), ("steps", "steps"),
    ("ina_speedup", "ina speedup"), ("allowed_speedup", "links allow"),
    ("paced_by", "paced by"))


# how each column maps to the summary rows of results.json, for the table's "measured"
# marker (docs/testing.md, "Every figure has a file"; tests/docs/figures.py checks it)
MARKDOWN_KEYS = {"runs": "correct_runs runs", "range": "min_s max_s",
                 "formula_bytes_per_host": "formula_bytes_per_host/1e6",
                 "wire_bytes_per_host": "wire_bytes_per_host/1e6",
                 "wire_bytes_received_per_host": "wire_bytes_received_per_host/1e6"}


def markdown_marker(source: str, command: list) -> str:
    """The comment that says where the Markdown table's numbers come from: `source`, the
    results.json (a path from the repository's root), and the command that wrote it."""
    columns = " | ".join(f"{title}={MARKDOWN_KEYS.get(key, key)}"
                         for key, title in MARKDOWN_COLUMNS)
    return (f"<!-- measured: {source}\ncommand: {' '.join(command) or 'not recorded'}\n"
            f"columns: {columns}\n-->")


def _markdown_cell(key: str, row: dict) -> str:
    value = row.get(key)
    if key == "runs":
        return f"{row['correct_runs']}/{row['runs']}"
    if key == "range":
        return "-" if row["min_s"] is None else f"{row['min_s']:.2f}–{row['max_s']:.2f}"
    if value is None:
        return "-"
    if key in ("median_s", "bound_s", "fabric_bound_s"):
        return f"{value:.2f}"
    if key in ("of_bound", "of_fabric_bound"):
        return f"{value:.2f}"
    if key in ("ina_speedup", "allowed_speedup"):
        return f"{value:.2f}×"
    if key in ("wire_bytes_per_host", "formula_bytes_per_host",
               "wire_bytes_received_per_host"):
        return f"{value / 1e6:.3f}"
    if key == "bw_mbit":
        return f"{value:g}"
    return str(value)


def markdown_table(rows: list) -> str:
    """GitHub Markdown table of summarize_runs() rows, sorted by point then mode."""
    order = {mode: i for i, mode in enumerate(MODE_ORDER)}
    ordered = sorted(rows, key=lambda r: (r["topo"], r.get("collective") or "allreduce",
                                          r["dtype"], r["bw_mbit"] or 0,
                                          r["workers"], r["elements"],
                                          order.get(r["mode"], len(order)), r["mode"]))
    lines = ["| " + " | ".join(title for _, title in MARKDOWN_COLUMNS) + " |",
             "|" + "|".join("---" if key in ("topo", "collective", "mode", "dtype") else "--:"
                            for key, _ in MARKDOWN_COLUMNS) + "|"]
    lines += ["| " + " | ".join(_markdown_cell(key, row) for key, _ in MARKDOWN_COLUMNS) + " |"
              for row in ordered]
    return "\n".join(lines)


def allowed_lines(summary: list) -> list:
    """For every host mode at a shaped point with ina: "ina is X times faster than the ring;
    the links alone allow Y", and where a side runs above AT_BOUND of its bound, that the
    difference is not the links'."""
    ina_rows = {tuple(r.get(name) for name in POINT_FIELDS): r for r in summary
                if r["mode"] == "ina" and r.get("of_bound")}
    lines = []
    for row in summary:
        point = tuple(row.get(name) for name in POINT_FIELDS)
        ina = ina_rows.get(point)
        if row["mode"] == "ina" or ina is None or not row.get("ina_speedup") \
                or not row.get("allowed_speedup"):
            continue
        where = (f"{row['topo']}, {row['workers']} workers, {row['elements']} {row['dtype']}, "
                 f"{row['bw_mbit']:g} Mbit/s")
        host_share = row.get("of_fabric_bound") or row["of_bound"]
        fabric = (f" (the fabric's; {row['of_bound']:.2f}× its host-link bound)"
                  if row.get("of_fabric_bound") and row["fabric_bound_s"] > 1.02 * row["bound_s"]
                  else "")
        line = (f"{where}: ina is {row['ina_speedup']:.2f}× faster than {row['mode']}; the "
                f"links alone allow {row['allowed_speedup']:.2f}× ({row['mode']} at "
                f"{host_share:.2f}× its bound{fabric}, ina at {ina['of_bound']:.2f}× its own)")
        slow = [name for name, share in ((row["mode"], host_share), ("ina", ina["of_bound"]))
                if share > AT_BOUND]
        if slow:
            line += (f": {' and '.join(slow)} above {AT_BOUND:.2f}× its bound, so the rest is "
                     "not the links'")
        lines.append(line)
    return lines


def write_and_report(out_dir: str, runs: list, meta: dict, progress, skipped: list = (),
                     impairments=None, fabric=None) -> int:
    """The end of every command that runs allreduces (compare, simulate): results.json with
    its summary, the run table and the summary table on stdout, a line through `progress`
    per incorrect run.  Returns the exit status: 1 if any run was incorrect, else 0."""
    summary = summarize_runs(runs, fabric)
    path = results.write_results(out_dir, runs, meta, skipped, summary, impairments)
    print(results.format_table(runs))
    print()
    print(markdown_table(summary))
    for line in allowed_lines(summary):
        progress(line)
    progress(f"wrote {path}")
    failed = [run for run in runs if not run.correct]
    for run in failed:
        progress(f"{run.mode} job {run.job} NOT correct: " + "; ".join(run.errors[:3]))
    return 1 if failed else 0
