"""allgather: every rank ends with every rank's own shard (block_bounds), in rank order.

Host: the ring's gather phase, starting from each rank's own segment (a ring phase
(reducing, offset), hosts/algorithms/ring.py).  In-network: a chunk's owner sends its
values, every other rank a header-only packet; the switches add zeros to the owner's values
and every rank keeps every chunk."""

from contracts.collectives.base import ALL, SHARD, Collective

ALLGATHER = Collective(
    name="allgather", torch_name="allgather",
    summary="every rank ends with every rank's shard, in rank order",
    sums=False, contributed=SHARD, held=ALL, host_phases={"ring": ((False, 0),)})
