"""The contributor bitmap is 64 bits wide (contracts.wire.MAX_CONTRIBUTORS): 40 workers on one
switch, with packets duplicated, reordered and late, through the real program -- a duplicate
of contributor 32..39 that the bitmap did not recognise would be added twice."""

import numpy as np

from agg_network import LossyNetwork, P4Fabric, int_inputs, p4_engines
from contracts.wire import MAX_CONTRIBUTORS


def test_forty_contributors_on_one_switch_with_duplicates_are_exact():
    assert MAX_CONTRIBUTORS == 64
    fabric = P4Fabric("star:40", job_id=5, window=2)
    assert fabric.plan.switches["s1"].fan_in == 40
    inputs = int_inputs(40, 48, seed=5)
    engines = p4_engines(fabric, inputs, window=2, max_retries=60)
    LossyNetwork(engines, fabric, seed=5, duplicate=0.3, late=0.1, reorder=True).run()
    expected = np.sum(inputs, axis=0, dtype=np.int64).tolist()
    assert all(e.result().astype(np.int64).tolist() == expected for e in engines)
    switch = fabric.switches["s1"]
    from p4src_harness import events
    assert events(switch).get(3, 0) > 0          # duplicates were seen and ignored
