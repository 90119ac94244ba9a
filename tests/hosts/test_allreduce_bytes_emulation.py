"""Bytes on real interfaces: each host-only algorithm on 5 hosts (network namespaces joined by
veth pairs, tests/hosts/netns_allreduce.py), every host's sent bytes, counted by its
interface's kernel counters, against hosts/bounds.py's formula for its rank.

The formula counts TCP payload; the frames add 66 bytes of headers (Ethernet 14, IPv4 20,
TCP 20 + 12 of timestamps) to segments of at most 1448 payload bytes, so a host sends at
least payload x 1514/1448, and, with the ACKs and connection set-up, less than 1.2 x payload
(the allowance of the ring's own check in tests/experiments/test_compare_emulation.py).
5 hosts: not a power of two, so butterfly and rabenseifner fold a rank in and out."""

import json
import os
import subprocess
import sys

import pytest

from hosts import bounds

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))

from private_netns import interfaces_after, private_network_command  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

WORLD = 5
ELEMENTS = 20011          # int32, not divisible by 2, 4 or 5


@pytest.mark.parametrize("algorithm", ["ps", "binomial-tree", "butterfly", "ring",
                                       "rabenseifner", "double-binary-tree"])
def test_bytes_sent_per_host_match_the_formula(tmp_path, algorithm):
    script = os.path.join(REPO, "tests", "hosts", "netns_allreduce.py")
    command = [sys.executable, script, algorithm, str(WORLD), str(ELEMENTS), "3",
               str(tmp_path)]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    run = json.loads(result.stdout)
    assert run["exit_codes"] == [0] * WORLD, run["errors"]
    for rank in range(WORLD):
        report = json.loads((tmp_path / f"{rank}.json").read_text())
        assert report["correct"] is True and report["max_abs_err"] == 0
        payload_sent, payload_received = bounds.traffic(algorithm, rank, WORLD, ELEMENTS)
        assert (report["bytes_sent"], report["bytes_received"]) == \
            (payload_sent, payload_received)
        sent, received = run["tx_bytes"][rank], run["rx_bytes"][rank]
        assert payload_sent * 1514 / 1448 <= sent < 1.2 * payload_sent, rank
        assert payload_received * 1514 / 1448 <= received < 1.2 * payload_received, rank
    assert interfaces_after(tmp_path) == ["lo"]
