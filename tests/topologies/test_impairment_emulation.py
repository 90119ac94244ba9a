"""Link impairments on the built-in switch end to end: `python -m lab --loss --dup`
makes every switch impair its links itself (no netem), each direction once, and the final
counters land in <logs>/<sw>.impair.json.  Runs in a private network namespace."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from private_netns import interfaces_after, private_network_command, processes_mentioning
from topologies.switches import REPO

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]

PINGS = 200


def test_leafspine_ping_is_lost_and_duplicated(tmp_path):
    logs = tmp_path / "logs"
    script = tmp_path / "session"       # a script, not stdin: Mininet feeds stdin to ping
    script.write_text(f"h1 ping -c {PINGS} -i 0.01 -W 1 -q 10.0.0.2\n")
    command = [sys.executable, "-m", "lab", "--topo", "leafspine:2,1,1",
               "--switch", "builtin", "--cli", "--logs", str(logs), "--no-pcap",
               "--loss", "10", "--dup", "10", "--impair-seed", "3", "--script", str(script)]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert interfaces_after(tmp_path) == ["lo"]
    assert processes_mentioning(str(tmp_path)) == []

    # h1 -> s1 -> s3 -> s2 -> h2 and back: 4 impaired directions each way
    output = result.stdout + result.stderr     # Mininet's log (node output) is stderr
    summary = re.search(r"(\d+) packets transmitted, (\d+) received, \+(\d+) duplicates",
                        output)
    assert summary, output
    sent, received, duplicates = map(int, summary.groups())
    assert sent == PINGS and 0 < received < PINGS and duplicates > 0

    stats = {name: json.loads((logs / f"{name}.impair.json").read_text())
             for name in ("s1", "s2", "s3")}
    assert all(s["final"] for s in stats.values())
    # leaves: host port both ways, uplink tx only; the spine: tx on both ports
    assert {p: sorted(d) for p, d in stats["s1"]["ports"].items()} == {"1": ["rx", "tx"],
                                                                      "2": ["tx"]}
    assert {p: sorted(d) for p, d in stats["s3"]["ports"].items()} == {"1": ["tx"],
                                                                      "2": ["tx"]}
    config = stats["s3"]["ports"]["1"]["tx"]["config"]
    assert (config["loss"], config["dup"], config["seed"]) == (10, 10, 3)
    dropped = sum(d["dropped"] for s in stats.values() for p in s["ports"].values()
                  for d in p.values())
    duplicated = sum(d["duplicated"] for s in stats.values() for p in s["ports"].values()
                     for d in p.values())
    assert dropped > 0 and duplicated > 0
    # the only frames h1 sends are its echo requests (static ARP, no IPv6)
    assert stats["s1"]["ports"]["1"]["rx"]["frames"] == PINGS
