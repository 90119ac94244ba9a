"""Worker group processes (hosts/group.py through fabric.spawner.WorkerGroup): several
`python -m hosts worker` commands as threads of one process, each with its own log, report,
result and exit status, as if it ran alone.

The switch is `ReferenceSwitch`, a TEST DOUBLE served on loopback UDP (tests/hosts/
agg_network.py); the workers bind 127.0.0.(10 + rank), so no network namespace is needed
here (tests/fabric/test_worker_group_emulation.py runs them in Mininet hosts).
"""

import json
import os
import subprocess
import time

import numpy as np
import pytest

from agg_network import REPO, ReferenceSwitch, UdpSwitchBridge, worker_command
from contracts.wire import worker_port
from hosts.vectors import Reference
from fabric.spawner import WorkerGroup


@pytest.fixture
def group():
    g = WorkerGroup(cwd=REPO)
    yield g
    g.close()
    assert g.process.returncode == 0


def spawn(group, command, log_path, **kwargs):
    assert command[1:3] == ["-m", "hosts"]
    with open(log_path, "wb") as log:
        return group.spawn(None, None, "hosts", command[3:], cwd=REPO,
                           stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                           **kwargs)


def spawn_in(group, netns, mntns, log_path):
    with open(log_path, "wb") as log:
        return group.spawn(netns, mntns, "hosts", ["worker", "--job", "1", "--rank", "0",
                                                   "--world", "1", "--elements", "10",
                                                   "--seed", "1"],
                           cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


def test_workers_as_threads_of_one_group_are_exact_each_with_its_own_report(group, tmp_path):
    job, world = 6000 + os.getpid() % 20000, 4
    switch = UdpSwitchBridge(ReferenceSwitch(job_id=job, fan_in=world, window=4, k=16), world,
                             worker_port(job), drop_every=7)
    switch.start()
    try:
        processes = [spawn(group, worker_command(job, rank, world, switch.address,
                                                 "--elements", "1000", "--seed", "11",
                                                 "--json", str(tmp_path / f"r{rank}.json"),
                                                 "--output", str(tmp_path / f"r{rank}.npy")),
                           tmp_path / f"r{rank}.log")
                     for rank in range(world)]
        codes = [p.wait(timeout=120) for p in processes]
    finally:
        switch.stop()
    logs = [(tmp_path / f"r{rank}.log").read_text() for rank in range(world)]
    assert codes == [0] * world, logs
    assert len({p.pid for p in processes} | {group.process.pid}) == world + 1   # thread ids
    reference = Reference.from_seed(11, world, 1000, np.dtype("int32"))
    for rank in range(world):
        report = json.loads((tmp_path / f"r{rank}.json").read_text())
        assert (report["job"], report["rank"], report["correct"]) == (job, rank, True)
        assert report["packets_sent"] == report["retransmissions"] + report["redone_rounds"] + 63 + 4
        assert np.load(tmp_path / f"r{rank}.npy").tolist() == reference.total.tolist()
        assert all(" rounds (" in line for line in logs[rank].splitlines()), logs[rank]
    assert sum(json.loads((tmp_path / f"r{r}.json").read_text())["retransmissions"]
               for r in range(world)) > 0
    assert group.running() == 0


def test_usage_errors_and_refusals_end_one_thread_with_one_line(group, tmp_path):
    bad = spawn(group, worker_command(1, 5, 2, ("127.0.0.1", 9), "--elements", "10",
                                      "--seed", "1"), tmp_path / "bad.log")
    train = spawn(group, ["python", "-m", "hosts", "train"], tmp_path / "train.log")
    elsewhere = spawn(group, worker_command(1, 0, 1, ("127.0.0.1", 9), "--elements", "10",
                                            "--seed", "1"), tmp_path / "elsewhere.log",
                      env={"X": "1"})
    mount = spawn_in(group, "/proc/self/ns/net", "/proc/self/ns/mnt", tmp_path / "mount.log")
    assert (bad.wait(30), train.wait(30), elsewhere.wait(30), mount.wait(30)) == (2, 2, 2, 2)
    assert (tmp_path / "bad.log").read_text() == "error: --rank 5 must be below --world 2\n"
    assert (tmp_path / "train.log").read_text() == (
        "error: a worker group runs `python -m hosts worker|allreduce` only, not hosts train\n")
    assert (tmp_path / "elsewhere.log").read_text() == (
        "error: a worker group cannot give a command its own environment\n")
    assert (tmp_path / "mount.log").read_text() == (
        "error: a worker group cannot join a mount namespace (setns(2) refuses it to a "
        "process with several threads)\n")


def test_a_killed_worker_is_reported_ended_and_the_group_still_closes(group, tmp_path):
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    waiting = spawn(group, worker_command(1, 0, 1, ("127.0.0.1", 9), "--elements", "10",
                                          "--seed", "1", "--start-barrier", str(barrier)),
                    tmp_path / "w.log")
    deadline = time.monotonic() + 10
    while not (barrier / "ready-0").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (barrier / "ready-0").exists() and waiting.poll() is None
    assert group.running() == 1
    waiting.kill()
    assert waiting.wait(5) == -9 and group.running() == 0


def test_commands_run_on_one_thread_are_each_reported_ended_under_their_own_request():
    """Thread ids are reused (the kernel's pid_max can be 32768): a group that reported ends
    by thread id took a new rank whose thread had an old rank's id for one already ended,
    and never reported its end.  Two commands run on this same thread here."""
    import socket
    from hosts.group import EXIT_USAGE, Group
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        group = Group(theirs)
        for request_id in (7, 8):
            fds = [os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY)]
            group.run({"id": request_id, "module": "hosts", "args": ["nonesuch"]},
                      fds + [fds[1]])
        ours.settimeout(5)
        lines = b""
        while lines.count(b"\n") < 4:
            lines += ours.recv(4096)
        answers = [json.loads(line) for line in lines.splitlines()]
        assert [a.get("ended", a.get("id")) for a in answers] == [7, 7, 8, 8]
        assert [a["code"] for a in answers if "ended" in a] == [EXIT_USAGE, EXIT_USAGE]
        assert answers[0]["pid"] == answers[2]["pid"]          # the same thread id
    finally:
        ours.close()
        theirs.close()
