"""`python -m controller plan|status`: show reduction trees, or switch counters.

    plan   --topo T --workers N [--jobs M] [--window W] [--slots S]
           Plans M jobs of N workers each (job j takes hosts j*N, j*N+1, ... in spec order,
           wrapping around) and prints every job's tree.  No switch is contacted.
    status [--topo T] [--timeout S]
           Connects to every switch of T (127.0.0.1:<grpc port>; without --topo the one
           switch at 127.0.0.1:9559, device id 0) and prints its non-zero drop-reason and
           aggregation-event counters.
Errors: one line on stderr; exit 2 for bad usage or input, 1 when a switch fails.
"""

from __future__ import annotations

import os
import sys

from contracts.cli import OneLineParser, UsageError, run_command
from contracts.jobs import add_window_option
from contracts.wire import DEFAULT_SLOTS, DEFAULT_WINDOW
from topologies.spec import parse_topology

from . import AggregationManager, SwitchConnection
from .planner import PlanError, Planner


def _arguments() -> OneLineParser:
    parser = OneLineParser(prog="python -m controller")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    plan = commands.add_parser("plan", help="print the reduction tree of each job")
    plan.add_argument("--topo", required=True)
    plan.add_argument("--workers", type=int, required=True)
    plan.add_argument("--jobs", type=int, default=1)
    add_window_option(plan, DEFAULT_WINDOW)
    plan.add_argument("--slots", type=int, default=DEFAULT_SLOTS,
                      help="aggregation slots per switch (the program's AGG_SLOTS)")
    status = commands.add_parser("status", help="print switch drop/event counters")
    status.add_argument("--topo", default=None)
    status.add_argument("--timeout", type=float, default=5.0)
    return parser


def plan_command(args) -> str:
    spec = parse_topology(args.topo)
    hosts = [h.name for h in spec.hosts]
    if not 1 <= args.workers <= len(hosts):
        raise UsageError(f"--workers must be between 1 and {len(hosts)} (hosts in {args.topo})")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.slots < 1:
        raise UsageError("--slots must be at least 1")
    planner = Planner(spec, args.slots)
    texts = []
    for job in range(args.jobs):
        members = [hosts[(job * args.workers + i) % len(hosts)] for i in range(args.workers)]
        texts.append(planner.plan(job, members, args.window).to_text())
    return "\n".join(texts)


def status_command(args) -> str:
    if args.topo is None:
        targets = [("s1", "127.0.0.1:9559", 0)]
    else:
        targets = [(s.name, f"127.0.0.1:{s.grpc_port}", s.device_id)
                   for s in parse_topology(args.topo).switches]
    connections = {}
    try:
        for name, address, device_id in targets:
            connections[name] = SwitchConnection(name, address, device_id)
            connections[name].connect(args.timeout, primary=False)
            connections[name].fetch_p4info()
        lines = []
        for switch, counters in AggregationManager.read_status(connections).items():
            drops = ", ".join(f"{k}={v}" for k, v in counters["drops"].items()) or "none"
            events = ", ".join(f"{k}={v}" for k, v in counters["events"].items()) or "none"
            lines.append(f"{switch}: drops: {drops}; events: {events}")
        return "\n".join(lines)
    finally:
        for conn in connections.values():
            conn.close()


def main(argv=None) -> int:
    # A refused plan or a bad topology is bad input (2); a switch that fails is exit 1.
    return run_command(lambda: _run(argv), label="controller", usage=(PlanError, ValueError),
                       failures=(Exception,))


def _run(argv) -> int:
    args = _arguments().parse_args(argv)
    command = plan_command if args.command == "plan" else status_command
    try:
        print(command(args), flush=True)
    except BrokenPipeError:      # `plan ... | head`: the reader left; nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
