"""Simulated runs as the emulator's runs: simulation/run.py simulates one mode at one point and
hands back every worker's outcome; here they become a results.Run like compare's, with
"switch": "simgrid", so results.json, `experiments table` and `experiments plot` take both.

`simulate(request)` is one run, (Run, the simulation's details); `run_requests` runs a list
of them for `experiments simulate` and `calibrate`, rewriting DIR/results.json after each
and showing a progress bar.  A run is `correct` when every worker finished, and for
in-network aggregation every round's result was the exact sum of all ranks' contributions.
"""

from __future__ import annotations

from dataclasses import asdict

from contracts.cli import RunFailed
from experiments.progress import ProgressBar
from jobs import results
from jobs.runner import progress
from simulation.run import JOB_ID, Request, SimulationError, run_isolated, simulate_run

SWITCH_LABEL = "simgrid"


def summarized_run(request: Request) -> dict:
    """The run as a dict (results.Run fields) plus "simulation" details.  It runs in the
    simulation's child process, so that only the summary, not thousands of workers' reports,
    comes back through the pipe."""
    workers, details = simulate_run(request)
    outcomes = [results.WorkerOutcome(w.host, w.rank, 0 if w.error is None else 1, w.report,
                                      w.error) for w in workers]
    run = results.summarize(request.mode, request.topo, SWITCH_LABEL, JOB_ID,
                            request.elements, "int32",
                            request.window if request.mode == "ina" else None, outcomes,
                            repeat=request.repeat, bw_mbit=request.bw_mbit, k=request.k)
    reports = [o.report for o in outcomes if o.report]
    if len(reports) == len(outcomes):
        run.wire_bytes_per_host = sum(r["wire_bytes_sent"] for r in reports) / len(reports)
        run.wire_bytes_received_per_host = (sum(r["wire_bytes_received"] for r in reports)
                                            / len(reports))
    run.reports = []                  # thousands of workers: the summary is enough
    document = asdict(run)
    document["simulation"] = details
    return document


def simulate(request: Request) -> tuple[results.Run, dict]:
    """One run in a child process: (Run, simulation details)."""
    document = run_isolated(summarized_run, request)
    details = document.pop("simulation")
    return results.Run(**document), details


def run_requests(todo: list, out_dir: str, meta: dict) -> list:
    """Simulate every request in order, rewriting DIR/results.json after each; the runs."""
    runs, details = [], []
    meta["simulation"] = details
    bar = ProgressBar(len(todo))
    for request in todo:
        progress(f"simulating {request.mode}: {request.workers} workers on {request.topo}, "
                 f"E={request.elements}, {request.bw_mbit:g} Mbit/s")
        try:
            run, detail = simulate(request)
        except SimulationError as e:
            raise RunFailed(f"{request.mode}: {e}") from None
        runs.append(run)
        details.append({"mode": request.mode, "repeat": request.repeat, **detail})
        results.write_results(out_dir, runs, meta)
        bar.advance(f"{request.mode} p={request.workers} simulated {run.seconds or 0:.6f} s "
                    f"in {detail['wall_s']:.1f} s, peak {detail['peak_rss_mb']['total']:,.0f} MB")
    return runs
