"""The in-network collectives (contracts/collectives/; docs/protocol.md, "Collectives"): how
a vector is laid out on chunks, what every round of a rank sends and keeps, and its bytes.

The switch only ever sums whole chunks (K values) and multicasts the sum.  The collectives
differ in two header flags (contracts/wire.py) per round, which follow from the two parts a
collective names (contracts/collectives/base.py): what a rank contributes and what it holds.

* A rank sends the values of the chunks it contributes, and a header-only packet
  (FLAG_NO_VALUES: K zeros to the switch) for the others: allgather's owner its shard,
  broadcast's root everything.
* A collective whose ranks hold less than the whole result (a shard of the sum, the sum at
  the root) sends with FLAG_TO_OWNER, `owner` = the rank that holds the chunk: the switches
  give the values only to the owner, every other rank gets the header alone (its window
  moves on) and keeps nothing.  The others keep every chunk.
* allreduce contributes and holds everything: its rounds carry no flags (`round_flags` is
  None), the engines' behaviour before the other collectives.

Closing rounds (hosts/ina/engine.py) carry nothing: header only both ways (FLAG_NO_VALUES and
FLAG_TO_OWNER with NO_OWNER, an owner no switch has a port towards).

Shards are the host algorithms' (contracts/collectives/base.block_bounds): rank j owns
elements [b_j, b_j+1), so results and bytes compare with the ring's.  A chunk must not
straddle two shards (it has one owner), so a sharded collective's engine vector is the
shards one after the other, each padded with zeros to whole chunks: shard j takes chunks
[c_j, c_j+1) with c_j+1 - c_j = ceil((b_j+1 - b_j) / K).  The padding is at most K-1
elements per shard.

float32: the summing collectives use the block floating point schedule (with its error
bound); the copies' float32 values travel as their int32 bit patterns (the switch adds zeros
to one rank's values, which leaves any bits unchanged) and arrive exact.
"""

from __future__ import annotations

import numpy as np

from contracts import collectives
from contracts.collectives.base import ALL, AT_ROOT, ROOT, SHARD, block_bounds
from contracts.jobs import DEFAULT_DTYPE
from contracts.wire import FLAG_NO_VALUES, FLAG_TO_OWNER, HEADER_LEN, NO_OWNER, VALUE_BYTES


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


def engine_input(collective, data: np.ndarray, world: int, k: int):
    """(vector the engine aggregates, its shard chunk bounds for EngineConfig.shard_chunks)."""
    collective = collectives.get(collective)
    vector, bounds = data, ()
    if collective.sharded:
        layout = ShardLayout(len(data), world, k)
        vector, bounds = layout.spread(data), tuple(int(c) for c in layout.chunk_bounds)
    if not collective.sums and vector.dtype == np.float32:
        vector = vector.view(np.int32)            # copied, never summed: bits travel exact
    return vector, bounds


def collective_part(collective, engine_array: np.ndarray, rank: int, world: int,
                    elements: int, k: int, root: int = ROOT) -> np.ndarray:
    """The part of an engine-laid-out array (its result, its error bound) that this rank
    holds, in element order."""
    collective = collectives.get(collective)
    if collective.held == SHARD:                 # its own shard only: no whole gather
        return ShardLayout(elements, world, k).shard(rank, engine_array)
    whole = ShardLayout(elements, world, k).gather(engine_array) if collective.sharded \
        else engine_array
    start, stop = collective.holds(rank, world, elements, root)
    return whole[start:stop]


def collective_result(collective, engine_result: np.ndarray, rank: int, world: int,
                      elements: int, k: int, dtype, root: int = ROOT) -> np.ndarray:
    """The collective's result of this rank from the engine's (padded) result."""
    collective = collectives.get(collective)
    result = engine_result
    if not collective.sums and dtype == np.float32:
        result = result.view(np.float32)
    return collective_part(collective, result, rank, world, elements, k, root)


def chunk_owners(collective, blocks: np.ndarray, shard_chunks, root: int) -> np.ndarray:
    """The owner of each chunk in `blocks`: the rank whose shard holds it (shard_chunks: the
    shards' chunk bounds), the root, or 0 where a collective has no owners."""
    if collective.sharded:
        bounds = np.asarray(shard_chunks, dtype=np.int64)
        if len(bounds) < 2:
            raise ValueError(f"{collective.name} needs the shards' chunk bounds (shard_chunks)")
        return np.searchsorted(bounds, blocks, side="right") - 1
    return np.full(len(blocks), root if collective.held == AT_ROOT else 0, dtype=np.int64)


def sends_values(collective, rank: int, root: int, owners: np.ndarray) -> np.ndarray:
    """Per chunk: this rank contributes its values (else a header-only packet)."""
    if collective.contributed == ALL:
        return np.ones(len(owners), dtype=bool)
    if collective.contributed == SHARD:
        return owners == rank
    return np.full(len(owners), rank == root)       # AT_ROOT


def round_flags(collective, rank: int, root: int, shard_chunks, round_blocks: np.ndarray,
                closing: np.ndarray):
    """Per round: (flags uint8, owner uint16, keep uint8), or None for a plain collective
    (allreduce: flags 0, every result kept).  `round_blocks[q]` is the chunk whose values
    round q carries (-1: none, e.g. a float exponent-only round); `closing[q]` says round q
    is a closing round; keep = the result's values are stored."""
    collective = collectives.get(collective)
    if collective.plain:
        return None
    has = round_blocks >= 0
    owner = np.where(has, chunk_owners(collective, round_blocks, shard_chunks, root), NO_OWNER)
    sends = has & sends_values(collective, rank, root, owner)
    flags = np.where(sends, 0, FLAG_NO_VALUES)
    if collective.to_owner:
        flags = flags | FLAG_TO_OWNER
        keep = has & (owner == rank)
    else:
        owner = np.zeros(len(has), dtype=np.int64)
        keep = has
    flags = np.where(closing, FLAG_TO_OWNER | FLAG_NO_VALUES, flags)
    owner = np.where(closing, NO_OWNER, owner)
    keep = np.where(closing, False, keep)
    return (flags.astype(np.uint8), owner.astype(np.uint16), keep.astype(np.uint8))


def ina_traffic(collective, rank: int, world: int, elements: int, k: int, window: int,
                dtype: str = DEFAULT_DTYPE, root: int = ROOT) -> tuple[int, int]:
    """(bytes sent, bytes received) of `rank` without loss (hosts/bounds.py's table;
    retransmissions come on top): per chunk a full packet where the rank sends (receives)
    values, a header otherwise, plus one closing round per slot used and, for float32 sums,
    one exponent-only round per slot, full both ways in a plain collective, headers in the
    others."""
    collective = collectives.get(collective)
    full, header = HEADER_LEN + VALUE_BYTES * k, HEADER_LEN
    shard_chunks = ()
    if collective.sharded:
        shard_chunks = ShardLayout(elements, world, k).chunk_bounds
        chunks = int(shard_chunks[-1])
    else:
        chunks = -(-elements // k)
    owners = chunk_owners(collective, np.arange(chunks), shard_chunks, root)
    sent = int(np.count_nonzero(sends_values(collective, rank, root, owners)))
    received = int(np.count_nonzero(owners == rank)) if collective.to_owner else chunks
    extra = min(window, chunks) * (2 if collective.sums and dtype == "float32" else 1)
    extra_bytes = extra * (full if collective.plain else header)
    return (sent * full + (chunks - sent) * header + extra_bytes,
            received * full + (chunks - received) * header + extra_bytes)
