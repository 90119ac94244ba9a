"""Runs and results: turn per-worker JSON reports into run records, a text table and
results.json ({"runs": [...], "meta": {...}}).  No networking here, so it is unit-tested.

A run is one collective (one job of one mode) over its workers.  Its time is the slowest
worker's (the allreduce is done when the last rank has the sum); throughput is the vector
size over that time.  Byte counts are the workers' own (UDP or TCP payload bytes), averaged
over the hosts.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Optional

import numpy as np

from contracts.jobs import ALLREDUCE, ELEMENT_BYTES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what an older results file says for a provenance field nobody recorded at the time
NOT_RECORDED = "not recorded"


def now() -> str:
    """The time now, UTC, to the second (results' "started" and "finished")."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def git_commit() -> Optional[str]:
    """The short commit of the checkout (None outside git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True).stdout.strip() or None
    except FileNotFoundError:            # no git on the machine (a lab VM without it)
        return None


def provenance() -> dict:
    """Where and on what a measurement ran, for every results file's meta (docs/testing.md,
    "Every figure has a file"): the machine's cores, its load averages (1, 5, 15 min) as the
    run starts, and the git commit."""
    return {"cores": os.cpu_count(),
            "load_average": [round(load, 2) for load in os.getloadavg()],
            "git_commit": git_commit()}


@dataclass
class WorkerOutcome:
    """One worker process: where it ran, how it exited, and its report (None if missing)."""
    host: str
    rank: int
    exit_code: Optional[int]          # None: killed after the run timeout
    report: Optional[dict]
    error: Optional[str] = None       # last stderr line or why the report is missing


@dataclass
class Run:
    mode: str
    topo: str
    switch: str
    job: int
    workers: int
    elements: int
    dtype: str
    window: Optional[int]
    seconds: Optional[float]
    melem_per_s: Optional[float]
    gbit_per_s: Optional[float]
    correct: bool
    max_abs_err: Optional[float]
    bytes_per_host: Optional[float]           # sent, mean over the run's hosts
    bytes_received_per_host: Optional[float]
    packets_per_host: Optional[float]         # sent, mean over the run's hosts
    retransmissions: int
    hosts: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    reports: list = field(default_factory=list)
    repeat: int = 0                           # repetition index of this point and mode
    bw_mbit: Optional[float] = None           # every link's rate (None: unshaped)
    k: Optional[int] = None                   # values per aggregation packet
    # from the kernel's interface counters over the run (frames, headers included)
    wire_bytes_per_host: Optional[float] = None       # sent, mean over the run's hosts
    wire_bytes_received_per_host: Optional[float] = None
    interface_bytes: dict = field(default_factory=dict)   # counters.Snapshot.to_dict()
    # frames the switches' link impairments dropped, duplicated, reordered and delayed over
    # the run, summed over switches ({} without impairments)
    impairments: dict = field(default_factory=dict)
    # a job the switches could not hold that ran as a host allreduce instead (--fallback):
    # {"reason": the planner's line, "algorithm": what ran (= mode), "requested": "ina"}
    fallback: Optional[dict] = None
    collective: str = ALLREDUCE              # contracts.jobs.COLLECTIVES (compare --collective)
    # CPU seconds over the run (jobs/cpu.py): the workers' (from their reports) and the
    # switch processes'; busy_cores = their sum over the run's time (a lower bound)
    worker_cpu_seconds: Optional[float] = None
    switch_cpu_seconds: Optional[float] = None
    busy_cores: Optional[float] = None
    # the machine's busy CPU over the run less the two above (the kernel outside them and
    # anything else), the machine's busy cores (jobs/cpu.py), and the cores it has
    other_cpu_seconds: Optional[float] = None
    machine_busy_cores: Optional[float] = None
    machine_cores: Optional[int] = None
    # what really ran: the switches' data plane ("c", "python", "bmv2" or "mixed"; set by
    # compare from the switches' own word, None where no one recorded it) and the workers'
    # aggregation engines ({"c": ranks, "python": ranks}; {} for host algorithms)
    switch_backend: Optional[str] = None
    worker_engines: dict = field(default_factory=dict)
    # the switches' packet threads (their status files): "1", or "1-4" where they differ;
    # None where not recorded (bmv2, older results)
    switch_threads: Optional[str] = None


def _mean(values):
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def _sum_present(values):
    present = [v for v in values if v is not None]
    return float(sum(present)) if present else None


def summarize(mode: str, topo: str, switch: str, job: int, elements: int, dtype: str,
              window: Optional[int], outcomes: list, traffic: Optional[dict] = None,
              **settings) -> Run:
    """A Run from its workers' outcomes; correct only if every worker exited 0 with a
    verified report.  traffic: interface counters over the run (counters.Snapshot.to_dict());
    settings: repeat, bw_mbit, k."""
    reports = [o.report for o in outcomes if o.report is not None]
    errors = []
    for o in outcomes:
        if o.exit_code != 0 or o.report is None or o.report.get("correct") is not True:
            why = o.error or (o.report or {}).get("error") or _describe_exit(o.exit_code)
            errors.append(f"{o.host} (rank {o.rank}): {why}")
    complete = len(reports) == len(outcomes) and outcomes
    seconds = max(r["seconds"] for r in reports) if complete else None
    size_bits = elements * ELEMENT_BYTES[dtype] * 8
    errs = [r["max_abs_err"] for r in reports if r.get("max_abs_err") is not None]
    return Run(
        mode=mode, topo=topo, switch=switch, job=job, workers=len(outcomes),
        elements=elements, dtype=dtype, window=window, seconds=seconds,
        melem_per_s=elements / seconds / 1e6 if seconds else None,
        gbit_per_s=size_bits / seconds / 1e9 if seconds else None,
        correct=bool(outcomes) and not errors,
        max_abs_err=max(errs) if errs else None,
        bytes_per_host=_mean([r.get("bytes_sent") for r in reports]),
        bytes_received_per_host=_mean([r.get("bytes_received") for r in reports]),
        packets_per_host=_mean([r.get("packets_sent") for r in reports]),
        retransmissions=sum(r.get("retransmissions") or 0 for r in reports),
        worker_cpu_seconds=_sum_present([r.get("cpu_seconds") for r in reports]),
        worker_engines=_engines(reports),
        hosts=[o.host for o in outcomes], errors=errors, reports=reports,
        **_wire_bytes(traffic, [o.host for o in outcomes]), **settings)


def _engines(reports: list) -> dict:
    engines = {}
    for report in reports:
        if report.get("engine"):
            engines[report["engine"]] = engines.get(report["engine"], 0) + 1
    return dict(sorted(engines.items()))


def _wire_bytes(traffic: Optional[dict], hosts: list) -> dict:
    if not traffic:
        return {}
    counted = [traffic["hosts"][h] for h in hosts if h in traffic["hosts"]]
    return {"interface_bytes": traffic,
            "wire_bytes_per_host": _mean([c["tx_bytes"] for c in counted]),
            "wire_bytes_received_per_host": _mean([c["rx_bytes"] for c in counted])}


def _describe_exit(code: Optional[int]) -> str:
    if code is None:
        return "killed after the run timeout"
    if code == 0:
        return "exited 0 but its result was not verified"
    return f"exited with code {code}"


# -- table ----------------------------------------------------------------------------

COLUMNS = (("mode", "mode"), ("job", "job"), ("topo", "topo"), ("workers", "workers"),
           ("elements", "elements"), ("dtype", "dtype"), ("seconds", "seconds"),
           ("gbit_per_s", "Gbit/s"), ("melem_per_s", "Melem/s"),
           ("bytes_per_host", "MB_sent/host"), ("retransmissions", "retx"),
           ("correct", "correct"),
           ("max_abs_err", "max_abs_err"), ("switch_backend", "switch"),
           ("switch_threads", "threads"), ("worker_engines", "engine"))


LEFT_ALIGNED = {"mode", "topo", "dtype"}


def _cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key == "seconds":
        return f"{value:.3f}"
    if key == "gbit_per_s":
        return f"{value:.4f}"
    if key == "melem_per_s":
        return f"{value:.3f}"
    if key == "bytes_per_host":
        return f"{value / 1e6:.3f}"
    if key == "max_abs_err":
        return f"{value:.3g}"
    if key == "correct":
        return "yes" if value else "NO"
    if key == "worker_engines":
        return ",".join(e if len(value) == 1 else f"{e}:{n}" for e, n in value.items()) or "-"
    return str(value)


def format_table(runs: list) -> str:
    """Fixed-width text table, one row per run."""
    rows = [[title for _, title in COLUMNS]]
    rows += [[_cell(key, getattr(run, key)) for key, _ in COLUMNS] for run in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if key in LEFT_ALIGNED else cell.rjust(w)
                       for (key, _), cell, w in zip(COLUMNS, row, widths)).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- results.json ---------------------------------------------------------------------

def results_document(runs: list, meta: dict, skipped: list = (), summary: list = (),
                     impairments: Optional[dict] = None) -> dict:
    """skipped: [{"mode", "reason"}] for modes that could not run here; summary: the
    per-point rows of experiments.aggregate.summarize_runs; impairments: the switches' link
    impairment counters over the whole experiment, {"switches": {sw: counters}, "total":
    counters} (compare.impairment_totals)."""
    return {"runs": [asdict(run) for run in runs], "meta": meta,
            "skipped": list(skipped), "summary": list(summary),
            "impairments": dict(impairments or {})}


def write_results(directory: str, runs: list, meta: dict, skipped: list = (),
                  summary: list = (), impairments: Optional[dict] = None) -> str:
    """Write DIR/results.json atomically; returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "results.json")
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump(results_document(runs, meta, skipped, summary, impairments), f, indent=2,
                  sort_keys=True)
        f.write("\n")
    os.replace(temporary, path)
    return path


def load_runs(directory: str) -> list:
    """The runs of DIR/results.json as Run objects; ValueError (one line) if unreadable."""
    return load_document(directory)[0]


def load_document(directory: str) -> tuple[list, list, dict]:
    """(runs as Run objects, skipped modes, meta) of DIR/results.json; ValueError (one line)
    if unreadable."""
    path = os.path.join(directory, "results.json")
    try:
        with open(path) as f:
            document = json.load(f)
        return ([Run(**run) for run in document["runs"]], document.get("skipped", []),
                document.get("meta", {}))
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a results file: {e}") from None


def load_report(path: str) -> tuple[Optional[dict], Optional[str]]:
    """(report, None) or (None, why it could not be read)."""
    try:
        with open(path) as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, "no report written"
    except (OSError, json.JSONDecodeError) as e:
        return None, f"unreadable report: {e}"
