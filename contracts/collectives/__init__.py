"""The collectives, one file each, and their registry.

Each file holds one `Collective` (base.py says what it describes and who asks it).  A new
collective is a new file here plus its line in REGISTRY (docs/design.md, "Adding a
collective").  `get` turns a name (the command lines', the results files') into its object.
"""

from __future__ import annotations

from contracts.collectives.allgather import ALLGATHER
from contracts.collectives.allreduce import ALLREDUCE
from contracts.collectives.base import Collective
from contracts.collectives.broadcast import BROADCAST
from contracts.collectives.reduce import REDUCE
from contracts.collectives.reduce_scatter import REDUCE_SCATTER

# in the order commands, tables and figures list them
REGISTRY = {c.name: c for c in (ALLREDUCE, REDUCE_SCATTER, ALLGATHER, BROADCAST, REDUCE)}
NAMES = tuple(REGISTRY)


def get(collective) -> Collective:
    """The collective named `collective` (a Collective is returned as it is); ValueError
    (one line) for an unknown name."""
    if isinstance(collective, Collective):
        return collective
    if collective not in REGISTRY:
        raise ValueError(f"unknown collective {collective!r} (choose from {', '.join(NAMES)})")
    return REGISTRY[collective]
