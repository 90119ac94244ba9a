"""The in-network aggregation designs, one file each, and their registry.

Each file holds one `Design` (base.py says what it names and who finds its parts).  A new
design is a new file here plus its line in REGISTRY, and its part in each layer's table
(docs/design.md, "Designs: one plug-in each").  `get` turns a name into its object.
"""

from __future__ import annotations

from contracts.designs.base import Design
from contracts.designs.ina import INA
from contracts.designs.switchml import SWITCHML  # noqa: F401 (designs.SWITCHML)
from contracts.designs.atp import ATP  # noqa: F401 (designs.ATP)

# in the order commands, tables and figures list them
REGISTRY = {d.name: d for d in (INA, SWITCHML, ATP)}
NAMES = tuple(REGISTRY)


def get(design) -> Design:
    """The design named `design` (a Design is returned as it is); ValueError (one line)
    for an unknown name."""
    if isinstance(design, Design):
        return design
    if design not in REGISTRY:
        raise ValueError(f"unknown design {design!r} (choose from {', '.join(NAMES)})")
    return REGISTRY[design]


def is_design(mode: str) -> bool:
    """Whether the mode `mode` aggregates in the switches (a design, not a host algorithm
    or Gloo)."""
    return mode in REGISTRY
