"""`python -m experiments train`: data-parallel training through the emulated network.

    python -m experiments train --topo T --modes ina,gloo[,ring] --workers N[,N...]
                                --epochs E --out DIR [--parallel hook,ddp,fsdp]
                                [--model mlp|wide] [--bw MBIT ...]

Starts the network as compare does (compile p4src, Mininet, controller, routes), then for
every worker count n (the first n hosts) and every mode runs one `python -m hosts train`
process per host (hosts/train.py: PyTorch DDP on scikit-learn's digits, a small MLP, the
same seed, initial weights and data shards in every mode; the mode is the DDP comm hook:
`ina` through the switches, `gloo`, or `ring`).  With n = 1 there is nothing to allreduce:
one run (mode `single`) trains locally and gives T_1 for every mode.

DIR/results.json has one entry per run: test accuracy, final training loss, the loss per step
(the mean over the ranks' batches, i.e. the global batch's loss), the seconds per step split
into computation and communication, bytes per step (host interface counters, mean over
hosts), the number of allreduces, the Gloo fallbacks, the throughput T_n in samples/s and
the scale factor T_n / (n T_1).  DIR/train_loss.png draws loss against step and against wall
time for every mode (at the largest n); with more than one n, DIR/scale_factor.png draws the
scale factor against n.  `--host-slowdown h3=2.0` makes h3's computation twice as slow.
`--parallel` (jobs/training.py) chooses how PyTorch reaches the network: hook (the
default: DDP with the mode's synchronous comm hook, as above), ddp (plain DDP, bucket
allreduces overlapping the backward pass) or fsdp (FSDP2 fully_shard), the last two on
`init_process_group("cpu:ina")` for ina (hosts/torch_backend.py) and Gloo for gloo; a comma
list runs every mode under each.  `--model wide` trains a 1.1M-parameter MLP on the same data.
With `--precision-check` (softmax regression, plain SGD) the losses of ina and gloo are
compared with the bound of jobs/train_precision.py, and a violation fails the run.
Exit 1 if a run failed, 2 for bad input.
"""

from __future__ import annotations

import os
import subprocess

from contracts.cli import OneLineParser, RunFailed, UsageError
from contracts.jobs import SWITCH_KINDS, add_k_option, add_window_option
from contracts.requests import DEFAULT_TCP_CC, FabricRequest, JobRequest, picked
from contracts.wire import DEFAULT_K
from experiments.compare import check_tcp_cc, now, set_tcp_cc
from experiments import train_plot
from jobs.modes import job_timeout_ms
from jobs.training import (TrainingRequest, add_training_arguments, format_table, failures,
                           progress, run_all)
from fabric import Fabric, add_fabric_arguments, requested
from topologies.impairment import longest_round_trip_ms
from topologies.switches import REPO


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments train",
                      description="PyTorch DDP training on the emulated network.")
    p.add_argument("--topo", required=True, help="star:N, leafspine:L,S,H, fattree:K, tree:D,F "
                                                 "or a topology.json file")
    p.add_argument("--out", required=True, metavar="DIR")
    add_training_arguments(p)
    add_k_option(p, DEFAULT_K)
    add_window_option(p)
    p.add_argument("--switch", choices=SWITCH_KINDS, default="auto")
    p.add_argument("--switch-backend", choices=("auto", "c", "python"), default=None)
    p.add_argument("--tcp-cc", default=DEFAULT_TCP_CC, metavar="NAME")
    add_fabric_arguments(p, cluster=False)   # links and routing
    return p


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    fabric_request = FabricRequest.from_options(args)
    # K and the window (training's own modes and worker counts are the TrainingRequest's)
    job = JobRequest.from_options(args, modes=(), workers=None)
    spec, switch_kind, _, job = requested(fabric_request, job)
    training = TrainingRequest(**picked(args, TrainingRequest, leave=("window",)),
                               window=job.window)
    host_names = [h.name for h in spec.hosts]
    counts = training.worker_counts(host_names, args.topo)
    check_tcp_cc(args.tcp_cc)
    if os.geteuid() != 0:
        raise UsageError("train needs root (Mininet network namespaces): run it with sudo")
    if args.switch_backend:
        os.environ["P4SWITCH_BACKEND"] = args.switch_backend   # the switch processes read it
    out_dir = os.path.abspath(args.out)
    meta = {"command": ["python", "-m", "experiments", "train"] + list(argv),
            "started": now(), "topo": args.topo, "switch": switch_kind,
            "link_bw_mbit": args.bw, "k": job.k, "window": job.window,
            "epochs": args.epochs, "batch": args.batch, "hidden": args.hidden, "lr": args.lr,
            "momentum": args.momentum, "seed": args.seed, "max_steps": args.max_steps,
            "parallel": ",".join(training.parallel), "model": args.model,
            "host_slowdown": training.host_slowdown, "tcp_cc": args.tcp_cc,
            "flowlet_gap_us": args.flowlet_gap_us,
            "flowlet_max_bytes": args.flowlet_max_bytes, "cpus": os.cpu_count(),
            "cores": os.cpu_count(),
            "load_average": [round(load, 2) for load in os.getloadavg()],
            "git_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                         capture_output=True, text=True).stdout.strip()
            or None}
    timeout_ms = job_timeout_ms(spec, switch_kind, job.k, max(counts), job.window, args.bw,
                                longest_round_trip_ms(spec))
    os.makedirs(os.path.join(out_dir, "logs"), exist_ok=True)
    fabric = Fabric.from_request(spec, switch_kind, fabric_request, job.k,
                                 os.path.join(out_dir, "logs"), say=progress,
                                 impair_seed=args.seed)
    with fabric:
        set_tcp_cc(fabric.network, spec, args.tcp_cc)
        runs, checks, path = run_all(fabric, training, counts, out_dir, meta, timeout_ms)
    figures = train_plot.draw(runs, out_dir, meta["cpus"], args.bw, meta)
    print(format_table(runs))
    progress(f"wrote {path} and {', '.join(figures)}")
    failed = failures(runs, checks)
    if failed:
        raise RunFailed(failed)
    return 0
