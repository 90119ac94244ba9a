"""Training runs on a running fabric, shared by `python -m experiments train`
(experiments/train.py) and the lab's `train` command (lab/cli.py).

For every worker count n (the first n hosts) and every mode, one `python -m hosts train`
process per host (hosts/train.py: PyTorch DDP on scikit-learn's digits, the same seed,
initial weights and data shards in every mode; the mode is the DDP comm hook: `ina` through
the switches, `gloo`, or `ring`).  With n = 1 there is nothing to allreduce: one run (mode
`single`) trains locally and gives T_1 for every mode.  Each run's entry for results.json
(`summarize`): test accuracy, final training loss, the loss per step (the mean over the
ranks' batches, i.e. the global batch's loss), the seconds per step split into computation
and communication (per rank too), bytes per step (host interface counters, mean over hosts),
the number of allreduces, the Gloo fallbacks, the throughput T_n in samples/s (`throughput`)
and the scale factor T_n / (n T_1) (`add_scale_factors`).

`--parallel hook,ddp,fsdp` (a comma list; default hook) runs every mode under each: hook is
DDP with the mode's synchronous comm hook (above); ddp is plain DDP and fsdp FSDP2
`fully_shard`, both on the mode's process group (`ina`: init_process_group("cpu:ina"),
hosts/torch_backend.py; ring has no process group and is skipped there, said in one line).
Their entries add the exposed communication (step time minus the main thread's CPU time),
the ina worker thread's busy time, the UDP payload bytes per step by collective beside the
formulas (`byte_formulas`), whether the ranks' parameters were bit-identical, and the
switches' own counters over the run: bytes through their ports and the P4 program's
aggregation events (`switch_counters`).  `--model wide` trains the 1.1M-parameter MLP.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from contracts.cli import UsageError, comma_list, positive_float, positive_int
from contracts import collectives
from contracts.collectives import ALLGATHER, REDUCE_SCATTER
from contracts.jobs import MODELS, PARALLEL, TRAIN_MODES, TrainWorker
from contracts.wire import DEFAULT_WINDOW
from jobs import train_precision
from jobs.counters import InterfaceCounters
from jobs.modes import (GLOO_FIRST_PORT, GLOO_PORT_RUNS, RING_FIRST_PORT, InaMode,
                               JobSetup, report_path)
from jobs.runner import launch_workers, wait_workers
from topologies.net import host_interface
from topologies.switches import python_executable

SINGLE = "single"
JOB = 1
DEFAULT_RUN_TIMEOUT_S = 1800


def progress(message: str) -> None:
    print(f"train: {message}", file=sys.stderr, flush=True)


int_list = comma_list(int, minimum=1, sort=True, error=UsageError,
                      bad="--workers: expected a comma list of counts, got {text!r}",
                      unknown="--workers: counts must be >= 1, got {text!r}")


def slowdowns(text: str) -> dict:
    """--host-slowdown h3=2.0[,h5=1.5] -> {"h3": 2.0, ...}."""
    result = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        host, sep, factor = part.partition("=")
        try:
            value = float(factor)
        except ValueError:
            value = 0.0
        if not sep or not host or value < 1:
            raise UsageError(f"--host-slowdown: expected HOST=FACTOR with FACTOR >= 1, "
                             f"got {part!r}")
        result[host] = value
    return result


parse_modes = comma_list(choices=TRAIN_MODES, error=UsageError,
                         bad=f"--modes: unknown mode {{first!r}} "
                             f"(choose from {', '.join(TRAIN_MODES)})")
parse_parallel = comma_list(choices=PARALLEL, error=UsageError,
                            bad=f"--parallel: unknown {{first!r}} "
                                f"(choose from {', '.join(PARALLEL)})")


def add_training_arguments(p) -> None:
    """The options of a training run (experiments train and the lab's train share them),
    each parsed into the type of its TrainingRequest field."""
    p.add_argument("--modes", type=parse_modes, default="ina,gloo",
                   help="comma list of ina, gloo, ring")
    p.add_argument("--workers", type=int_list,
                   help="comma list of worker counts (default: every host)")
    p.add_argument("--epochs", type=positive_int, default=TrainWorker.epochs)
    p.add_argument("--batch", type=positive_int, default=TrainWorker.batch,
                   help="images per worker per step")
    p.add_argument("--hidden", type=int, default=TrainWorker.hidden,
                   help="hidden units (0: softmax regression)")
    p.add_argument("--lr", type=positive_float, default=TrainWorker.lr)
    p.add_argument("--momentum", type=float, default=TrainWorker.momentum)
    p.add_argument("--seed", type=int, default=TrainWorker.seed)
    p.add_argument("--max-steps", type=positive_int, help="stop every run after this many steps")
    p.add_argument("--host-slowdown", type=slowdowns, default="", metavar="HOST=F[,HOST=F]",
                   help="make these hosts' computation F times slower (stragglers)")
    p.add_argument("--precision-check", action="store_true",
                   help="check ina's and gloo's losses against the derived bound "
                        "(needs --hidden 0 --momentum 0)")
    p.add_argument("--run-timeout", type=positive_int, default=DEFAULT_RUN_TIMEOUT_S)
    p.add_argument("--parallel", type=parse_parallel, default=TrainWorker.parallel,
                   help="comma list of hook (DDP + the mode's comm hook), ddp (plain DDP on "
                        "the mode's process group), fsdp (FSDP2 fully_shard on it)")
    p.add_argument("--model", choices=MODELS, default=TrainWorker.model,
                   help="mlp: 64-HIDDEN-10; wide: 64-1024-1024-10 (1.1M parameters)")


@dataclass(frozen=True)
class TrainingRequest:
    """A training run's settings (add_training_arguments; built from them at the top of a
    command with contracts.requests.picked), checked by `worker_counts`."""
    modes: tuple = ("ina", "gloo")
    workers: Optional[tuple] = None     # worker counts; None: every host
    epochs: int = TrainWorker.epochs        # the defaults are the rank command's own
    batch: int = TrainWorker.batch
    hidden: int = TrainWorker.hidden
    lr: float = TrainWorker.lr
    momentum: float = TrainWorker.momentum
    seed: int = TrainWorker.seed
    max_steps: Optional[int] = None
    host_slowdown: dict = dataclasses.field(default_factory=dict)    # host -> factor
    precision_check: bool = False
    run_timeout: int = DEFAULT_RUN_TIMEOUT_S
    parallel: tuple = (TrainWorker.parallel,)
    model: str = TrainWorker.model
    window: int = DEFAULT_WINDOW

    def worker_counts(self, host_names: list, where: str) -> list:
        """The worker counts, after the checks that need no network (`where`: the
        topology); UsageError (one line)."""
        if all(p != "hook" for p in self.parallel) and list(self.modes) == ["ring"]:
            raise UsageError("--modes ring runs only as a DDP comm hook: add hook to --parallel")
        counts = list(self.workers or ()) or [len(host_names)]
        if counts[-1] > len(host_names):
            raise UsageError(f"--workers {counts[-1]} exceeds the {len(host_names)} hosts of "
                             f"{where}")
        unknown = [h for h in self.host_slowdown if h not in host_names]
        if unknown:
            raise UsageError(f"--host-slowdown: no host {unknown[0]} in {where}")
        if self.hidden < 0 or not 0 <= self.momentum < 1:
            raise UsageError("--hidden must be >= 0 and --momentum in [0, 1)")
        if self.precision_check:
            if self.hidden != 0 or self.momentum != 0:
                raise UsageError("--precision-check needs --hidden 0 and --momentum 0")
            if list(self.parallel) != ["hook"]:
                raise UsageError("--precision-check needs --parallel hook")
            if not {"ina", "gloo"} <= set(self.modes):
                raise UsageError("--precision-check compares ina with gloo: give both in "
                                 "--modes")
        return counts


class TrainMode:
    """One mode of training, as jobs.runner.launch_workers wants a mode: a name and
    each rank's command; ina also installs and removes the job on the switches."""

    start_barrier = False        # the ranks line up in dist.barrier() (hosts/train.py)

    def __init__(self, name: str, request: TrainingRequest, parallel: str = "hook"):
        self.name, self.request, self.parallel = name, request, parallel

    def prepare(self, manager, setup: JobSetup):
        return InaMode().prepare(manager, setup) if self.name == "ina" else None

    def finish(self, manager, setup: JobSetup) -> None:
        if self.name == "ina":
            InaMode().finish(manager, setup)

    def commands(self, setup: JobSetup, plan) -> list:
        return [rank_command(self.name, setup, plan, rank, self.request, self.parallel)
                for rank in range(len(setup.hosts))]


def rank_command(mode: str, setup: JobSetup, plan, rank: int, request: TrainingRequest,
                 parallel: str = "hook") -> list:
    host, world = setup.hosts[rank], len(setup.hosts)
    port = GLOO_FIRST_PORT + setup.job + 100 * (setup.run % GLOO_PORT_RUNS)
    spec = TrainWorker(mode="gloo" if mode == SINGLE else mode, parallel=parallel,
                       model=request.model, rank=rank, world=world,
                       master=f"{setup.host_ips[0]}:{port}", ifname=host_interface(host),
                       epochs=request.epochs, max_steps=request.max_steps,
                       batch=request.batch, hidden=request.hidden, lr=request.lr,
                       momentum=request.momentum, seed=request.seed,
                       slowdown=request.host_slowdown.get(host, 1.0),
                       precision_check=request.precision_check,
                       json=report_path(setup, mode, rank))
    if mode == "ina":
        member = plan.hosts[host]
        spec = dataclasses.replace(spec, job=setup.job, switch_ip=member.switch_ip,
                                   contributor=member.contributor, window=setup.window,
                                   k=setup.k, timeout_ms=setup.timeout_ms)
    elif mode == "ring":
        spec = dataclasses.replace(spec, peers=",".join(f"{ip}:{RING_FIRST_PORT + setup.job}"
                                                        for ip in setup.host_ips))
    return spec.command(python_executable())


def run_training(fabric, mode: TrainMode, setup: JobSetup, say=progress) -> dict:
    """One mode's training on setup.hosts; its entry for results.json."""
    say(f"{mode.name} ({mode.parallel}): {len(setup.hosts)} workers on "
        f"{', '.join(setup.hosts)}")
    plan = mode.prepare(fabric.manager, setup)
    counters = SwitchCounters(fabric)
    started = time.monotonic()
    try:
        processes = launch_workers(fabric.network, mode, setup, plan)
        outcomes = wait_workers(mode, setup, processes, started + mode.request.run_timeout)
        switch = counters.difference()
    finally:
        mode.finish(fabric.manager, setup)
    say(f"{mode.name} ({mode.parallel}): done in {time.monotonic() - started:.1f} s")
    entry = summarize(mode.name, setup, outcomes)
    entry["parallel"] = mode.parallel
    entry["switch_counters"] = switch
    if "steps" in entry:
        entry["switch_counters"]["port_bytes_per_step"] = switch["port_bytes"] / entry["steps"]
    return entry


class SwitchCounters:
    """What the switches themselves counted over a run: bytes through their ports (kernel
    counters, transmitted and received: each aggregation packet is counted at every port it
    crosses) and the P4 program's aggregation events (controller.AggregationManager.status)."""

    def __init__(self, fabric):
        self.fabric = fabric
        self.interfaces = InterfaceCounters(fabric.network)
        self.ports, self.events = self.interfaces.snapshot(), self._events()

    def _events(self) -> dict:
        totals: dict = {}
        for switch in self.fabric.manager.status().values():
            for event, packets in switch["events"].items():
                totals[event] = totals.get(event, 0) + packets
        return totals

    def difference(self) -> dict:
        ports = (self.interfaces.snapshot() - self.ports).ports
        events = self._events()
        return {"port_bytes": sum(t.tx_bytes + t.rx_bytes for t in ports.values()),
                "events": {e: events[e] - self.events.get(e, 0) for e in events
                           if events[e] != self.events.get(e, 0)}}


def byte_formulas(parallel: str, mode: str, parameters: int, world: int) -> dict:
    """Per rank per step, the float32 values each collective must send (bytes, headers and
    block floating point's exponent rounds left out): DP allreduces the gradients; FSDP
    allgathers the parameters twice (forward, and again for the backward: fully_shard
    reshards after the forward) and sums the gradients into shards (contracts.jobs
    REDUCE_SCATTER).  Through the switches a rank sends all its values once per sum (the
    summing collectives) and only its own shard for a gather; a host ring
    sends (N-1)/N of them per phase, two phases for allreduce.  Keyed by torch's names of the
    collectives (their torch_name, contracts/collectives/), as the ina process group counts them."""
    p, n = 4.0 * parameters, world
    ring = (n - 1) / n
    if parallel == "fsdp":
        if mode == "ina":
            return {ALLGATHER.torch_name: 2 * p / n, REDUCE_SCATTER.torch_name: p}
        return {ALLGATHER.torch_name: 2 * ring * p, REDUCE_SCATTER.torch_name: ring * p}
    return {collectives.ALLREDUCE.torch_name: p if mode == "ina" else 2 * ring * p}


def summarize(mode: str, setup: JobSetup, outcomes: list) -> dict:
    reports = [o.report for o in outcomes]
    errors = [f"{o.host} (rank {o.rank}): {o.error}" for o in outcomes if o.error]
    entry = {"mode": mode, "workers": len(setup.hosts), "hosts": list(setup.hosts),
             "error": "; ".join(errors) or None, "reports": [report_path(setup, mode, r)
                                                           for r in range(len(setup.hosts))]}
    if errors or not all(reports):
        return entry
    steps = reports[0]["steps"]
    per_rank = [r["per_step"] for r in reports]
    seconds = max(r["seconds"] for r in reports)
    step_seconds = np.max([p["seconds"] for p in per_rank], axis=0)
    entry.update({
        "test_accuracy": reports[0]["test_accuracy"],
        "final_loss": float(np.mean([r["final_loss"] for r in reports])),
        "steps": steps, "batch": reports[0]["batch"], "seconds": seconds,
        "per_step": {
            "loss": np.mean([p["loss"] for p in per_rank], axis=0).tolist(),
            "wall": np.max([p["wall"] for p in per_rank], axis=0).tolist(),
            "seconds": step_seconds.tolist(),
            "compute_s": np.mean([p["compute_s"] for p in per_rank], axis=0).tolist(),
            "comm_s": np.mean([p["comm_s"] for p in per_rank], axis=0).tolist(),
            "tx_bytes": np.mean([p["tx_bytes"] for p in per_rank], axis=0).tolist()},
        "seconds_per_step": {
            "total": float(np.median(step_seconds)),
            "compute": float(np.median([np.median(p["compute_s"]) for p in per_rank])),
            "communication": float(np.median([np.median(p["comm_s"]) for p in per_rank]))},
        "per_rank": [{"host": host, "compute": float(np.median(p["compute_s"])),
                      "communication": float(np.median(p["comm_s"])),
                      "slowdown": r["slowdown"]}
                     for host, p, r in zip(setup.hosts, per_rank, reports)],
        "bytes_per_step": float(np.mean([np.mean(p["tx_bytes"]) for p in per_rank])),
        "allreduces": reports[0]["allreduces"],
        "fallbacks": reports[0]["fallbacks"],
        "ina": reports[0]["ina"],
    })
    entry.update(throughput(entry))
    entry.update(group_summary(mode, reports, per_rank))
    return entry


def group_summary(mode: str, reports: list, per_rank: list) -> dict:
    """For --parallel ddp|fsdp: the figures only those runs have (module docstring)."""
    first = reports[0]
    parallel = first.get("parallel", "hook")
    out = {"parallel": parallel, "model": first.get("model", "mlp"),
           "parameters": first.get("parameters"),
           "final_params_identical": len({r.get("final_param_digest") for r in reports}) == 1,
           "final_param_digest": first.get("final_param_digest"),
           "comm_busy_per_step": None, "collective_bytes_per_step": None,
           "collective_calls_per_step": None, "delegated": None}
    if parallel == "hook":
        return out
    out["byte_formulas"] = byte_formulas(parallel, mode, first["parameters"], len(reports))
    if "param_digest" in per_rank[0]:
        out["params_identical_every_step"] = all(p["param_digest"] == per_rank[0]["param_digest"]
                                                 for p in per_rank)
    busy = [p["comm_busy_s"] for p in per_rank]
    if busy[0] and busy[0][0] is not None:
        out["comm_busy_per_step"] = float(np.median([np.median(b) for b in busy]))
        names = first["per_step"]["collective_bytes"][0].keys()
        out["collective_bytes_per_step"] = {
            name: float(np.mean([np.median([b[name] for b in p["collective_bytes"]])
                                 for p in per_rank])) for name in names}
        out["collective_calls_per_step"] = {
            name: float(np.median([c[name] for c in per_rank[0]["collective_calls"]]))
            for name in names}
        out["delegated"] = first["backend"]["delegated"]
    return out


def throughput(run: dict) -> dict:
    """T_n, samples per second: n x batch over the median step time (the slowest rank's
    time per step; the median leaves out the first steps' one-off set-up, which in a short
    run would weigh on T_1 most), and over the whole loop as a second figure."""
    step = float(np.median(run["per_step"]["seconds"]))
    samples = run["workers"] * run["batch"]
    return {"samples_per_s": samples / step,
            "samples_per_s_overall": samples * run["steps"] / run["seconds"]}


def add_scale_factors(runs: list) -> None:
    """T_n / (n T_1), T_1 from the single-worker run (None without one); `throughput`."""
    single = next((r for r in runs if r["mode"] == SINGLE and "samples_per_s" in r), None)
    for run in runs:
        if "samples_per_s" in run:
            run["scale_factor"] = (run["samples_per_s"] / (run["workers"]
                                                           * single["samples_per_s"])
                                   if single else None)


def precision_checks(runs: list, request: TrainingRequest) -> list:
    """Per worker count with both ina and gloo: their losses against the derived bound."""
    from hosts.train import load_digits, split   # torch and scikit-learn: only for this check
    images = load_digits()[0][split(request.seed)[0]]
    checks = []
    for n in sorted({r["workers"] for r in runs if r["mode"] == "ina"}):
        pair = [next((r for r in runs if r["mode"] == m and r["workers"] == n
                      and not r["error"]), None) for m in ("ina", "gloo")]
        if None in pair:
            continue
        reports = [[load_json(path) for path in run["reports"]] for run in pair]
        bound = train_precision.loss_bounds(("ina", reports[0]), ("gloo", reports[1]),
                                            request.lr, images)
        loss64 = [train_precision.rank_losses(r, "loss64") for r in reports]
        difference = np.abs(loss64[0] - loss64[1])
        checks.append({"workers": n, "mode": "ina", "max_difference": float(difference.max()),
                       "bound_last_step": float(bound[-1]),
                       "within_bound": bool(np.all(difference <= bound))})
    return checks


def load_json(path: str):
    with open(path) as handle:
        return json.load(handle)


def write_results(out_dir: str, meta: dict, runs: list, checks: list = ()) -> str:
    path = os.path.join(out_dir, "results.json")
    with open(path, "w") as handle:
        json.dump({"meta": meta, "runs": runs, "precision_checks": list(checks)}, handle,
                  indent=1)
        handle.write("\n")
    return path


def format_table(runs: list) -> str:
    """The runs as a text table; a parallel column only when some run is not a hook run."""
    parallel = any(r.get("parallel", "hook") != "hook" for r in runs)
    lines = ["mode    " + ("parallel  " if parallel else "") + "n  steps  test_acc  "
             "final_loss  s/step  compute_s  comm_s  KB/step  allreduces  samples/s  scale"]
    for r in runs:
        name = f"{r['mode']:<6}" + (f"  {r.get('parallel', 'hook'):<8}" if parallel else "")
        if r["error"]:
            lines.append(f"{name} {r['workers']:>2}  FAILED: {r['error'][:80]}")
            continue
        s = r["seconds_per_step"]
        scale = "-" if r.get("scale_factor") is None else f"{r['scale_factor']:.2f}"
        lines.append(f"{name} {r['workers']:>2} {r['steps']:>6}  {r['test_accuracy']:8.3f}"
                     f"  {r['final_loss']:10.4f}  {s['total']:6.4f}  {s['compute']:9.4f}  "
                     f"{s['communication']:6.4f}  {r['bytes_per_step'] / 1e3:7.1f}  "
                     f"{r['allreduces']:>10}  {r['samples_per_s']:9.0f}  {scale:>5}")
    return "\n".join(lines)


def run_all(fabric, request: TrainingRequest, counts: list, out_dir: str, meta: dict,
            timeout_ms: float,
            say=progress, job: int = JOB) -> tuple:
    """Every worker count x mode on `fabric`; results.json rewritten after each run.  Returns
    (runs, precision checks, path of results.json); experiments.train_plot draws them."""
    for sub in ("reports", "logs"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
    host_names = [h.name for h in fabric.spec.hosts]
    runs, index = [], 0
    for n in counts:
        pairs = ([(request.parallel[0], SINGLE)] if n == 1 else
                 [(p, m) for p in request.parallel for m in request.modes])
        for parallel, mode in pairs:
            if mode == "ring" and parallel != "hook":
                say(f"ring ({parallel}): skipped, ring runs only as a DDP comm hook")
                continue
            hosts = tuple(host_names[:n])
            setup = JobSetup(job=job, hosts=hosts,
                             host_ips=tuple(fabric.spec.host(h).ip for h in hosts),
                             elements=0, dtype="float32", seed=request.seed,
                             window=request.window,
                             k=fabric.k, out_dir=out_dir, run=index, timeout_ms=timeout_ms)
            runs.append(run_training(fabric, TrainMode(mode, request, parallel), setup, say))
            index += 1
            write_results(out_dir, meta, runs)
    add_scale_factors(runs)
    checks = precision_checks(runs, request) if request.precision_check else []
    return runs, checks, write_results(out_dir, meta, runs, checks)


def failures(runs: list, checks: list) -> str:
    """One line naming the failed runs and violated bounds ("" if none)."""
    failed = [r for r in runs if r["error"]] + [c for c in checks if not c["within_bound"]]
    return "; ".join(r.get("error") or f"{r['mode']} n={r['workers']}: loss difference "
                     "exceeds the bound" for r in failed)[:300]
