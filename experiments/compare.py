"""`python -m experiments compare`: run allreduce modes on one emulated network and compare.

Steps: compile p4src for the switch target, start the network, install pipeline and routes
through the aggregation manager, then for each point (workers, elements), each repetition
and each mode: start every job's workers at once in their Mininet hosts, read the interface
counters before and after, collect the workers' JSON reports, stop the jobs.  The network is
started once and reused for every run.  DIR/results.json is rewritten after each run (a
long sweep that is interrupted keeps what it measured); finally a table of the runs and the
Markdown summary (median and spread per mode) are printed.  `python -m experiments sweep`
(experiments/sweep.py) is the same runner over lists of sizes and worker counts.
Exit 1 if any run is not correct, 2 for bad input.
"""

from __future__ import annotations

import argparse
import os
import platform
from dataclasses import dataclass
from typing import Optional

from contracts.cli import DEFAULT_MODES, OneLineParser, UsageError, comma_list, positive_int
from contracts.requests import (DEFAULT_RUN_TIMEOUT_S, DEFAULT_TCP_CC, FabricRequest,
                                JobRequest)
from contracts.jobs import (ALLREDUCE, COLLECTIVES, SWITCH_KINDS, add_dtype_option, add_k_option,
                            add_window_option)
from experiments import aggregate, baseline, fabric_bound
from experiments.progress import ProgressBar
from jobs import results
from jobs.counters import InterfaceCounters
from jobs.faults import check_switches, parse_kills
from jobs.modes import (MODES, JobSetup, check_collective, job_timeout_ms, shape_refusal,
                        switch_refusal)
from jobs.results import now   # train's clock too
from jobs.runner import impairment_totals, progress, run_mode
from fabric import Fabric, add_fabric_arguments, requested, switch_backend
from p4switch.targets import BACKENDS
from hosts.algorithms import ALGORITHMS
from topologies.impairment import longest_round_trip_ms
from topologies.net import run_checked

FIRST_JOB_ID = 1
DEFAULT_FALLBACK = "ring"
ALLOWED_TCP_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


_ranks = comma_list(int, minimum=0, sort=True, bad="expected a comma list of ranks, got {text!r}",
                    unknown="expected a comma list of ranks >= 0, got {text!r}")


def rank_list(text: str) -> tuple:
    return tuple(_ranks(text))


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Options compare and sweep share (everything but the points)."""
    p.add_argument("--topo", required=True, help="star:N, leafspine:L,S,H, fattree:K, tree:D,F "
                                                 "or a topology.json file")
    p.add_argument("--modes", default=DEFAULT_MODES, help=f"comma list of {', '.join(MODES)}")
    p.add_argument("--collective", choices=COLLECTIVES, default=ALLREDUCE,
                   help="the collective every job runs (default allreduce; a mode that has "
                        "no version of it is a usage error: contracts/jobs.py)")
    add_dtype_option(p)
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default: results/TOPO-SWITCH, e.g. "
                        "results/star4-builtin)")
    p.add_argument("--repeat", type=positive_int, default=1,
                   help="runs of every mode at every point (the summary gives the median "
                        "and min/max)")
    p.add_argument("--jobs", type=positive_int, default=1, help="concurrent jobs, disjoint hosts")
    add_window_option(p)
    add_k_option(p)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--switch", choices=SWITCH_KINDS, default="auto")
    p.add_argument("--switch-logs", action="store_true", help="per-switch packet trace logs")
    p.add_argument("--switch-backend", choices=BACKENDS, default=None,
                   help="data plane of the built-in switch: c (generated C), python (the "
                        "reference), xdp (in the kernel; unshaped links only) or auto "
                        "(default: $P4SWITCH_BACKEND, else auto)")
    p.add_argument("--pcap", action="store_true", help="per-port pcaps in DIR/pcaps")
    p.add_argument("--run-timeout", type=positive_int, default=DEFAULT_RUN_TIMEOUT_S,
                   help="seconds before a run's workers are killed")
    p.add_argument("--absent-ranks", type=rank_list, default=(), metavar="R[,R...]",
                   help="fault injection: these ranks' workers are never started, in every "
                        "job (the others stall and fail, naming the missing ranks)")
    p.add_argument("--fallback", type=fallback_algorithm, default=DEFAULT_FALLBACK,
                   metavar="ALGO|none",
                   help="a job the switches cannot hold (no free slots on a switch of its "
                        "tree, too many contributors, no common switch) runs as this host "
                        f"allreduce instead (default {DEFAULT_FALLBACK}; none: refuse it)")
    p.add_argument("--kill-switch", type=parse_kills, default=(), metavar="NAME@S[,NAME@S...]",
                   help="fault injection: kill these switch processes this many seconds into "
                        "every run (the supervisor restarts them)")
    p.add_argument("--tcp-cc", default=DEFAULT_TCP_CC, metavar="NAME",
                   help=f"TCP congestion control in the hosts (default {DEFAULT_TCP_CC}; "
                        "'system' keeps the machine's)")
    add_fabric_arguments(p)   # links, routing, --cluster and its options


def fallback_algorithm(text: str):
    """--fallback: a host algorithm of hosts/algorithms/, or None for "none"."""
    if text == "none":
        return None
    if text not in ALGORITHMS:
        raise argparse.ArgumentTypeError(f"unknown algorithm {text!r} (choose from "
                                         f"{', '.join(ALGORITHMS)} or none)")
    return text


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments compare",
                      description="Run allreduce modes on an emulated network and compare them.")
    add_common_arguments(p)
    p.add_argument("--elements", type=positive_int, required=True)
    p.add_argument("--workers", type=positive_int,
                   help="workers per job (default: all hosts divided among the jobs)")
    return p


@dataclass(frozen=True)
class Point:
    workers: Optional[int]     # per job; None: all hosts divided among the jobs
    elements: int


def parse_modes(text: str) -> list:
    names = comma_list(choices=MODES, error=UsageError,
                       bad=f"--modes: unknown mode {{first!r}} (choose from {', '.join(MODES)})")
    return [MODES[n] for n in names(text)]


def available_modes(modes: list) -> tuple[list, list]:
    """(modes that can run here, [{"mode", "reason"}] for those that cannot)."""
    runnable, skipped = [], []
    for mode in modes:
        reason = mode.unavailable()
        if reason is None:
            runnable.append(mode)
        else:
            skipped.append({"mode": mode.name, "reason": reason})
            progress(f"{mode.name} skipped: {reason}")
    return runnable, skipped


def check_tcp_cc(name: str) -> None:
    if name == "system":
        return
    with open(ALLOWED_TCP_CC) as handle:
        allowed = handle.read().split()
    if name not in allowed:
        raise UsageError(f"--tcp-cc {name}: network namespaces may use {', '.join(allowed)} "
                         f"(net.ipv4.tcp_allowed_congestion_control)")


def set_tcp_cc(network, spec, name: str) -> None:
    """Every host namespace gets its own TCP congestion control setting."""
    if name == "system":
        return
    for host in spec.hosts:
        run_checked(network.host(host.name), f"sysctl -qw net.ipv4.tcp_congestion_control={name}")


def job_membership(host_names: list, jobs: int, workers) -> list:
    """Disjoint host groups, one per job, in host order."""
    per_job = workers if workers is not None else len(host_names) // jobs
    if per_job < 1 or per_job * jobs > len(host_names):
        raise UsageError(f"{jobs} job(s) x {workers or per_job} workers do not fit on "
                         f"{len(host_names)} hosts")
    return [tuple(host_names[j * per_job:(j + 1) * per_job]) for j in range(jobs)]


def check_xdp_links(request: FabricRequest, switch_kind: str) -> None:
    """The XDP back end sends a switch's frames by XDP redirect, which no qdisc sees (a tbf
    could not shape them) and which its process never touches (no --impair): its links are
    unshaped and unimpaired. Its hosts' veth ends need NAPI to take redirected frames, so
    INA_VETH_NAPI defaults to gro for it (docs/native.md, "The XDP back end")."""
    if switch_backend(request) != "xdp" or switch_kind == "bmv2":
        return
    shaped = [f"--{name}" for name in request.links.set_options()]
    if shaped:
        raise UsageError(f"{' '.join(shaped)}: the xdp switch back end sends by XDP redirect, "
                         "which no qdisc shapes and no switch impairment sees; use c")
    if os.environ.get("INA_VETH_NAPI", "off") == "off":
        os.environ["INA_VETH_NAPI"] = "gro"
        progress("INA_VETH_NAPI=gro: the xdp switches' redirected frames need the hosts' NAPI")


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    return run_experiment(args, ["compare"] + list(argv), [Point(args.workers, args.elements)])


def default_out(topo: str, switch_kind: str) -> str:
    """results/TOPO-SWITCH, the topology without punctuation (star:4 -> star4)."""
    name = "".join(c if c.isalnum() else "_" for c in topo.replace(":", ""))
    return os.path.join("results", f"{name}-{switch_kind}")


def run_experiment(args, command: list, points: list) -> int:
    """Run every point x repetition x mode on one network; see the module docstring."""
    modes = parse_modes(args.modes)
    fabric_request = FabricRequest.from_options(args)
    job = JobRequest.from_options(args, modes=tuple(mode.name for mode in modes),
                                  elements=None, workers=None)    # the points' own
    spec, switch_kind, cluster, job = requested(fabric_request, job)
    refusals = [check_collective(mode, job.collective, len(spec.switches),
                                 bool(job.kill_switch), job.dtype)
                or switch_refusal(switch_kind, job.k, mode.name, job.collective)
                for mode in modes]
    if any(refusals):
        raise UsageError(next(r for r in refusals if r))
    try:
        check_switches(job.kill_switch, spec)
    except ValueError as e:
        raise UsageError(str(e)) from None
    check_tcp_cc(job.tcp_cc)
    check_xdp_links(fabric_request, switch_kind)
    host_names = [h.name for h in spec.hosts]
    groups = {point: job_membership(host_names, job.jobs, point.workers) for point in points}
    refusal = next((r for mode in modes for r in [shape_refusal(
        mode, spec, [hosts for members in groups.values() for hosts in members])] if r), None)
    if refusal:
        raise UsageError(refusal)
    if os.geteuid() != 0:
        raise UsageError(f"{command[0]} needs root (Mininet network namespaces): run it with sudo")
    if args.out is None:
        args.out = default_out(args.topo, switch_kind)
        progress(f"results go to {args.out}")
    out_dir = os.path.abspath(args.out)
    modes, skipped = available_modes(modes)
    if fabric_request.switch_backend:
        # The switch processes inherit it (p4switch run reads $P4SWITCH_BACKEND).
        os.environ["P4SWITCH_BACKEND"] = fabric_request.switch_backend
    meta = run_metadata(fabric_request, job, command, switch_kind, spec)
    if not modes:
        results.write_results(out_dir, [], meta, skipped)
        raise UsageError("no requested mode can run here: " +
                         "; ".join(f"{s['mode']}: {s['reason']}" for s in skipped))
    os.makedirs(os.path.join(out_dir, "reports"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "logs"), exist_ok=True)

    runs = []
    bar = ProgressBar(len(points) * job.repeat * len(modes))
    fabric = Fabric.from_request(spec, switch_kind, fabric_request, job.k,
                                 os.path.join(out_dir, "logs"),
                                 pcap_dir=os.path.join(out_dir, "pcaps") if args.pcap else None,
                                 say=progress, impair_seed=job.seed, cluster=cluster)
    with fabric:
        record_what_runs(meta, fabric.network)
        set_tcp_cc(fabric.network, spec, job.tcp_cc)
        counters = InterfaceCounters(fabric.network)
        for point in points:
            for repeat in range(job.repeat):
                for mode in modes:
                    setups = job_setups(spec, groups[point], point.elements, job, out_dir,
                                        run=bar.done, switch_kind=switch_kind,
                                        bw_mbit=fabric_request.links.bw)
                    for run in run_mode(fabric, counters, mode, setups, job, repeat):
                        run.switch_backend = meta["switch_backend"]
                        run.switch_threads = meta["switch_threads_ran"]
                        runs.append(run)
                    results.write_results(out_dir, runs, meta, skipped)
                    bar.advance(f"{mode.name} p={len(setups[0].hosts)} E={point.elements} "
                                f"run {repeat + 1}/{job.repeat}")
    meta["finished"] = now()
    impairments = impairment_totals(fabric.network)
    if impairments:
        progress("link impairments: " + ", ".join(f"{value} {name}" for name, value
                                                  in impairments["total"].items()))
    fabric = fabric_bound.fabric_bounds(progress)    # what the topology allows each host mode
    status = aggregate.write_and_report(out_dir, runs, meta, progress, skipped, impairments,
                                        fabric)
    baseline.report(out_dir, runs, meta, progress, fabric)   # ina against the fastest host mode
    return status


def job_setups(spec, groups: list, elements: int, job: JobRequest, out_dir: str, run: int,
               switch_kind: str = "builtin", bw_mbit: Optional[float] = None) -> list:
    """One JobSetup per group of hosts, job ids from FIRST_JOB_ID, seeds from job.seed."""
    timeout_ms = request_timeout_ms(job, spec, switch_kind, sum(len(g) for g in groups),
                                    bw_mbit)
    return [JobSetup(job=FIRST_JOB_ID + j, hosts=group,
                     host_ips=tuple(spec.host(h).ip for h in group),
                     elements=elements, dtype=job.dtype, seed=job.seed + j,
                     window=job.window, k=job.k, out_dir=out_dir, run=run,
                     timeout_ms=timeout_ms, collective=job.collective)
            for j, group in enumerate(groups)]


def request_timeout_ms(job: JobRequest, spec, switch_kind: str, workers: int,
                       bw_mbit: Optional[float]) -> float:
    """The ina workers' first retransmission timeout for `workers` ranks running at once."""
    return job_timeout_ms(spec, switch_kind, job.k, workers, job.window, bw_mbit,
                          longest_round_trip_ms(spec))


def record_what_runs(meta: dict, network) -> None:
    """What the started network runs, into meta: each switch's back end and packet threads,
    the kernel's qdiscs on every link and the hosts' veth NAPI ($INA_VETH_NAPI, GRO and
    threaded as the kernel has them; compare and soak record the same)."""
    record_switch_backends(meta, network.switch_backends())
    record_switch_threads(meta, network.switch_threads())
    meta["link_qdiscs"] = network.link_qdiscs()
    meta["veth_napi"], meta["host_napi"] = network.veth_napi, network.host_napi()
    # whether TCP sends crossed the switches whole ($INA_TSO; topologies/net.py), and why not
    meta["segmentation_offload"] = network.segmentation_offload
    meta["no_segmentation_offload_because"] = network.no_segmentation_offload_because


def record_switch_backends(meta: dict, backends: dict) -> None:
    """What ran, not what was asked for: meta["switch_backends"] per switch, and
    "switch_backend" the one they all ran (or "mixed"), with a line on stderr when a
    built-in switch does not run the C back end that "auto" or "c" asked for."""
    meta["switch_backends"] = dict(backends)
    ran = set(backends.values())
    meta["switch_backend"] = ran.pop() if len(ran) == 1 else "mixed"
    slower = sorted(name for name, backend in backends.items() if backend in ("python", "unknown"))
    if slower and meta.get("switch_backend_requested") in ("auto", "c"):
        progress(f"switches not on the c back end: {', '.join(slower)} "
                 f"({meta['switch_backend']}; see their logs/*.status.json)")


def record_switch_threads(meta: dict, threads: dict) -> None:
    """meta["switch_threads"]: the packet threads each switch runs (None: not recorded, as
    for bmv2); "switch_threads_ran": their one value, or "min-max" where they differ."""
    meta["switch_threads"] = dict(threads)
    counts = sorted({count for count in threads.values() if count is not None})
    if not counts:
        meta["switch_threads_ran"] = None
    elif len(counts) == 1:
        meta["switch_threads_ran"] = str(counts[0])
    else:
        meta["switch_threads_ran"] = f"{counts[0]}-{counts[-1]}"


def run_metadata(fabric: FabricRequest, job: JobRequest, command, switch_kind, spec) -> dict:
    links = fabric.links
    return {"command": ["python", "-m", "experiments"] + list(command),
            "repeat": job.repeat,
            "started": now(), "topo": fabric.topo, "switch": switch_kind,
            "switch_backend_requested": (os.environ.get("P4SWITCH_BACKEND") or "auto")
            if switch_kind == "builtin" else None,
            "hosts": len(spec.hosts), "switches": len(spec.switches), "jobs": job.jobs,
            "k": job.k, "window": job.window, "seed": job.seed, "tcp_cc": job.tcp_cc,
            "collective": job.collective,
            "fallback": job.fallback,
            "flowlet_gap_us": fabric.flowlet_gap_us,
            "flowlet_max_bytes": fabric.flowlet_max_bytes,
            "kill_switch": [str(kill) for kill in job.kill_switch],
            "ina_timeout_ms": request_timeout_ms(job, spec, switch_kind, len(spec.hosts),
                                                 links.bw),
            "link": {"bw_mbit": links.bw, "delay_ms": links.delay, "jitter_ms": links.jitter,
                     "loss_pct": links.loss, "dup_pct": links.dup, "reorder_pct": links.reorder,
                     "impaired_by": ("switch" if switch_kind == "builtin" else "kernel")},
            "cluster": ({"servers": list(fabric.cluster.servers.split(",")),
                         "placement": fabric.cluster.placement, "tunnel": fabric.cluster.tunnel}
                        if fabric.cluster else None),
            "python": platform.python_version(), "kernel": platform.release(),
            **results.provenance()}
