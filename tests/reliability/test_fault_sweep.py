"""Every fault-sweep case (fault_sweep.py) gives the exact result through the real p4src
program; the faulty cases really exercise late delivery and stale packets."""

import pytest

from fault_sweep import cases, run_case


@pytest.mark.parametrize("topology, dtype, loss, duplicate, late", cases())
def test_result_is_exact_under_faults(topology, dtype, loss, duplicate, late):
    outcome = run_case(topology, dtype, loss, duplicate, late)
    assert outcome.exact
    if late > 0:
        assert outcome.delivered_late > 0
    if late >= 0.6:
        assert outcome.stale_dropped > 0
    if loss + duplicate + late == 0:
        assert (outcome.retransmissions, outcome.stale_dropped, outcome.duplicates) == (0, 0, 0)
