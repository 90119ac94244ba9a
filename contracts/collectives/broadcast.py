"""broadcast: every rank ends with the root's vector (the root is rank 0 on the host
algorithms and in compare; torch's broadcast names its own).

Host: the binomial tree's broadcast phase, chunked so that its levels pipeline
(hosts/algorithms/binomial_tree.py).  In-network: the root sends values, the others
header-only packets; every rank keeps every chunk."""

from contracts.collectives.base import ALL, AT_ROOT, Collective

BROADCAST = Collective(
    name="broadcast", torch_name="broadcast",
    summary="every rank ends with rank 0's vector",
    sums=False, contributed=AT_ROOT, held=ALL, host_phases={"binomial-tree": ("broadcast",)})
