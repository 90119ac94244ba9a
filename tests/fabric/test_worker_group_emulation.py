"""Workers as threads of worker group processes (hosts/group.py) in Mininet hosts: each
thread joins its host's network namespace, so the workers of one group bind the same UDP
port each in their own host, and every result is exact.

leafspine:2,1,4 (8 hosts) with groups of 3 workers: three group processes, one of them
partly filled; everything they made is gone after the network stops.
"""

import os

import pytest

from fabric_env import assert_exact, int32_inputs, isolated_spec, run_jobs, running_fabric

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def test_grouped_workers_in_their_hosts_namespaces_are_exact(tmp_path):
    spec = isolated_spec("leafspine:2,1,4")
    with running_fabric(spec, str(tmp_path / "net")) as fabric:
        network = fabric.network
        network.spawner.worker_group_size = 3
        hosts = [h.name for h in spec.hosts]
        inputs = int32_inputs(hosts, 3000, seed=5, low=-2 ** 28, high=2 ** 28)
        plans, runs = run_jobs(fabric, {1: inputs}, str(tmp_path / "run"))
        assert_exact(runs[1], inputs)
        groups = list(network.spawner.worker_groups)
        assert len(groups) == 3
        group_pids = [g.process.pid for g in groups]
        # every worker ran as a thread of a group, not as a process of its own
        assert len(network._processes) == len(hosts)
        assert all(p._zygote in groups for p in network._processes)
        host_netns = {os.readlink(f"/proc/{network.host(h).pid}/ns/net") for h in hosts}
        assert len(host_netns) == len(hosts)
    assert network.spawner.worker_groups == []
    assert not any(os.path.exists(f"/proc/{pid}") for pid in group_pids)

