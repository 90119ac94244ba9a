"""allreduce: every rank ends with the sum of all ranks' vectors.

Every host algorithm runs it (its own schedule); in-network, every rank sends every chunk and
gets every sum back: the rounds carry no flags."""

from contracts.collectives.base import ALL, WHOLE, Collective

ALLREDUCE = Collective(
    name="allreduce", torch_name="allreduce",
    summary="every rank ends with the sum of all vectors",
    sums=True, contributed=ALL, held=ALL, host_phases=WHOLE)
