"""Running allreduce modes on a running fabric: one mode's jobs at once (`run_mode`), the
worker processes in their Mininet hosts (`launch_workers`, `wait_workers`), the notes that
explain a job's outcome (`job_notes`: missing ranks, switch restarts) and the one-line
progress messages.  `python -m experiments compare|sweep|linkrate` and the lab's
`allreduce`/`ring` commands both run workers through here, so the lab never imports a
command-line module."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from typing import Callable, Optional

from contracts.cli import UsageError
from contracts.requests import JobRequest
from controller import CapacityError, PlanError, SwitchError
from jobs import cpu, results
from jobs.faults import SwitchKiller
from jobs.modes import MODES, JobSetup, barrier_dir, log_path, report_path
from hosts.barrier import BarrierTimeout, StartBarrier, start_lead_s
from topologies.impairment import sum_counters
from topologies.switches import REPO

STALL_ERROR = "no result from the switch"


def progress(message: str) -> None:
    print(f"compare: {message}", file=sys.stderr, flush=True)


def run_mode(fabric, counters, mode, setups: list, request: JobRequest,
             repeat: int = 0) -> list:
    """All jobs of one mode at once; one Run per job, with the interface counters over it.
    A job the switches cannot hold runs as request.fallback's host allreduce (prepare_jobs);
    request.kill_switch's kills (jobs/faults.py) fall while the workers run.  The fabric is
    one of Fabric.from_request (its request names the topology and the links' rate)."""
    jobs = []              # (mode that runs the job, plan, fallback record or None)
    try:
        jobs = prepare_jobs(fabric.manager, mode, setups, request.fallback)
        before = counters.snapshot()
        impaired_before = fabric.network.impairment_counters()
        switches = fabric.network.mininet.switches
        launched = [(setup, launch_workers(fabric.network, job_mode, setup, plan,
                                           request.absent_ranks))
                    for setup, (job_mode, plan, _) in zip(setups, jobs)]
        # The switches' CPU counts from the first go: the workers' set-up before it (15 s at
        # fattree:16) is in no run's time.
        at_go = {}

        def read_switch_cpu() -> None:      # once: over a cluster a reading takes an ssh
            if "switches" not in at_go:
                at_go["switches"] = cpu.switch_cpu_seconds(switches)
                at_go["machine"] = (cpu.machine_busy_seconds(), time.monotonic())
        for job_mode in dict.fromkeys(job_mode for job_mode, _, _ in jobs):
            start_workers(job_mode, [pair for pair, (other, _, _) in zip(launched, jobs)
                                     if other is job_mode], before_go=read_switch_cpu,
                          common_start=one_clock(fabric.network))
        read_switch_cpu()           # modes without a start barrier: from here
        switch_cpu_before = at_go["switches"]
        started = time.monotonic()
        killer = SwitchKiller(fabric, request.kill_switch, started, progress)
        progress(f"{mode.name}: {sum(len(s.hosts) for s in setups)} workers running")
        try:
            outcomes = [wait_workers(job_mode, setup, processes, started + request.run_timeout)
                        for (setup, processes), (job_mode, _, _) in zip(launched, jobs)]
        finally:
            killer.stop()
        # the machine's busy cores from go to the last worker's exit
        busy_then, go_time = at_go["machine"]
        machine_cpu = cpu.machine_busy_seconds() - busy_then
        machine_cores = machine_cpu / max(time.monotonic() - go_time, 1e-6)
        notes = [job_notes(fabric, job_mode, setup, plan, outs, started)
                 for setup, (job_mode, plan, _), outs in zip(setups, jobs, outcomes)]
        switch_cpu = cpu.switch_cpu_difference(cpu.switch_cpu_seconds(switches),
                                                switch_cpu_before)
        traffic = (counters.snapshot() - before).to_dict()
        impaired = counter_difference(
            fabric.network.impairment_counters(written_after=time.time()), impaired_before)
        progress(f"{mode.name}: done in {time.monotonic() - started:.1f} s")
    finally:
        for setup, (job_mode, _, _) in zip(setups, jobs):
            job_mode.finish(fabric.manager, setup)
    topo, bw_mbit = fabric.request.topo, fabric.request.links.bw
    runs = [results.summarize(job_mode.name, topo, fabric.switch_kind, setup.job,
                              setup.elements, setup.dtype,
                              setup.window if job_mode.design is not None else None, outs,
                              traffic=traffic, repeat=repeat, bw_mbit=bw_mbit, k=setup.k,
                              collective=setup.collective,
                              impairments=impaired, fallback=fallback)
            for setup, (job_mode, _, fallback), outs in zip(setups, jobs, outcomes)]
    for run, lines in zip(runs, notes):
        run.errors.extend(lines)
    note_cpu(mode.name, runs, switch_cpu, single_machine=fabric.network.cluster is None,
             machine=(machine_cpu, machine_cores))
    return runs


def note_cpu(mode_name: str, runs: list, switch_cpu, single_machine: bool = True,
             machine: Optional[tuple] = None) -> None:
    """Record the switches' CPU seconds and the busy cores of the mode's runs (all its jobs
    ran at once, so they share one figure), and say so when the machine was the limit.  Over
    a cluster the busy cores add up several machines', so no single machine can be named:
    the numbers are recorded and nothing is said."""
    worker_cpu = [r.worker_cpu_seconds for r in runs if r.worker_cpu_seconds is not None]
    seconds = [r.seconds for r in runs if r.seconds]
    busy = cpu.busy_cores(sum(worker_cpu) if worker_cpu else None, switch_cpu,
                          max(seconds) if seconds else None)
    for run in runs:
        run.switch_cpu_seconds, run.busy_cores = switch_cpu, busy
        if machine is not None and single_machine:
            # (the workers' CPU covers their whole process, so "other" is a lower bound)
            run.other_cpu_seconds = max(0.0, machine[0] - sum(worker_cpu) - (switch_cpu or 0.0))
            run.machine_busy_cores, run.machine_cores = machine[1], cpu.cores()
    note = cpu.cpu_bound_note(mode_name, busy, cpu.cores()) if single_machine else None
    if note:
        progress(note)


def prepare_jobs(manager, mode, setups: list, fallback=None) -> list:
    """[(mode that runs the job, plan, fallback record or None)] for every setup.  A job the
    switches cannot hold (controller.CapacityError) runs as the host algorithm `fallback`
    (a MODES key) instead, announced in one line; with fallback None (--fallback none) it is
    refused, as is any other planning error.  On a refusal the jobs prepared so far are
    finished before the UsageError is raised."""
    jobs = []
    try:
        for setup in setups:
            progress(f"{mode.name}: job {setup.job} on {', '.join(setup.hosts)}")
            try:
                jobs.append((mode, mode.prepare(manager, setup), None))
            except CapacityError as e:
                if fallback is None:
                    raise UsageError(f"job {setup.job}: {e}") from None
                progress(f"job {setup.job} does not fit the switches ({e}); running it as a "
                         f"host allreduce ({fallback}) instead")
                host_mode = MODES[fallback]
                jobs.append((host_mode, host_mode.prepare(manager, setup),
                             {"reason": str(e), "algorithm": fallback,
                              "requested": mode.name}))
            except PlanError as e:
                raise UsageError(f"job {setup.job}: {e}") from None
    except BaseException:
        for setup, (job_mode, _, _) in zip(setups, jobs):
            job_mode.finish(manager, setup)
        raise
    return jobs


def job_notes(fabric, mode, setup: JobSetup, plan, outcomes: list, started: float) -> list:
    """Lines explaining a job's outcome, printed and kept in its run's errors: which ranks an
    in-network job that stalled was waiting for (read from the switches' slot bitmaps while
    the job is still installed), and whether a switch of its tree restarted during it."""
    lines = []
    failure = next((o.error for o in outcomes if o.error), None)
    if mode.name == "ina" and any(o.error and STALL_ERROR in o.error for o in outcomes):
        try:
            report = fabric.manager.missing_ranks(setup.job)
            lines.append(report.to_text())
        except SwitchError as e:     # a switch that cannot be read (down, or refuses)
            lines.append(f"job {setup.job}: missing ranks unknown: {e}")
    restart = fabric.restart_outcome(setup.job, started, getattr(plan, "switches", None),
                                     failure)
    if restart:
        lines.append(restart)
    for line in lines:
        progress(line)
    return lines


def counter_difference(after: dict, before: dict) -> dict:
    """Impairment counters summed over the switches, after minus before ({} without any)."""
    if not after:
        return {}
    totals_after, totals_before = sum_counters(after), sum_counters(before)
    return {name: totals_after[name] - totals_before.get(name, 0) for name in totals_after}


def impairment_totals(network) -> dict:
    """{"switches": {switch: counters}, "total": counters} from the switches' final stats
    files, for results.json ({} when no link is impaired by a switch)."""
    per_switch = network.impairment_counters()
    return {"switches": per_switch, "total": sum_counters(per_switch)} if per_switch else {}


def launch_workers(network, mode, setup: JobSetup, plan, absent_ranks=()) -> list:
    """One process per rank, None for the ranks in absent_ranks (never started).  The
    workers set up and then wait at their start barrier until start_workers()."""
    if mode.start_barrier:
        folder = barrier_dir(setup, mode.name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
    processes = []
    for rank, (host, command) in enumerate(zip(setup.hosts, mode.commands(setup, plan))):
        path = report_path(setup, mode.name, rank)
        if os.path.exists(path):
            os.unlink(path)      # a stale report must not pass for this run's
        if rank in absent_ranks:
            processes.append(None)
            continue
        with open(log_path(setup, mode.name, rank), "wb") as log:
            processes.append(network.popen(host, command, cwd=REPO, stdin=subprocess.DEVNULL,
                                           stdout=log, stderr=subprocess.STDOUT))
    return processes


def one_clock(network) -> bool:
    """Whether every worker of `network` reads the launcher's CLOCK_MONOTONIC: on one
    machine, yes; over a cluster (--cluster: hosts on other servers) no, and the ranks' clocks
    start when each sees go (hosts/barrier.py)."""
    return network.cluster is None


def start_workers(mode, launched: list, before_go: Callable[[], None] = lambda: None,
                  *, common_start: bool) -> None:
    """Once every launched worker of every job is set up, let them all start at once, so
    that no job's time counts the launcher's skew.  `launched`: (setup, processes) pairs.
    A worker that exits before it is ready (its error shows in its outcome) or a barrier
    that times out is reported here; the workers that are ready start anyway.  before_go()
    is called once, just before the go files are written.  common_start: every worker runs
    on this machine, so every job's go carries one start instant on this machine's monotonic
    clock and every rank's clock starts there (hosts/barrier.py); False for a cluster
    (other machines' monotonic clocks differ): each rank's clock starts when it sees go."""
    if not mode.start_barrier:
        return
    running = [p for _, processes in launched for p in processes if p is not None]
    barriers = [StartBarrier(barrier_dir(setup, mode.name)) for setup, _ in launched]
    try:
        for barrier, (setup, processes) in zip(barriers, launched):
            try:
                barrier.wait_ready([rank for rank, p in enumerate(processes) if p is not None],
                                   alive=lambda: all(p.poll() is None for p in running),
                                   timeout_s=mode.ready_within_s(len(processes)))
            except BarrierTimeout as e:
                progress(f"{mode.name}: job {setup.job}: {e}")
    finally:     # go even after a timeout or Ctrl-C: the ready workers must not wait on
        before_go()
        start_at = (time.monotonic() + start_lead_s(len(running))
                    if common_start else None)
        for barrier in barriers:
            barrier.say_go(start_at)


def wait_workers(mode, setup: JobSetup, processes: list, deadline: float) -> list:
    outcomes = []
    for rank, (host, process) in enumerate(zip(setup.hosts, processes)):
        if process is None:
            outcomes.append(results.WorkerOutcome(host, rank, None, None,
                                                  "not started (--absent-ranks)"))
            continue
        try:
            code = process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = None
        report, why = results.load_report(report_path(setup, mode.name, rank))
        error = None
        if code is None:
            error = "killed after the run timeout"
        elif code != 0 or report is None:
            error = last_line(log_path(setup, mode.name, rank)) or why
        outcomes.append(results.WorkerOutcome(host, rank, code, report, error))
    if mode.start_barrier:
        folder = barrier_dir(setup, mode.name)
        shutil.rmtree(folder, ignore_errors=True)
        try:
            os.rmdir(os.path.dirname(folder))     # the last job's barrier takes its parent
        except OSError:
            pass
    return outcomes


def run_job(fabric, mode, setup: JobSetup, plan, timeout_s: float) -> tuple:
    """One job of `mode` on `fabric` by itself (the lab's verbs): its workers started in
    their hosts, released at once and waited for; (outcomes, Run).  On Ctrl-C the workers
    still running are killed and KeyboardInterrupt goes on up."""
    for sub in ("logs", "reports"):
        os.makedirs(os.path.join(setup.out_dir, sub), exist_ok=True)
    processes = launch_workers(fabric.network, mode, setup, plan)
    try:
        start_workers(mode, [(setup, processes)],
                      common_start=one_clock(fabric.network))
        outcomes = wait_workers(mode, setup, processes, time.monotonic() + timeout_s)
    except KeyboardInterrupt:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        raise
    run = results.summarize(mode.name, fabric.spec.kind, fabric.switch_kind, setup.job,
                            setup.elements, setup.dtype,
                            plan.window if plan is not None else None, outcomes,
                            collective=setup.collective)
    return outcomes, run


def last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""
