"""The host-only allreduce algorithms, one file each, and their registry.

Each algorithm's file holds its schedule and its cost, and nothing else:

* `schedule(rank, world, elements, chunk_elements) -> list` of base.Send / base.Recv: what
  rank does, in order (world >= 2 and elements >= 1; empty operations are dropped by the
  caller);
* `elements_moved(rank, world, elements) -> (sent, received)`: exact element counts;
* `steps(world) -> int`: the communication steps (the latency term);
* `link_share(world) -> float`: the busiest link's bytes in units of the vector;
* `FORMULA`: that link-rate bound as text (E elements, B the link rate).

REGISTRY maps each algorithm's name to its module, in the order of ALGORITHMS (the order
compare, aggregate, the simulator and the tests list them in): the names are the job
contract's (contracts/jobs.py HOST_ALGORITHMS).  A new algorithm is a new file here plus
its name in HOST_ALGORITHMS (docs/design.md, "Adding a seventh host algorithm").
hosts/schedules.py runs the schedules (collective_schedule, simulate) and hosts/bounds.py
dispatches the costs; both go through `module(name)`.

What may be imported here: numpy, the standard library, contracts and this package's own
base.py and sibling algorithm files: no sockets, no transport, no other hosts module, so that the
simulator and the tests can load the schedules cheaply.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from contracts.jobs import HOST_ALGORITHMS

# contracts/jobs.py HOST_ALGORITHMS names them; each one's file is its name with
# underscores ("binomial-tree": binomial_tree.py).
REGISTRY = {name: f"hosts.algorithms.{name.replace('-', '_')}" for name in HOST_ALGORITHMS}
ALGORITHMS = tuple(REGISTRY)
RABENSEIFNERS = ("rabenseifner", "rabenseifner-nearest")     # the two partner orders


def module(algorithm: str) -> ModuleType:
    """The file of `algorithm`; ValueError (one line) for a name not in REGISTRY."""
    if algorithm not in REGISTRY:
        raise ValueError(f"unknown algorithm {algorithm!r} (choose from "
                         f"{', '.join(ALGORITHMS)})")
    return importlib.import_module(REGISTRY[algorithm])
