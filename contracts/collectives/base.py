"""What a collective is: one object that every layer asks instead of branching on a name.

A `Collective` is a description, with no behaviour of its own beyond arithmetic on ranges.
Each collective is one file of this package holding one instance; the registry
(__init__.py) lists them.  Who reads which field:

* hosts/vectors.py (the reference result): `sums`, `contributes`, `holds`;
* hosts/schedules.py and hosts/bounds.py (the host algorithms): `host_phases`, the phases of
  an algorithm that make the collective (None: every algorithm, as its allreduce);
* hosts/ina/ina_collectives.py (the in-network rounds and bytes): `sums` and what the two
  parts imply: `sharded`, `to_owner`, `plain`;
* jobs, experiments, the lab and torch: `name`, `torch_name`, `summary`, `fills_header_only`.

The shards every collective and algorithm agree on are `block_bounds(E, N)`: rank j's
segment is [b_j, b_j+1), sizes differing by at most one element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional

import numpy as np

# the parts of a vector a rank contributes or holds
ALL, SHARD, AT_ROOT = "all", "shard", "root"
WHOLE = None            # host_phases: every host algorithm, its own allreduce schedule
ROOT = 0                # the root of the rooted collectives' host schedules (binomial tree)


def block_bounds(elements: int, blocks: int) -> np.ndarray:
    """Bounds of `blocks` near-equal parts (sizes differ by at most one element)."""
    return np.linspace(0, elements, blocks + 1).astype(np.int64)


def shard_bounds(rank: int, world: int, elements: int) -> tuple[int, int]:
    """Rank `rank`'s segment [start, stop) of a vector of `elements` over `world` ranks."""
    bounds = block_bounds(elements, world)
    return int(bounds[rank]), int(bounds[rank + 1])


def _range(part: str, rank: int, world: int, elements: int, root: int) -> tuple[int, int]:
    if part == ALL:
        return 0, elements
    if part == SHARD:
        return shard_bounds(rank, world, elements)
    return (0, elements) if rank == root else (0, 0)        # AT_ROOT


@dataclass(frozen=True)
class Collective:
    """One collective.  `contributed` and `held` name the part of its input a rank puts in
    and the part of the result it ends with: ALL, SHARD (its block_bounds segment) or
    AT_ROOT (all at the root, nothing elsewhere)."""
    name: str                   # ours: --collective, results, tables
    torch_name: str             # torch.distributed's ProcessGroup method, and its statistics
    summary: str                # one line: what each rank ends with
    sums: bool                  # the result adds the inputs (else it copies them: exact)
    contributed: str
    held: str
    # host algorithm -> its phases that make this collective (each algorithm's file says
    # what its phases are); WHOLE: every algorithm runs it as its allreduce
    host_phases: Optional[Mapping[str, tuple]]

    def contributes(self, rank: int, world: int, elements: int,
                    root: int = ROOT) -> tuple[int, int]:
        """[start, stop) of rank's input that goes into the result."""
        return _range(self.contributed, rank, world, elements, root)

    def holds(self, rank: int, world: int, elements: int, root: int = ROOT) -> tuple[int, int]:
        """[start, stop) of the whole result that rank ends with."""
        return _range(self.held, rank, world, elements, root)

    def expected_copy(self, inputs: Callable[[int], np.ndarray], world: int,
                      elements: int, root: int = ROOT) -> np.ndarray:
        """The whole result of a copying collective: each rank's contribution in its place
        (the contributions do not overlap); inputs(rank) is rank's input vector."""
        if self.sums:
            raise ValueError(f"{self.name} sums: its result is the sum of the inputs")
        whole = None
        for r in range(world):
            start, stop = self.contributes(r, world, elements, root)
            if stop > start:             # one input at a time: 1,024 ranks' would not fit
                vector = inputs(r)
                if whole is None:
                    whole = np.zeros(elements, dtype=vector.dtype)
                whole[start:stop] = vector[start:stop]
        return whole if whole is not None else inputs(root)[:0]

    # In-network (hosts/ina/ina_collectives.py), all from the two parts: a rank sends the
    # values of the chunks it contributes (a header-only packet, K zeros, for the others);
    # a result goes back with its values to the ranks that hold it only (FLAG_TO_OWNER);
    # a chunk's owner is the rank whose shard it is, or the root.
    @property
    def sharded(self) -> bool:
        """Laid out shard by shard on whole chunks, so that a chunk has one owner."""
        return SHARD in (self.contributed, self.held)

    @property
    def to_owner(self) -> bool:
        return self.held != ALL

    @property
    def plain(self) -> bool:
        """Every rank sends every chunk's values and gets every result: the rounds carry no
        flags (the engines' behaviour before the other collectives)."""
        return self.contributed == ALL and self.held == ALL

    @property
    def fills_header_only(self) -> bool:
        """The switches may turn a header-only contribution into a result with values: the
        packet grows by 4K bytes (bmv2 grows one by at most 512)."""
        return self.contributed != ALL and self.held == ALL

    def host_algorithms(self, every: tuple) -> tuple:
        """The host algorithms that run this collective, of `every` one there is."""
        return every if self.host_phases is WHOLE else tuple(self.host_phases)

    def phases(self, algorithm: str):
        """The phases of `algorithm` that make this collective (WHOLE: its allreduce);
        ValueError (one line) when it has none."""
        if self.host_phases is WHOLE:
            return WHOLE
        if algorithm not in self.host_phases:
            raise ValueError(f"{algorithm} is not supported for the collective {self.name} "
                             f"(supported: {', '.join(self.host_phases)})")
        return self.host_phases[algorithm]
