"""reduce-scatter: rank r ends with its shard r (block_bounds) of the sum.

Host: the ring's reduce phase, its segments shifted so that rank r ends the phase with
segment r (a ring phase (reducing, offset): in step s rank r sends segment r - s + offset,
hosts/algorithms/ring.py).  In-network: every rank sends every chunk's values; the switches
give a sum's values to the chunk's owner only, the other ranks get its header."""

from contracts.collectives.base import ALL, SHARD, Collective

REDUCE_SCATTER = Collective(
    name="reduce-scatter", torch_name="reduce_scatter",
    summary="rank r ends with shard r of the sum",
    sums=True, contributed=ALL, held=SHARD, host_phases={"ring": ((True, -1),)})
