"""`python -m experiments.smpi_crosscheck`: the simulated host-only algorithms against
SimGrid's SMPI (simulation/smpi.py: the platform as SimGrid XML, our MPI program, smpirun).

    python -m experiments.smpi_crosscheck --topo T [--topo T2 ...] --workers N --elements E
                                          --bw MBIT --out FILE.json

Runs every pair of SMPI_PAIRS on every topology, both in SMPI and in the simulator
(experiments/simulated.py), prints a line per pair and writes both times and their ratio,
divided by the header ratio, to FILE.json (docs/scaling.md, "Cross-check against SimGrid's
SMPI").  Exit 1 when smpicc or smpirun is missing or a run fails, 2 for bad input.
"""

from __future__ import annotations

import json
import sys

from contracts.cli import OneLineParser, positive_float, positive_int, run_command
from experiments.simulated import simulate
from jobs import results
from simulation.run import Request, spec_for
from simulation.smpi import HEADER_RATIO, SMPI_CONFIG, SMPI_PAIRS, SmpiMissing, run_allreduce


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m experiments.smpi_crosscheck",
                      description="The simulated host-only algorithms against SMPI's.")
    p.add_argument("--topo", action="append", required=True, help="repeat for more")
    p.add_argument("--workers", type=positive_int, required=True)
    p.add_argument("--elements", type=positive_int, required=True)
    p.add_argument("--bw", type=positive_float, required=True, metavar="MBIT")
    p.add_argument("--out", required=True, metavar="FILE")
    return p


def main(argv: list) -> int:
    args = build_parser().parse_args(argv)
    meta = {"command": ["python", "-m", "experiments.smpi_crosscheck"] + list(argv),
            "started": results.now(), **results.provenance(),
            "smpi_config": list(SMPI_CONFIG), "header_ratio": HEADER_RATIO}
    rows = []
    for topo in args.topo:
        spec = spec_for(Request(topo, "ring", args.workers, args.elements, args.bw))
        hosts = [h.name for h in spec.hosts][:args.workers]
        for algorithm, smpi_algorithm in SMPI_PAIRS.items():
            smpi_s = run_allreduce(spec, hosts, args.elements, smpi_algorithm)
            run, _ = simulate(Request(topo, algorithm, args.workers, args.elements, args.bw))
            rows.append({"topo": topo, "workers": args.workers, "elements": args.elements,
                         "bw_mbit": args.bw, "algorithm": algorithm,
                         "smpi": list(smpi_algorithm), "simulated_s": run.seconds,
                         "smpi_s": smpi_s,
                         "ratio_over_headers": run.seconds / smpi_s / HEADER_RATIO})
            print(f"{topo} {algorithm}: simulated {run.seconds:.6f} s, SMPI "
                  f"{' '.join(smpi_algorithm)} {smpi_s:.6f} s, ratio / {HEADER_RATIO:.4f} = "
                  f"{rows[-1]['ratio_over_headers']:.5f}", flush=True)
    meta["finished"] = results.now()
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(run_command(lambda: main(sys.argv[1:]), failures=(SmpiMissing, RuntimeError)))
