"""The in-network collectives beyond allreduce (contracts/jobs.py COLLECTIVES; docs/protocol.md,
"Collectives"): how a vector is laid out on chunks, and what every round of a rank sends and
keeps.

The switch only ever sums whole chunks (K values) and multicasts the sum.  The collectives
differ in two header flags (contracts/wire.py) per round:

* REDUCE_SCATTER: every rank sends every chunk with its values and FLAG_TO_OWNER, `owner` =
  the rank whose shard holds the chunk; the switches give the values only to the owner,
  every other rank gets the header alone (its window moves on) and keeps nothing;
* allgather: a chunk's owner sends its values, every other rank a header-only packet
  (FLAG_NO_VALUES: K zeros to the switch); every rank keeps every chunk;
* broadcast: the root sends values, the others header-only packets; every rank keeps all.

Closing rounds (hosts/ina/engine.py) carry nothing: header only both ways (FLAG_NO_VALUES and
FLAG_TO_OWNER with NO_OWNER, an owner no switch has a port towards).

Shards are the host algorithms' (hosts/algorithms/base.block_bounds, hosts/allreduce.shard): rank
j owns elements [b_j, b_j+1), so results and bytes compare with the ring's.  A chunk must
not straddle two shards (it has one owner), so the engine's vector is the shards one after
the other, each padded with zeros to whole chunks: shard j takes chunks [c_j, c_j+1) with
c_j+1 - c_j = ceil((b_j+1 - b_j) / K).  The padding is at most K-1 elements per shard.

float32: REDUCE_SCATTER sums, so it uses the block floating point schedule (with its error
bound); allgather and broadcast only copy, so their float32 values travel as their int32 bit
patterns (the switch adds zeros to one rank's values, which leaves any bits unchanged) and
arrive exact.
"""

from __future__ import annotations

import numpy as np

from contracts.jobs import ALLGATHER, COLLECTIVES, REDUCE_SCATTER
from contracts.wire import FLAG_NO_VALUES, FLAG_TO_OWNER, NO_OWNER
from hosts.algorithms.base import block_bounds


def check_collective(collective: str) -> None:
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r} (choose from "
                         f"{', '.join(COLLECTIVES)})")


class ShardLayout:
    """The host algorithms' shards of `elements` over `world` ranks, each padded to whole
    chunks of `k` (module docstring)."""

    def __init__(self, elements: int, world: int, k: int):
        self.elements, self.world, self.k = elements, world, k
        self.element_bounds = block_bounds(elements, world)
        sizes = np.diff(self.element_bounds)
        self.chunk_bounds = np.concatenate([[0], np.cumsum(-(-sizes // k))]).astype(np.int64)
        self.padded_elements = int(self.chunk_bounds[-1]) * k
        starts = np.repeat(self.chunk_bounds[:-1] * k - self.element_bounds[:-1], sizes)
        self.positions = np.arange(elements, dtype=np.int64) + starts   # element -> padded

    def spread(self, data: np.ndarray) -> np.ndarray:
        padded = np.zeros(self.padded_elements, dtype=data.dtype)
        padded[self.positions] = data
        return padded

    def gather(self, padded: np.ndarray) -> np.ndarray:
        return padded[self.positions]

    def shard(self, rank: int, padded: np.ndarray) -> np.ndarray:
        start = int(self.chunk_bounds[rank]) * self.k
        size = int(self.element_bounds[rank + 1] - self.element_bounds[rank])
        return padded[start:start + size]


def engine_input(collective: str, data: np.ndarray, world: int, k: int):
    """(vector the engine aggregates, its shard chunk bounds for EngineConfig.shard_chunks)."""
    check_collective(collective)
    if collective in ("allreduce", "broadcast"):
        vector, bounds = data, ()
    else:
        layout = ShardLayout(len(data), world, k)
        vector, bounds = layout.spread(data), tuple(int(c) for c in layout.chunk_bounds)
    if collective in ("allgather", "broadcast") and vector.dtype == np.float32:
        vector = vector.view(np.int32)            # copied, never summed: bits travel exact
    return vector, bounds


def collective_result(collective: str, engine_result: np.ndarray, rank: int, world: int,
                      elements: int, k: int, dtype) -> np.ndarray:
    """The collective's result of this rank from the engine's (padded) result."""
    check_collective(collective)
    result = engine_result
    if collective in ("allgather", "broadcast") and dtype == np.float32:
        result = result.view(np.float32)
    if collective in ("allreduce", "broadcast"):
        return result
    layout = ShardLayout(elements, world, k)
    if collective == REDUCE_SCATTER:
        return layout.shard(rank, result)
    return layout.gather(result)


def round_flags(collective: str, rank: int, root: int, shard_chunks, round_blocks: np.ndarray,
                closing: np.ndarray):
    """Per round: (flags uint8, owner uint16, keep uint8), or None for allreduce (flags 0,
    every result kept: the engines' behaviour before collectives).  `round_blocks[q]` is the
    chunk whose values round q carries (-1: none, e.g. a float exponent-only round);
    `closing[q]` says round q is a closing round; keep = the result's values are stored."""
    check_collective(collective)
    if collective == "allreduce":
        return None
    has = round_blocks >= 0
    if collective in (REDUCE_SCATTER, ALLGATHER):
        bounds = np.asarray(shard_chunks, dtype=np.int64)
        if len(bounds) < 2:
            raise ValueError(f"{collective} needs the shards' chunk bounds (shard_chunks)")
        owner = np.searchsorted(bounds, round_blocks, side="right") - 1
        owner = np.where(has, owner, NO_OWNER)
    else:
        owner = np.zeros(len(round_blocks), dtype=np.int64)
    if collective == REDUCE_SCATTER:
        flags = np.where(has, FLAG_TO_OWNER, FLAG_TO_OWNER | FLAG_NO_VALUES)
        keep = has & (owner == rank)
    else:
        sends = (owner == rank) if collective == "allgather" else np.full(len(has), rank == root)
        flags = np.where(has & sends, 0, FLAG_NO_VALUES)
        owner = np.zeros(len(has), dtype=np.int64)
        keep = has
    flags = np.where(closing, FLAG_TO_OWNER | FLAG_NO_VALUES, flags)
    owner = np.where(closing, NO_OWNER, owner)
    keep = np.where(closing, False, keep)
    return (flags.astype(np.uint8), owner.astype(np.uint16), keep.astype(np.uint8))
