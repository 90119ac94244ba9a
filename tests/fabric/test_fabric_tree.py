"""Allreduce through a three-level tree (tree:3,2: 7 switches, 8 hosts), emulated end to
end: every switch of the topology aggregates, partial sums climb two levels of switches
before the root multicasts the result back down (see fabric_env)."""

import os

import pytest

from fabric_env import assert_exact, int32_inputs, isolated_spec, node_names, run_jobs, \
    running_fabric

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def test_tree3_allreduce_through_three_levels_exact(tmp_path):
    spec = isolated_spec("tree:3,2")
    with running_fabric(spec, str(tmp_path / "net")) as fabric:
        hosts = [h.name for h in spec.hosts]
        inputs = int32_inputs(hosts, 3000, seed=51, low=-2 ** 27, high=2 ** 27)
        plans, runs = run_jobs(fabric, {1: inputs}, str(tmp_path / "run"), window=8)
        plan = plans[1]
        root, = node_names(fabric, "s1")
        assert plan.root == root
        assert set(plan.switches) == {s.name for s in spec.switches}
        assert [sw.fan_in for sw in plan.switches.values()] == [2] * 7
        # depth: a host's switch -> its parent -> the root
        leaf_switch = plan.switches[plan.hosts[hosts[0]].switch]
        assert plan.switches[leaf_switch.parent].parent == root
        assert_exact(runs[1], inputs)
