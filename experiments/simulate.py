"""`python -m experiments simulate`: allreduce modes on a simulated network (SimGrid), for
worker counts the emulator cannot start on one machine.

    simulate --topo fattree:K|leafspine:L,S,H|star:N|tree:D,F --workers N
             --modes ina,ring,...|ina,hosts --elements E[,E2...] --bw MBIT [--loss PCT]
             [--delay MS]
             [--k K] [--window W] [--train N] [--engine cpp|python] [--seed S]
             [--host-us US] [--switch-us US] [--processing none|emulated]
             [--repeat R] --out DIR

Each mode runs once per repetition (a loss pattern changes with the repetition's seed) in a
child process (simulation/run.py), by the C++ actors (simulation/cpp_engine.py, the default)
or the Python ones (--engine python: the reference, 10 to 1,000 times slower);
DIR/results.json has the shape `compare` writes
(`experiments plot DIR` draws it, `experiments table DIR` lists it), with "switch":
"simgrid", and meta.simulation: per run the train, wall-clock seconds, switch events.
Processing time is not modelled unless asked: --host-us is a host's CPU per frame it sends
(an ina packet or a TCP frame), --switch-us a switch's CPU per aggregation packet it
receives and per TCP frame it forwards (cpp_engine.Costs); --processing emulated sets both
to what the emulator's own CPU accounting measured (EMULATED_COSTS_US, docs/scaling.md).

At every size where ina and host-only modes ran, the table that ends the run and
DIR/baseline.json set ina against the fastest host mode there (experiments/baseline.py),
not the ring alone; `--modes hosts` stands for every host-only algorithm.
Exit 1 if a run did not finish correctly, 2 for bad input.
"""

from __future__ import annotations

import argparse

from contracts.cli import (DEFAULT_MODES, OneLineParser, UsageError, comma_list, positive_float,
                          positive_int)
from jobs import results
from experiments import aggregate, baseline
from jobs.runner import progress
from contracts import designs
from contracts.jobs import add_k_option, add_window_option
from contracts.requests import k_refusal
from contracts.wire import DEFAULT_K, DEFAULT_WINDOW
from experiments.simulated import run_requests
from simulation.run import SIM_MODES, Request, spec_for, unsupported_impairments
from hosts.schedules import ALGORITHMS

ALL_HOSTS = "hosts"           # --modes alias: every host-only algorithm
# (host, switch) µs per frame measured by the emulator's CPU accounting: star:4 unshaped, C
# switch and C engines, 1,000,000 int32, K=256 (docs/results/star4/2026-11-27-int32): ina's
# workers 0.093 CPU s over 4 x 3,939 packets sent (5.9 µs each, their results' receipt
# included), the switch 0.100 CPU s over 15,756 packets in (6.35 µs); the ring's workers
# 6.2 µs per 1514-byte frame.
EMULATED_COSTS_US = {"host": 5.9, "switch": 6.35}


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise_type(f"expected a number, got {text!r}")
    if not value >= 0:
        raise_type(f"must be >= 0, got {text}")
    return value


def percent(text: str) -> float:
    value = non_negative_float(text)
    if value >= 100:
        raise_type(f"must be below 100, got {text}")
    return value


def raise_type(message: str):
    raise argparse.ArgumentTypeError(message)


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments simulate",
                      description="Allreduce modes on a simulated network (SimGrid).")
    p.add_argument("--topo", required=True, help="fattree:K, leafspine:L,S,H, star:N, tree:D,F")
    p.add_argument("--workers", type=positive_int, required=True,
                   help="workers of the job: the first N hosts")
    p.add_argument("--modes", default=DEFAULT_MODES,
                   help=f"comma list of {', '.join(SIM_MODES)}, or {ALL_HOSTS} for every "
                        f"host-only one")
    p.add_argument("--elements", type=element_counts, required=True, metavar="E[,E2...]",
                   help="int32 elements per worker; a comma list runs every size")
    p.add_argument("--bw", type=positive_float, required=True, metavar="MBIT",
                   help="every link's rate, Mbit/s")
    p.add_argument("--delay", type=non_negative_float, default=0.0, metavar="MS",
                   help="every link's delay, ms")
    p.add_argument("--loss", type=percent, default=0.0, metavar="PCT",
                   help="every link's frame loss, percent, each direction (ina only)")
    add_k_option(p, DEFAULT_K)
    add_window_option(p, DEFAULT_WINDOW)
    p.add_argument("--train", type=positive_int, default=None,
                   help="packets per simulated ina message (default 1: packet level); a "
                        "train is stored and forwarded whole, so only link-bound settings "
                        "keep their times (simulation/run.py choose_train)")
    p.add_argument("--engine", choices=("cpp", "python"), default="cpp",
                   help="the actors: C++ on SimGrid's S4U API (simulation/simcore.cpp, the "
                        "default) or the Python reference actors (simulation/ina.py, "
                        "host_algorithms.py); the same model, the same times")
    p.add_argument("--host-us", type=non_negative_float, default=None, metavar="US",
                   help="a host's CPU per frame it sends, µs (default 0, or --processing's)")
    p.add_argument("--switch-us", type=non_negative_float, default=None, metavar="US",
                   help="a switch's CPU per aggregation packet it receives and per TCP "
                        "frame it forwards, µs (default 0, or --processing's)")
    p.add_argument("--processing", choices=("none", "emulated"), default="none",
                   help="emulated: --host-us %(host)s --switch-us %(switch)s, the emulator's "
                        "measured costs" % EMULATED_COSTS_US)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeat", type=positive_int, default=1)
    p.add_argument("--out", required=True, metavar="DIR")
    return p


def element_counts(text: str) -> list:
    return list(dict.fromkeys(positive_int(part.strip()) for part in text.split(",")))


def parse_sim_modes(text: str) -> list:
    runs = f" (the simulator runs {', '.join(SIM_MODES)}; gloo is not simulated)"
    return comma_list(choices=SIM_MODES, expand={ALL_HOSTS: ALGORITHMS}, error=UsageError,
                      bad="--modes: unknown mode {first!r}" + runs,
                      empty="--modes: empty" + runs)(text)


def costs_us(args) -> tuple[float, float]:
    """(host, switch) µs per frame: --host-us and --switch-us over --processing's."""
    preset = EMULATED_COSTS_US if args.processing == "emulated" else {"host": 0.0,
                                                                        "switch": 0.0}
    return (preset["host"] if args.host_us is None else args.host_us,
            preset["switch"] if args.switch_us is None else args.switch_us)


def check_request(args, modes: list) -> None:
    """Everything a run would refuse, refused before any runs (one line)."""
    if args.engine == "python" and any(costs_us(args)):
        raise UsageError("processing costs (--host-us, --switch-us, --processing) are "
                         "simulated by the C++ actors only (--engine cpp)")
    if k_refusal(args.k):
        raise UsageError(k_refusal(args.k))
    if args.loss and any(not designs.is_design(mode) for mode in modes):
        raise UsageError("--loss is simulated for ina only (TCP's loss recovery is not "
                         "modelled): leave the host-only modes out")
    if args.train and args.loss:
        raise UsageError("--train with --loss: loss is simulated per packet (train 1) only")
    if args.train and args.train > args.window:
        raise UsageError(f"--train {args.train} is larger than the window ({args.window})")
    try:
        spec = spec_for(Request(args.topo, "ina", args.workers, args.elements[0], args.bw,
                                delay_ms=args.delay, loss_pct=args.loss))
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.workers > len(spec.hosts):
        raise UsageError(f"--workers {args.workers}: {args.topo} has {len(spec.hosts)} hosts")
    if unsupported_impairments(spec):
        raise UsageError("the simulation does not model "
                         + ", ".join(unsupported_impairments(spec)) + " on links")


def requests(args, modes: list) -> list:
    return [Request(args.topo, mode, args.workers, elements, args.bw, k=args.k,
                    window=args.window, delay_ms=args.delay, loss_pct=args.loss,
                    train=1 if args.loss else args.train, seed=args.seed + repeat,
                    repeat=repeat, engine=args.engine, host_us=costs_us(args)[0],
                    switch_us=costs_us(args)[1])
            for elements in args.elements for repeat in range(args.repeat) for mode in modes]


def metadata(args, command: list) -> dict:
    return {"command": ["python", "-m", "experiments"] + command, "simulator":
            "SimGrid (CM02 network model, no cross-traffic): "
            + ("simulation/simcore.cpp" if args.engine == "cpp" else "simulation/network.py"),
            "started": results.now(),
            "topo": args.topo, "switch": "simgrid", "jobs": 1, "k": args.k,
            "window": args.window, "seed": args.seed, "repeat": args.repeat,
            "engine": args.engine,
            "processing_us": dict(zip(("host_per_frame", "switch_per_packet"), costs_us(args))),
            "link": {"bw_mbit": args.bw, "delay_ms": args.delay, "loss_pct": args.loss},
            **results.provenance()}


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    modes = parse_sim_modes(args.modes)
    check_request(args, modes)
    meta = metadata(args, ["simulate"] + list(argv))
    runs = run_requests(requests(args, modes), args.out, meta)
    status = aggregate.write_and_report(args.out, runs, meta, progress)
    baseline.report(args.out, runs, meta, progress)
    return status
