"""A star:2 network with the builtin switch, programmed by the controller: hosts ping each
other through p4src's /32 routes, and stopping the network leaves nothing behind.

Driven through `python -m lab --cli --script` in a private network namespace
(private_netns.py), so another network running on this machine does not get in the way.
"""

import os
import shutil
import subprocess
import sys

import pytest

from private_netns import interfaces_after, private_network_command, processes_mentioning
from topologies.switches import REPO, python_executable

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]


def probe(host: str, address: str, count: int = 3, timeout: int = 5) -> str:
    """A CLI line running our ICMP probe in a host (no ping binary needed)."""
    python = os.path.relpath(python_executable(), REPO)
    return f"{host} {python} -m topologies.probe {address} --count {count} --timeout {timeout}"


def test_star2_ping_and_cleanup(tmp_path):
    script = tmp_path / "session"
    script.write_text("\n".join([probe("h1", "10.0.0.2"), probe("h2", "10.0.0.1"),
                                 # an address no host has: no route, and no ARP entry either
                                 probe("h1", "10.0.0.3", count=1, timeout=1)]) + "\n")
    command = [sys.executable, "-m", "lab", "--topo", "star:2", "--switch",
               "builtin", "--cli", "--script", str(script), "--logs", str(tmp_path / "logs"),
               "--pcap", str(tmp_path / "pcaps")]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    # Mininet prints host commands' output through its log, on stderr
    replies = [line for line in result.stderr.splitlines() if " replies from " in line]
    assert replies == ["3/3 replies from 10.0.0.2", "3/3 replies from 10.0.0.1",
                       "0/1 replies from 10.0.0.3"]
    assert interfaces_after(tmp_path) == ["lo"]
    assert processes_mentioning(str(tmp_path)) == []
    assert os.path.exists(tmp_path / "logs" / "s1.out")
