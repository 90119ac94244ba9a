"""Allreduce through reduction trees over a leaf-spine fabric, emulated end to end.

Builtin p4switch processes in a Mininet network (renamed nodes, see fabric_env), the
controller's AggregationManager installing the trees, `python -m hosts worker` processes in
the hosts with int32 inputs written by the test; every result is compared with the sum the
test computes itself.  A two-level tree, two concurrent jobs sharing switches, capacity
refusals (API, `controller plan` and `experiments compare`).
"""

import os
import re
import subprocess
import sys

import pytest

from fabric_env import (assert_exact, int32_inputs, isolated_spec, node_names, run_jobs,
                        running_fabric)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

AGG_SLOTS = 1024      # p4src's default slots per switch, shared by all jobs
JOB_TABLES = ("agg_jobs", "agg_members", "agg_result_addresses")


@pytest.fixture(scope="module")
def leafspine(tmp_path_factory):
    """leafspine:2,2,4 -- leaves s1, s2 (hosts h1-h4, h5-h8), spines s3, s4."""
    spec = isolated_spec("leafspine:2,2,4")
    with running_fabric(spec, str(tmp_path_factory.mktemp("leafspine"))) as fabric:
        yield fabric      # running_fabric checks that nothing is left behind


def test_leafspine_allreduce_two_level_tree_exact(leafspine, tmp_path):
    hosts = node_names(leafspine, "h1", "h2", "h5", "h6")        # two per leaf
    inputs = int32_inputs(hosts, 3000, seed=11, low=-2 ** 28, high=2 ** 28)
    plans, runs = run_jobs(leafspine, {1: inputs}, str(tmp_path))
    plan = plans[1]
    leaf1, leaf2, spine1, spine2 = node_names(leafspine, "s1", "s2", "s3", "s4")
    # the tree: a spine at the root, both leaves below it, the hosts below their leaves
    assert plan.root in (spine1, spine2)
    assert set(plan.switches) == {plan.root, leaf1, leaf2}
    assert [c.node for c in plan.switches[plan.root].children] == [leaf1, leaf2]
    assert {plan.hosts[h].switch for h in hosts} == {leaf1, leaf2}
    assert_exact(runs[1], inputs)


def test_two_concurrent_jobs_exact_without_cross_talk(leafspine, tmp_path):
    """Job 1 on h1, h2, h5, h6 and job 2 on h3, h4, h7, h8: both trees use both leaves,
    at the same time.  Job 2's values are offset by 10^6, so any value of the other job
    added into a slot would show in the sums."""
    job1 = int32_inputs(node_names(leafspine, "h1", "h2", "h5", "h6"), 4000, seed=21)
    job2 = {h: v + 1_000_000 for h, v in
            int32_inputs(node_names(leafspine, "h3", "h4", "h7", "h8"), 4000, seed=22).items()}
    plans, runs = run_jobs(leafspine, {1: job1, 2: job2}, str(tmp_path))
    shared = set(plans[1].switches) & set(plans[2].switches)
    leaf1, leaf2 = node_names(leafspine, "s1", "s2")
    assert {leaf1, leaf2} <= shared
    for switch in shared:    # disjoint slot ranges on every switch both trees use
        a, b = plans[1].switches[switch], plans[2].switches[switch]
        assert (a.slot_base + a.slot_count <= b.slot_base
                or b.slot_base + b.slot_count <= a.slot_base)
    assert_exact(runs[1], job1)
    assert_exact(runs[2], job2)
    # the two jobs ran at the same time: every worker started before any worker finished
    workers = runs[1] + runs[2]
    assert max(w.started for w in workers) < min(w.finished for w in workers)


def job_tables(fabric) -> dict:
    """Every switch's job entries (jobs, members, result addresses), comparable."""
    return {name: sorted(str(e) for table in JOB_TABLES for e in conn.read_table(table))
            for name, conn in fabric.connections.items()}


def test_job_refused_for_capacity_installs_nothing(leafspine, tmp_path):
    from controller import PlanError
    manager = leafspine.manager
    leaf1, leaf2 = node_names(leafspine, "s1", "s2")
    before = job_tables(leafspine)
    big = manager.start_job(3, node_names(leafspine, "h1", "h5"), AGG_SLOTS - 24)
    try:
        with_big = job_tables(leafspine)
        assert with_big != before
        with pytest.raises(PlanError) as refused:
            manager.start_job(4, node_names(leafspine, "h2", "h6"), 100)
        assert re.fullmatch(f"switch ({leaf1}|{leaf2}): job 4 needs 100 slots but only 24 "
                            f"contiguous of {AGG_SLOTS} are free", str(refused.value))
        with pytest.raises(PlanError) as too_big:
            manager.start_job(5, node_names(leafspine, "h3", "h4"), AGG_SLOTS + 1)
        assert "\n" not in str(too_big.value) and str(AGG_SLOTS + 1) in str(too_big.value)
        assert sorted(manager.jobs()) == [3]
        assert job_tables(leafspine) == with_big
    finally:
        manager.stop_job(big.job_id)
    assert job_tables(leafspine) == before
    # the freed slots serve a job of that size again
    inputs = int32_inputs(node_names(leafspine, "h2", "h6"), 640, seed=31)
    _, runs = run_jobs(leafspine, {4: inputs}, str(tmp_path), window=100)
    assert_exact(runs[4], inputs)


def test_controller_plan_refuses_over_capacity_with_exit_2():
    result = subprocess.run(
        [sys.executable, "-m", "controller", "plan", "--topo", "leafspine:2,2,4",
         "--workers", "8", "--jobs", "2", "--window", "600"],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "controller: switch s1: job 1 needs 600 slots but only 424 contiguous of 1024 are free"]


def test_compare_refuses_second_job_for_capacity_with_exit_2(tmp_path):
    """Two jobs on one switch whose windows together exceed its slots, with --fallback none:
    the second is refused before any worker starts; exit 2 with the planner's message on one
    line (tests/experiments/test_fallback_emulation.py covers the default, a host fallback)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))
    from private_netns import interfaces_after, private_network_command
    command = [sys.executable, "-m", "experiments", "compare", "--topo", "star:4", "--jobs", "2",
               "--window", "600", "--modes", "ina", "--elements", "1000", "--switch", "builtin",
               "--fallback", "none", "--out", str(tmp_path / "out")]
    # in its own network namespace: no other network on the machine can clash with it
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=300)
    assert interfaces_after(tmp_path) == ["lo"]
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.splitlines()[-1] == (
        "error: job 2: switch s1: job 2 needs 600 slots but only 424 contiguous of 1024 "
        "are free")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "reports").exists() or \
        not list((tmp_path / "out" / "reports").iterdir())
