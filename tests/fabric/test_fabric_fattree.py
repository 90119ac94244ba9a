"""Allreduce through a k=4 fat tree (20 switches, 16 hosts), emulated end to end: the
reduction tree goes edge -> aggregation -> core and the sum is exact (see fabric_env)."""

import os

import pytest

from fabric_env import assert_exact, int32_inputs, isolated_spec, node_names, run_jobs, \
    running_fabric, switch_processes

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


def test_fattree4_in_switch_groups_is_programmed_and_exact(tmp_path):
    """The same fat tree with its switches 8 to a process (p4switch group), as scale runs
    group them: the network names each switch's process, the controller programs them
    (round-robin over the processes) and a job over the core is exact."""
    spec = isolated_spec("fattree:4")
    names = [s.name for s in spec.switches]
    with running_fabric(spec, str(tmp_path / "net"), switches_per_process=8) as fabric:
        processes = fabric.network.switch_processes()
        assert processes == {name: names[i // 8 * 8] for i, name in enumerate(names)}
        pids = switch_processes(fabric)
        assert len(set(pids.values())) == 3
        assert all((pids[a] == pids[b]) == (processes[a] == processes[b])
                   for a in names for b in names)
        hosts = node_names(fabric, "h1", "h6", "h11", "h16")
        inputs = int32_inputs(hosts, 3000, seed=43, low=-2 ** 27, high=2 ** 27)
        plans, runs = run_jobs(fabric, {1: inputs}, str(tmp_path / "run"))
        assert plans[1].root in names[:4]
        assert_exact(runs[1], inputs)
