"""Allreduce through a k=4 fat tree (20 switches, 16 hosts), emulated end to end: the
reduction tree goes edge -> aggregation -> core and the sum is exact (see fabric_env)."""

import os

import pytest

from fabric_env import assert_exact, int32_inputs, isolated_spec, node_names, run_jobs, \
    running_fabric

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def test_fattree4_allreduce_through_core_exact(tmp_path):
    """fattree:4 (20 switches, 16 hosts); workers on both edges of every pod, so the tree
    goes edge -> aggregation -> core."""
    spec = isolated_spec("fattree:4")
    with running_fabric(spec, str(tmp_path / "net")) as fabric:
        hosts = node_names(fabric, "h1", "h3", "h5", "h7", "h9", "h11", "h13", "h15")
        inputs = int32_inputs(hosts, 5000, seed=41, low=-2 ** 27, high=2 ** 27)
        plans, runs = run_jobs(fabric, {1: inputs}, str(tmp_path / "run"))
        cores = {s.name for s in spec.switches[:4]}
        plan = plans[1]
        assert plan.root in cores
        assert len(plan.switches) == 1 + 4 + 8      # core, an aggregation switch per pod, edges
        assert_exact(runs[1], inputs)
