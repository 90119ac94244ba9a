"""What the fabric allows a host algorithm: its time on the same topology and link rate when
nothing but the links costs time, from the simulator (SimGrid's flows on the topology's
routes: simulation/run.py, no processing cost, no delay).

hosts/bounds.py's bound counts the busiest *host* link.  On a fabric with fewer uplinks than
hosts (leafspine:2,1,4: four hosts share one leaf's uplink) a step whose partners sit on
different leaves is slower than that, whatever the hosts do: butterfly and Rabenseifner
(farthest partner first) move their largest messages across the spine.  compare reports each
host mode against both bounds; this is the one no implementation can beat.  In-network
aggregation keeps its wire bound (each leaf sends one aggregated stream up).

Only allreduce (the simulator's one collective); None where the simulator cannot run (no
SimGrid: `make setup-all` installs it), said once in one line.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

from experiments.aggregate import HOST_ONLY_MODES, algorithm_of


def _simulated_seconds(topo: str, algorithm: str, workers: int, elements: int,
                       bw_mbit: float) -> float:
    from simulation.run import Request, run_isolated, simulate_run   # SimGrid: when asked
    outcomes, _ = run_isolated(simulate_run, Request(topo, algorithm, workers, elements,
                                                     bw_mbit))
    missing = [o for o in outcomes if o.report is None]
    if missing:
        raise RuntimeError(f"simulated {algorithm} did not finish: {missing[0].error}")
    return max(o.report["seconds"] for o in outcomes)


def fabric_bounds(say: Callable[[str], None]) -> Callable:
    """A function (point fields, mode) -> the fabric bound in seconds or None, simulating
    each (topology, algorithm, workers, elements, link rate) once."""
    problems: list = []

    @functools.lru_cache(maxsize=None)
    def simulated(topo, algorithm, workers, elements, bw_mbit) -> Optional[float]:
        if problems:
            return None
        try:
            return _simulated_seconds(topo, algorithm, workers, elements, bw_mbit)
        except Exception as e:      # no SimGrid, a topology it cannot build: said once
            problems.append(e)
            say("fabric bound not computed (the simulator: "
                + (" ".join(str(e).split()) or type(e).__name__)[:200] + ")")
            return None

    def bound(point: dict, mode: str) -> Optional[float]:
        if mode not in HOST_ONLY_MODES or not point.get("bw_mbit") \
                or (point.get("collective") or "allreduce") != "allreduce":
            return None
        return simulated(point["topo"], algorithm_of(mode), point["workers"],
                         point["elements"], point["bw_mbit"])
    return bound
