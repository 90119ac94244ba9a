"""SwitchML's workers (our engine with redo_previous off: hosts/switchml.py) through SwitchML's
switch (p4src/switchml/switchml.p4 in the in-process p4switch, installed by the controller)
over a lossy network in virtual time (tests/hosts/agg_network.py): exact sums at every loss
rate.  With our restart re-sends left on, the same network gives wrong sums: the reason
SwitchML's worker has them off.  And what SwitchML's algorithm cannot survive (its paper
assumes neither): a contribution duplicated, or delivered after its worker moved on."""

import numpy as np
import pytest

from agg_network import LossyNetwork, P4Fabric, int_inputs, p4_engines
from hosts.ina.engine import AggregationStalled

WINDOW, CHUNKS = 4, 6


def run(seed, redo_previous, **faults):
    fabric = P4Fabric("star:3", job_id=3, window=WINDOW, design="switchml")
    inputs = int_inputs(3, fabric.k * WINDOW * CHUNKS, seed)
    engines = p4_engines(fabric, inputs, WINDOW, max_retries=40, redo_previous=redo_previous)
    LossyNetwork(engines, fabric, seed=seed, **faults).run()
    expected = np.sum(inputs, axis=0, dtype=np.int64).astype(np.int32)
    return engines, [np.array_equal(e.result(), expected) for e in engines]


@pytest.mark.parametrize("loss", [0.0, 0.05, 0.2])
@pytest.mark.parametrize("seed", [1, 2])
def test_switchml_workers_get_exact_sums_through_loss(seed, loss):
    engines, exact = run(seed, redo_previous=False, loss=loss)
    assert all(exact)
    assert all(e.stats.redone_rounds == 0 for e in engines)
    if loss:
        assert sum(e.stats.retransmissions for e in engines) > 0


def test_our_restart_resends_would_make_switchml_sums_wrong():
    """The re-sent previous round is first-seen in its copy (the worker's bit was cleared
    when it moved on): it opens a new aggregation there and clears the worker's bit of the
    copy being collected, so that copy adds the worker's retransmission twice."""
    outcomes = [run(seed, redo_previous=True, loss=0.2) for seed in (1, 2, 3)]
    assert any(e.stats.redone_rounds for engines, _ in outcomes for e in engines)
    assert not all(all(exact) for _, exact in outcomes)


def test_a_late_contribution_stalls_switchml_where_ours_stays_exact():
    """A contribution held back until its worker has moved on lands in a copy whose bit for
    it is clear: SwitchML counts it into the copy's next aggregation, which then never
    completes (or completes wrong); our switch knows the round from its chunk offset and
    drops it (p4src/agg_slot_state.p4)."""
    outcomes = []
    for seed in (2, 5):
        try:
            outcomes.append(all(run(seed, redo_previous=False, late=0.1)[1]))
        except AggregationStalled:
            outcomes.append(False)
    assert outcomes == [False, False]
    for seed in (2, 5):
        fabric = P4Fabric("star:3", job_id=3, window=WINDOW)
        inputs = int_inputs(3, fabric.k * WINDOW * CHUNKS, seed)
        engines = p4_engines(fabric, inputs, WINDOW, max_retries=40)
        LossyNetwork(engines, fabric, seed=seed, late=0.1).run()
        expected = np.sum(inputs, axis=0, dtype=np.int64).astype(np.int32)
        assert all(np.array_equal(e.result(), expected) for e in engines)
