"""`python -m experiments soak`: many allreduces back to back on one network, checking for leaks.

    soak --topo star:4 --allreduces 300 --elements 20000 [--jobs J] --out DIR

One network is started; then N in-network allreduces run one after another (each with J
concurrent jobs on disjoint hosts), alternating int32 and float32 and cycling the job ids
through 1..2J (so every id is reused and the manager's slot ranges and generations are
recycled), each of a random size in 1..E elements (seeded).  Every worker checks its result
(int32 exactly; float32 within the block floating point bound, jobs/modes.py), and the
soak fails on the first allreduce that is not correct.

Before (after the first allreduce, so that start-up allocations do not count) and after the
last one it samples the switch processes' resident memory, open file descriptors and
threads, this process's (the controller's) file descriptors and threads, the slots the
manager has in use and the slot cells left collecting a round (`slot_state.count` != 0) on
every switch.  Exit 0 only if every allreduce was correct and nothing grew beyond these
thresholds (LIMITS): switch RSS by at most max(16 MiB, 25%) per switch (the allocator's
noise), switch threads by at most 4 (its P4Runtime server's thread pool starts threads on
demand, up to 32: the 300-allreduce soak saw 13 -> 16, a leak of one per allreduce or job
would be hundreds), file descriptors and the controller's threads by 0, no slot in use and no
cell left collecting after the last job stopped.  Prints one summary line; writes DIR/soak.json with both samples, the
thresholds, every allreduce's outcome, the verdict, and in "meta" what ran as compare records it
(each switch's back end and packet threads, the kernel's qdiscs on every link).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time

from contracts.cli import OneLineParser, UsageError, positive_int
from contracts.requests import FabricRequest, JobRequest
from contracts.wire import DEFAULT_K, DEFAULT_WINDOW
from jobs import results
from experiments.compare import job_membership, record_what_runs
from jobs.results import now
from jobs.counters import InterfaceCounters
from jobs.modes import MODES, JobSetup
from contracts.jobs import add_k_option, add_window_option, ina_timeout_ms
from jobs.runner import progress, run_mode
from fabric import Fabric
from topologies.impairment import longest_round_trip_ms
from topologies.spec import parse_topology

DTYPES = ("int32", "float32")
COUNT_REGISTER = "slot_state.count"
LIMITS = {"switch_rss_mib": "max(16 MiB, 25%) per switch", "switch_fds": 0,
          "switch_threads": 4, "controller_fds": 0, "controller_threads": 0,
          "slots_in_use_after": 0, "cells_collecting_after": 0}
RSS_SLACK_MIB, RSS_SLACK_FRACTION = 16.0, 0.25


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments soak",
                      description="Many allreduces back to back on one network; checks every "
                                  "result and that nothing leaks.")
    p.add_argument("--topo", required=True, help="star:N, leafspine:L,S,H, fattree:K, tree:D,F")
    p.add_argument("--allreduces", type=positive_int, required=True)
    p.add_argument("--elements", type=positive_int, required=True,
                   help="largest vector size (each allreduce draws 1..E)")
    p.add_argument("--jobs", type=positive_int, default=1, help="concurrent jobs per allreduce")
    add_window_option(p, DEFAULT_WINDOW)
    add_k_option(p, DEFAULT_K)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--run-timeout", type=positive_int, default=300,
                   help="seconds before one allreduce's workers are killed")
    return p


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    try:
        spec = parse_topology(args.topo)
    except ValueError as e:
        raise UsageError(str(e)) from None
    switch_kind = "builtin"          # slot registers are read over P4Runtime (bmv2 cannot)
    groups = job_membership([h.name for h in spec.hosts], args.jobs, None)
    if os.geteuid() != 0:
        raise UsageError("soak needs root (Mininet network namespaces): run it with sudo")
    out_dir = os.path.abspath(args.out)
    for sub in ("reports", "logs"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
    request = FabricRequest(topo=args.topo, switch=switch_kind)
    job = JobRequest.from_options(args, modes=("ina",), elements=None)
    rng = random.Random(args.seed)
    report = {"command": ["python", "-m", "experiments", "soak"] + list(argv),
              "started": now(), **results.provenance(), "limits": LIMITS, "allreduces": []}
    fabric = Fabric.from_request(spec, switch_kind, request, job.k,
                                 os.path.join(out_dir, "logs"), say=progress)
    with fabric:
        # what ran, as compare records it: switch back ends and threads, the links' qdiscs
        report["meta"] = {"switch_backend_requested": os.environ.get("P4SWITCH_BACKEND")
                          or "auto"}
        record_what_runs(report["meta"], fabric.network)
        counters = InterfaceCounters(fabric.network)
        for index in range(args.allreduces):
            dtype = DTYPES[index % 2]
            elements = rng.randint(1, args.elements)
            setups = [JobSetup(job=1 + (index % 2) * job.jobs + j, hosts=group,
                               host_ips=tuple(spec.host(h).ip for h in group),
                               elements=elements, dtype=dtype, seed=job.seed + index + j,
                               window=job.window, k=job.k, out_dir=out_dir, run=index % 2,
                               timeout_ms=ina_timeout_ms(None, job.window, job.k,
                                                         longest_round_trip_ms(spec)))
                      for j, group in enumerate(groups)]
            runs = run_mode(fabric, counters, MODES["ina"], setups, job)
            report["allreduces"].append({"index": index, "dtype": dtype, "elements": elements,
                                         "jobs": [r.job for r in runs],
                                         "correct": all(r.correct for r in runs),
                                         "seconds": max((r.seconds or 0) for r in runs),
                                         "errors": [e for r in runs for e in r.errors][:3]})
            if not report["allreduces"][-1]["correct"]:
                break
            if index == 0:
                report["before"] = sample(fabric)
        report["after"] = sample(fabric)
    report["finished"] = now()
    report.setdefault("before", report["after"])
    report["growth"], failures = judge(report)
    done = report["allreduces"]
    correct = sum(a["correct"] for a in done)
    report["ok"] = not failures and correct == args.allreduces
    path = os.path.join(out_dir, "soak.json")
    with open(path, "w") as handle:
        json.dump(report, handle, indent=1)
    growth = report["growth"]
    print(f"soak: {correct}/{args.allreduces} allreduces correct on {args.topo} "
          f"({args.jobs} job(s) each, up to {args.elements} elements); switch RSS "
          f"{growth['switch_rss_mib']:+.1f} MiB, fds {growth['switch_fds']:+d}, threads "
          f"{growth['switch_threads']:+d}; controller fds {growth['controller_fds']:+d}, "
          f"threads {growth['controller_threads']:+d}; slots in use after "
          f"{report['after']['slots_in_use']}, cells left collecting "
          f"{report['after']['cells_collecting']}: "
          + ("ok" if report["ok"] else "FAILED (" + "; ".join(
              failures or [f"allreduce {done[-1]['index']} not correct: "
                           + "; ".join(done[-1]['errors'])]) + ")"))
    progress(f"wrote {path}")
    return 0 if report["ok"] else 1


def sample(fabric) -> dict:
    """Resources of the switch processes and of this process, and the slot state."""
    switches = {}
    for switch in fabric.spec.switches:
        pid = fabric.network.switch(switch.name).process.pid
        switches[switch.name] = process_resources(pid)
    manager = fabric.manager
    slots = sum(a.capacity - a.free_slots() for a in manager.planner.allocators.values())
    collecting = 0
    for name, connection in manager.connections.items():
        collecting += sum(1 for value in connection.read_register_cells(COUNT_REGISTER).values()
                          if value)
    return {"at": time.time(), "switches": switches,
            "controller": process_resources(os.getpid()),
            "python_threads": threading.active_count(),
            "slots_in_use": slots, "cells_collecting": collecting}


def process_resources(pid: int) -> dict:
    """{"rss_mib", "fds", "threads"} of a process, from /proc."""
    status = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            status[key] = value.split()
    return {"pid": pid, "rss_mib": int(status["VmRSS"][0]) / 1024,
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": int(status["Threads"][0])}


def judge(report: dict) -> tuple[dict, list]:
    """(growth from before to after, [failed threshold lines])."""
    before, after = report["before"], report["after"]
    failures = []
    rss = fds = threads = 0.0
    for name, late in after["switches"].items():
        early = before["switches"][name]
        if late["pid"] != early["pid"]:
            failures.append(f"switch {name} restarted during the soak")
            continue
        grew = late["rss_mib"] - early["rss_mib"]
        rss = max(rss, grew)
        if grew > max(RSS_SLACK_MIB, RSS_SLACK_FRACTION * early["rss_mib"]):
            failures.append(f"switch {name} RSS grew {grew:.1f} MiB "
                            f"(from {early['rss_mib']:.1f})")
        fds = max(fds, late["fds"] - early["fds"])
        threads = max(threads, late["threads"] - early["threads"])
    growth = {"switch_rss_mib": rss, "switch_fds": int(fds), "switch_threads": int(threads),
              "controller_fds": after["controller"]["fds"] - before["controller"]["fds"],
              "controller_threads": (after["controller"]["threads"]
                                     - before["controller"]["threads"])}
    for key in ("switch_fds", "switch_threads", "controller_fds", "controller_threads"):
        if growth[key] > LIMITS[key]:
            failures.append(f"{key.replace('_', ' ')} grew by {growth[key]}")
    if after["slots_in_use"]:
        failures.append(f"{after['slots_in_use']} slots still in use")
    if after["cells_collecting"]:
        failures.append(f"{after['cells_collecting']} slot cells left collecting a round")
    return growth, failures
