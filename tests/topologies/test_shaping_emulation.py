"""End to end: a shaped link is a real bottleneck.  `experiments compare` on star:2 at 20
Mbit/s: in-network aggregation cannot beat its link bound (every host link carries the vector
once each way), loses nothing in the tbf queues (no retransmission with the default window),
and each link's bytes pass the tbf unchanged."""

import json
import math
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))

from private_netns import interfaces_after, private_network_command  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

ELEMENTS, K, BW_MBIT = 200_000, 256, 20
WIRE_BYTES_PER_PACKET = 4 * K + 14 + 20 + 8 + 16


def test_shaped_star2_cannot_beat_its_link_bound(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments", "compare", "--topo", "star:2", "--modes",
               "ina", "--elements", str(ELEMENTS), "--k", str(K), "--bw", str(BW_MBIT),
               "--out", str(out), "--switch", "builtin", "--run-timeout", "120"]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=400)
    assert interfaces_after(tmp_path) == ["lo"]
    assert result.returncode == 0, result.stderr[-2000:]
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert run["correct"] is True
    packets = math.ceil(ELEMENTS / K)
    bound_s = packets * WIRE_BYTES_PER_PACKET * 8 / (BW_MBIT * 1e6)     # 0.34 s
    # tbf lets a 15 KiB burst through at once: 6 ms at 20 Mbit/s, under 2% of the bound
    assert run["seconds"] >= 0.98 * bound_s, (run["seconds"], bound_s)
    assert run["retransmissions"] == 0
    for host in ("h1", "h2"):
        counters = run["interface_bytes"]["hosts"][host]
        assert counters["rx_bytes"] >= packets * WIRE_BYTES_PER_PACKET
