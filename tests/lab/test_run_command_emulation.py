"""`python -m lab`: the network comes up programmed, SIGTERM stops it cleanly
(switch processes gone, no interface left behind), logs in --logs and pcaps in --pcap."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from private_netns import (command_pid, interfaces_after, private_network_command,
                           processes_mentioning)
from topologies.net import interface_names
from topologies.spec import parse_topology
from topologies.switches import REPO

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]


def test_run_until_sigterm(tmp_path):
    stderr_path = tmp_path / "stderr"
    command = [sys.executable, "-m", "lab", "--topo", "tree:2,2", "--switch",
               "builtin", "--logs", str(tmp_path / "logs"), "--pcap", str(tmp_path / "pcaps")]
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(private_network_command(command, tmp_path), cwd=REPO,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=stderr, text=True)
    try:
        deadline = time.monotonic() + 120
        while "network is up" not in stderr_path.read_text():
            assert process.poll() is None, stderr_path.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        os.kill(command_pid(tmp_path), signal.SIGTERM)
        stdout, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr_path.read_text()
    assert "h4 10.0.0.4 02:00:0a:00:00:04 on s3 port 2" in stdout.splitlines()
    assert interfaces_after(tmp_path) == ["lo"]
    assert processes_mentioning(str(tmp_path)) == []
    # each switch's output and what it really ran (p4switch run --status-file)
    assert sorted(os.listdir(tmp_path / "logs")) == sorted(
        f"s{i}.{kind}" for i in (1, 2, 3) for kind in ("out", "status.json"))
    spec = parse_topology("tree:2,2")
    switch_ports = [n for n in interface_names(spec) if n.startswith("s")]
    assert sorted(os.listdir(tmp_path / "pcaps")) == sorted(
        f"{name}_{direction}.pcap" for name in switch_ports for direction in ("in", "out"))
