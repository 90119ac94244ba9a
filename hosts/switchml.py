"""`python -m hosts switchml`: one rank of a SwitchML allreduce (contracts/designs/switchml.py).

SwitchML's worker algorithm (NSDI'21, Algorithm 1) is the one hosts/ina/engine.py runs for
ours: a fixed pool of slots, each with one chunk in flight; a slot's next chunk, into its
other copy, only once the slot's result came back; a timeout resends; float32 quantised
with a block exponent the switch agrees on (the max of the exponents the workers piggy-back
for the slot's next chunk).  So this is hosts/ina/worker.py with SwitchML's spec: packets to
UDP port 9200, where p4src/switchml/switchml.p4 aggregates them, and allreduce only; and
without what our engine adds for switch restarts (EngineConfig.redo_previous: a stalled
round re-sends the slot's previous one).  SwitchML's switch would count that packet again:
the worker's bit of the previous copy was cleared when it moved on, so the packet opens a
new aggregation there and clears the bit of the copy being collected, whose retransmission
is then added twice (tests/hosts/test_switchml_worker.py shows the wrong sum).
"""

from __future__ import annotations

from contracts.jobs import SwitchMLWorker
from hosts.ina import worker


def main(argv: list[str]) -> int:
    return worker.main(argv, spec=SwitchMLWorker)
