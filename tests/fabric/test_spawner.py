"""fabric/spawner.py, which a Network is handed to start the hosts' commands: which command
goes to a worker group thread, which to a zygote child, which back to the network (None),
and that close() ends what it started.  The "host" is this process's own namespaces (root
may join them), so no Mininet network is needed."""

import os
import subprocess

import pytest

from fabric.spawner import WORKER_GROUP_FROM_HOSTS, WORKERS_PER_GROUP, HostsSpawner, WorkerGroup
from topologies.switches import REPO, python_executable
from topologies.zygote import Zygote

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (setns)")


class ThisHost:
    """What the spawner reads of a Mininet host: its pid (for /proc/PID/ns/...)."""
    pid = os.getpid()


def hosts_command(*args):
    return [python_executable(), "-m", "hosts", *args]


def run(spawner, args, log_path, **options):
    with open(log_path, "wb") as log:
        return spawner.spawn(ThisHost(), args, cwd=REPO, stdin=subprocess.DEVNULL,
                             stdout=log, stderr=subprocess.STDOUT, **options)


def test_group_size_defaults_by_the_number_of_hosts():
    assert HostsSpawner(WORKER_GROUP_FROM_HOSTS).worker_group_size == WORKERS_PER_GROUP
    assert HostsSpawner(WORKER_GROUP_FROM_HOSTS - 1).worker_group_size == 0
    assert HostsSpawner(4, worker_group_size=3).worker_group_size == 3


def test_worker_commands_run_in_groups_other_hosts_commands_in_the_zygote(tmp_path):
    spawner = HostsSpawner(4, fork_workers=True, worker_group_size=2)
    try:
        # a bad option: the command ends at once with the usage status, wherever it runs
        grouped = [run(spawner, hosts_command("worker", "--no-such-option"),
                       tmp_path / f"w{i}.log") for i in range(3)]
        forked = run(spawner, hosts_command("--help"), tmp_path / "help.log")
        assert [p.wait(timeout=60) for p in grouped] == [2, 2, 2]
        assert forked.wait(timeout=60) == 0
        assert all(isinstance(p._zygote, WorkerGroup) for p in grouped)
        assert type(forked._zygote) is Zygote and forked._zygote is spawner.zygote
        assert len(spawner.worker_groups) >= 1
        assert "error: python -m hosts worker: " in (tmp_path / "w0.log").read_text()
        assert "worker" in (tmp_path / "help.log").read_text()
        # not the hosts package, or a pipe the zygote cannot pass: the network starts it
        assert spawner.spawn(ThisHost(), [python_executable(), "-m", "json.tool"]) is None
        assert spawner.spawn(ThisHost(), hosts_command("worker"),
                             stdout=subprocess.PIPE) is None
        started = [g.process for g in spawner.worker_groups] + [spawner.zygote.process]
    finally:
        spawner.close()
    assert spawner.worker_groups == [] and spawner.zygote is None
    assert all(p.returncode is not None for p in started)


def test_without_groups_or_forking_the_network_starts_every_command():
    spawner = HostsSpawner(4)
    assert spawner.spawn(ThisHost(), hosts_command("worker", "--job", "1")) is None
    assert spawner.spawn(ThisHost(), hosts_command("allreduce")) is None
    spawner.close()
