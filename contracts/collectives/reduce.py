"""reduce: rank 0 (the root) ends with the sum of all vectors; the other ranks hold nothing.

Host: the binomial tree's reduce phase, whole vectors up the tree to rank 0
(hosts/algorithms/binomial_tree.py).  In-network: every rank sends every chunk's values; the
root owns every chunk, so the switches give the sums' values to the root only and the other
ranks get the headers that move their windows on (FLAG_TO_OWNER, as a shard's owner gets its
sums in REDUCE_SCATTER)."""

from contracts.collectives.base import ALL, AT_ROOT, Collective

REDUCE = Collective(
    name="reduce", torch_name="reduce",
    summary="rank 0 ends with the sum of all vectors",
    sums=True, contributed=ALL, held=AT_ROOT, host_phases={"binomial-tree": ("reduce",)})
