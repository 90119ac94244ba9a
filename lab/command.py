"""`python -m lab --topo T [--switch builtin|bmv2|auto] [--cli [--script FILE]]`: start a
network, program it through the controller (pipeline + routes) and keep it up until Ctrl-C,
or open the lab CLI (lab.cli: Mininet's CLI plus allreduce, ring, tree, slots, counters, jobs).
Switch output and traces go to logs/, per-port pcaps to pcaps/.  A switch process that dies is
restarted and reprogrammed (topologies/supervisor.py) unless --no-restart.  Errors are one line
on stderr (exit 2 bad input, 1 setup failure, 130 interrupted)."""

from __future__ import annotations

import os
import signal
import sys
import threading

from contracts.cli import OneLineParser, UsageError, run_command
from contracts.jobs import SWITCH_KINDS, add_k_option, add_window_option
from contracts.requests import FabricRequest, JobRequest
from fabric import SETUP_ERRORS, Fabric, add_fabric_arguments, requested
from lab.cli import LabCLI


def build_parser() -> OneLineParser:
    run = OneLineParser(prog="python -m lab", description="start a programmed network and keep it up, "
                                               "or open the lab CLI on it")
    run.add_argument("--topo", required=True)
    run.add_argument("--switch", choices=SWITCH_KINDS, default="auto")
    run.add_argument("--cli", action="store_true", help="open the lab CLI (Mininet's CLI plus "
                                                        "allreduce, tree, slots, ...)")
    run.add_argument("--script", metavar="FILE",
                     help="with --cli: run the CLI commands in FILE, then stop")
    add_k_option(run)
    add_window_option(run, what=" for CLI allreduce/install")
    run.add_argument("--logs", default="logs",
                     help="switch output (<sw>.out, traces <sw>.log) and CLI worker logs")
    run.add_argument("--switch-logs", action="store_true", help="per-switch packet traces")
    run.add_argument("--pcap", metavar="DIR", default="pcaps",
                     help="write per-port pcaps into DIR (default pcaps)")
    run.add_argument("--no-pcap", dest="pcap", action="store_const", const=None,
                     help="no pcaps")
    run.add_argument("--no-restart", dest="restart", action="store_false",
                     help="leave a switch process that dies down (default: the network "
                          "restarts it and the controller reprograms it)")
    run.add_argument("--impair-seed", type=int, metavar="S",
                     help="seed of the built-in switches' impairment random streams")
    add_fabric_arguments(run)   # links, routing, --cluster and its options
    return run


def wait_for_interrupt() -> None:
    try:
        threading.Event().wait()
    except KeyboardInterrupt:   # Ctrl-C, or SIGTERM through contracts.cli.run_command
        pass


def exit_on_sigterm() -> None:
    def handler(signum, frame):
        raise SystemExit(143)
    signal.signal(signal.SIGTERM, handler)


def run(args) -> int:
    request = FabricRequest.from_options(args)
    spec, kind, cluster, job = requested(request, JobRequest.from_options(args))
    if args.script and not args.cli:
        raise UsageError("--script needs --cli")
    if args.script and not os.path.isfile(args.script):
        raise UsageError(f"--script: no such file {args.script}")
    if os.geteuid() != 0:
        raise UsageError("python -m lab needs root (Mininet network namespaces): use sudo")
    with Fabric.from_request(spec, kind, request, job.k, args.logs, pcap_dir=args.pcap,
                             impair_seed=args.impair_seed, cluster=cluster) as fabric:
        print(fabric.describe(), flush=True)
        if args.cli:
            exit_on_sigterm()     # Mininet's CLI takes KeyboardInterrupt as "cancel command"
            LabCLI(fabric, os.path.join(args.logs, "workers"), window=job.window,
                   script=args.script)
        else:
            print("network is up; Ctrl-C stops it", file=sys.stderr, flush=True)
            wait_for_interrupt()
    return 0


def main(argv: list) -> int:
    return run_command(lambda: run(build_parser().parse_args(argv)), failures=SETUP_ERRORS)
