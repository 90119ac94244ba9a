"""`python -m experiments sweep`: compare over lists of vector sizes and worker counts.

    sweep --topo leafspine:2,1,4 --modes ina,ring --elements 100000,200000,500000
          --workers 2,4,8 --bw 5 --repeat 3 --out DIR

Every (workers, elements) point runs every mode --repeat times on one network, started
once (experiments/compare.py does the running).  Workers are the first hosts in host order.
"""

from __future__ import annotations

from contracts.cli import OneLineParser, comma_list
from experiments.compare import Point, add_common_arguments, run_experiment


int_list = comma_list(int, minimum=1, bad="expected comma-separated integers, got {text!r}",
                      unknown="expected integers >= 1, got {text!r}")


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments sweep",
                      description="Compare allreduce modes over vector sizes and worker counts.")
    add_common_arguments(p)
    p.add_argument("--elements", type=int_list, required=True, metavar="E1,E2,...")
    p.add_argument("--workers", type=int_list, metavar="P1,P2,...",
                   help="workers per job (default: all hosts divided among the jobs)")
    return p


def sweep_points(workers, elements: list) -> list:
    """Worker counts outermost, sizes innermost, in the order given."""
    return [Point(p, e) for p in (workers or [None]) for e in elements]


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    return run_experiment(args, ["sweep"] + list(argv), sweep_points(args.workers, args.elements))
