"""topologies/zygote.py without namespaces: commands forked from the zygote run as
`python -m` would (arguments, directory, streams, exit status), and the Popen-like object
waits, times out and kills as subprocess does."""

import json
import os
import signal
import subprocess
import sys

import pytest

from topologies.switches import REPO
from topologies.zygote import Zygote


@pytest.fixture
def zygote():
    z = Zygote(["json.tool"], python=sys.executable, cwd=REPO)
    yield z
    z.close()
    assert z.process.returncode == 0


def test_a_forked_command_gets_its_arguments_directory_and_streams(zygote, tmp_path):
    (tmp_path / "in.json").write_text('{"b": 1, "a": [1, 2]}')
    with open(tmp_path / "log", "wb") as log:
        process = zygote.spawn(None, None, "json.tool", ["--sort-keys", "in.json"],
                               cwd=str(tmp_path), stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT)
    assert process.wait(timeout=30) == 0 and process.returncode == 0
    assert json.loads((tmp_path / "log").read_text()) == {"a": [1, 2], "b": 1}
    assert process.pid != zygote.process.pid


def test_exit_status_of_a_failing_command(zygote, tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with open(tmp_path / "log", "wb") as log:
        process = zygote.spawn(None, None, "json.tool", ["bad.json"], cwd=str(tmp_path),
                               stdout=log, stderr=subprocess.STDOUT)
        assert process.wait(timeout=30) == 1
    assert "Expecting property name" in (tmp_path / "log").read_text()


def test_wait_times_out_and_kill_gives_minus_the_signal(zygote, tmp_path):
    with open(tmp_path / "log", "wb") as log:
        process = zygote.spawn(None, None, "timeit", ["-n", "1", "import time; time.sleep(60)"],
                               stdout=log, stderr=subprocess.STDOUT)
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.5)
    assert process.poll() is None
    process.kill()
    assert process.wait(timeout=30) == -signal.SIGKILL


class ReusedPidZygote(Zygote):
    """Zygote's launcher side against tests/topologies/reused_pid_zygote.py."""

    def _server_command(self, fd, modules):
        return ["reused_pid_zygote", str(fd)]


def test_a_new_command_with_the_pid_of_one_that_ended_is_still_running():
    """At fattree:16 the kernel gave ps's ranks the thread ids of ranks of the previous mode
    (pid_max 32768); exits reported by pid made them look ended before they began."""
    zygote = ReusedPidZygote([], python=sys.executable, cwd=os.path.dirname(__file__))
    try:
        first = zygote.spawn(None, None, "hosts", ["end"])
        assert first.wait(timeout=10) == 3
        second = zygote.spawn(None, None, "hosts", ["run"])
        assert second.pid == first.pid == 4242
        assert second.poll() is None and zygote.running() == 1
        with pytest.raises(subprocess.TimeoutExpired):
            second.wait(timeout=0.3)
    finally:
        zygote.close()
