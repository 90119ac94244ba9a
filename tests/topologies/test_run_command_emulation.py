"""`python -m topologies run`: the network comes up programmed, SIGTERM stops it cleanly."""

import os
import signal
import subprocess
import sys
import time

import pytest

from topologies.net import interface_names
from topologies.spec import parse_topology
from topologies.switches import REPO, port_accepts

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def test_run_until_sigterm(tmp_path):
    stderr_path = tmp_path / "stderr"
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "topologies", "run", "--topo", "tree:2,2", "--switch",
             "builtin", "--logs", str(tmp_path / "logs")],
            cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        deadline = time.monotonic() + 120
        while "network is up" not in stderr_path.read_text():
            assert process.poll() is None, stderr_path.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        spec = parse_topology("tree:2,2")
        assert all(port_accepts(s.grpc_port) for s in spec.switches)
        process.send_signal(signal.SIGTERM)
        stdout, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr_path.read_text()
    assert "h4 10.0.0.4 02:00:0a:00:00:04 on s3 port 2" in stdout.splitlines()
    assert [n for n in interface_names(spec) if os.path.exists(f"/sys/class/net/{n}")] == []
    assert not any(port_accepts(s.grpc_port) for s in spec.switches)
    assert sorted(os.listdir(tmp_path / "logs")) == ["s1.out", "s2.out", "s3.out"]
