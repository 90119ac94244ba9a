"""Fault sweep: allreduce jobs through the real p4src program (in-process p4switch) under
packet loss, duplication, reordering and arbitrarily late delivery, in virtual time.

    .venv/bin/python tests/reliability/fault_sweep.py [--json FILE]   # prints the table

`--json FILE` also keeps every case's outcome, the largest counts over the cases and the
run's provenance (date, cores, load average, git commit) in a results file
(docs/results/reliability/fault-sweep/fault_sweep.json is the one reliability.md quotes).

Each case runs every host of the topology as a worker engine over `LossyNetwork`
(tests/hosts/agg_network.py, nothing discarded for being old), with the same fault rates on
the links between switches, and checks the result: int32
exactly equal to the int64 sum, float32 within the block floating point bound of every
element and bit-identical on all workers.  test_fault_sweep.py runs the same cases.
"""

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for path in (REPO, os.path.join(REPO, "tests", "p4src"), os.path.join(REPO, "tests", "hosts")):
    if path not in sys.path:
        sys.path.insert(0, path)

from jobs.results import now, provenance  # noqa: E402
from agg_network import LossyNetwork, P4Fabric, float_inputs, int_inputs, p4_engines  # noqa: E402
from controller.entries import DROP_REASONS, EVENTS  # noqa: E402
from hosts.ina.engine import AggregationStalled  # noqa: E402
from p4src_harness import DROP_REASON_COUNT, EVENT_COUNT, counts  # noqa: E402

# (loss, duplicate, late) probabilities per packet; reordering is on in every faulty case.
RATES = [(0.0, 0.0, 0.0), (0.05, 0.05, 0.05), (0.2, 0.2, 0.2), (0.3, 0.3, 0.5),
         (0.1, 0.6, 0.6)]
TOPOLOGIES = ["star:4", "leafspine:2,1,2", "tree:3,2"]
DTYPES = ["int32", "float32"]
ELEMENTS, WINDOW = 160, 3
# At 30-60% faults per packet and direction, one round trip fails more often than not, so
# 12 tries (the worker's default) can all fail by chance; the sweep is about exactness.
MAX_RETRIES = 60


@dataclass
class Outcome:
    topology: str
    dtype: str
    loss: float
    duplicate: float
    late: float
    exact: bool              # int32: equal to the int64 sum; float32: within the bound, same
                             # bits on every worker; False when a slot stalled
    retransmissions: int
    delivered_late: int
    stale_dropped: int       # drop_reasons[stale_contribution] + [stale_result], all switches
    duplicates: int          # agg_events[duplicate] + [result_resent], all switches


def run_case(topology, dtype, loss, duplicate, late, seed=7) -> Outcome:
    # the same faults on switch-to-switch links (partials up, results down)
    fabric = P4Fabric(topology, job_id=11, window=WINDOW,
                      link_faults=(seed + 1, loss, duplicate, late))
    make = int_inputs if dtype == "int32" else float_inputs
    inputs = make(len(fabric.hosts), ELEMENTS, seed=seed)
    engines = p4_engines(fabric, inputs, window=WINDOW, max_retries=MAX_RETRIES)
    network = LossyNetwork(engines, fabric, seed=seed, loss=loss, duplicate=duplicate,
                           late=late, reorder=loss + duplicate + late > 0)
    try:
        network.run()
        exact = _exact(engines, inputs, dtype)
    except AggregationStalled:
        exact = False           # a slot never completed: as wrong as a wrong sum
    drops, events = {}, {}
    for switch in fabric.switches.values():
        for index, packets in counts(switch, "drop_reasons", DROP_REASON_COUNT).items():
            drops[DROP_REASONS[index]] = drops.get(DROP_REASONS[index], 0) + packets
        for index, packets in counts(switch, "agg_events", EVENT_COUNT).items():
            events[EVENTS[index]] = events.get(EVENTS[index], 0) + packets
    return Outcome(topology, dtype, loss, duplicate, late, exact,
                   sum(e.stats.retransmissions for e in engines),
                   network.delivered_late + fabric.delivered_late,
                   drops.get("stale_contribution", 0) + drops.get("stale_result", 0),
                   events.get("duplicate", 0) + events.get("result_resent", 0))


def _exact(engines, inputs, dtype) -> bool:
    results = [engine.result() for engine in engines]
    if dtype == "int32":
        expected = np.sum(inputs, axis=0, dtype=np.int64)
        return all(r.astype(np.int64).tolist() == expected.tolist() for r in results)
    reference = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    return all(np.array_equal(r, results[0]) and
               np.all(np.abs(r.astype(np.float64) - reference) <= e.schedule.error_bound())
               for r, e in zip(results, engines))


def cases():
    return [(t, d, *rates) for t in TOPOLOGIES for d in DTYPES for rates in RATES]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write the outcomes to FILE")
    args = parser.parse_args(argv)
    meta = {"started": now(), "command": ["tests/reliability/fault_sweep.py"]
            + (sys.argv[1:] if argv is None else list(argv)), **provenance(),
            "elements": ELEMENTS, "window": WINDOW, "k": 8, "max_retries": MAX_RETRIES}
    print("| topology | dtype | loss | dup | late | exact | retransmissions | late deliveries "
          "| stale dropped | duplicates/resent |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    outcomes = []
    for case in cases():
        o = run_case(*case)
        outcomes.append(o)
        print(f"| {o.topology} | {o.dtype} | {o.loss} | {o.duplicate} | {o.late} | "
              f"{'yes' if o.exact else 'NO'} | {o.retransmissions} | {o.delivered_late} | "
              f"{o.stale_dropped} | {o.duplicates} |")
    failures = sum(not o.exact for o in outcomes)
    print(f"{len(outcomes)} cases, {ELEMENTS} elements, window {WINDOW}, K 8, "
          f"{failures} wrong", file=sys.stderr)
    if args.json:
        meta["finished"] = now()
        record = {"meta": meta, "cases": len(outcomes), "exact": len(outcomes) - failures,
                  "most": {name: max(getattr(o, name) for o in outcomes) for name in
                           ("retransmissions", "delivered_late", "stale_dropped",
                            "duplicates")},
                  "outcomes": [asdict(o) for o in outcomes]}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
