"""End to end: `python -m experiments compare --modes ina --collective X` on leafspine:2,1,2
(4 workers, p4src on the built-in switches): reduce-scatter, allgather (float32, as bits) and
broadcast exact on every worker; each worker's payload bytes those of hosts/bounds.ina_traffic
(retransmissions on top), and the hosts' interface counters those payloads plus 42 bytes of
Ethernet/IPv4/UDP headers per datagram.  For reduce-scatter the bytes a host receives are
its 1/p share of the values plus a header per other chunk, against the allreduce's whole
vector (docs/results/collectives.md)."""

import json
import os
import sys

import pytest

from hosts import bounds

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_compare_emulation import run_in_private_network  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

ELEMENTS, WORLD, K, WINDOW = 30001, 4, 64, 32
FRAME_HEADERS = 14 + 20 + 8


@pytest.mark.parametrize("collective,dtype", [("reduce-scatter", "int32"),
                                              ("allgather", "float32"),
                                              ("broadcast", "int32")])
def test_ina_collective_is_exact_with_the_formula_bytes(tmp_path, collective, dtype):
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "compare", "--topo", "leafspine:2,1,2",
         "--modes", "ina", "--collective", collective, "--elements", str(ELEMENTS),
         "--dtype", dtype, "--window", str(WINDOW), "--k", str(K), "--out", str(out),
         "--switch", "builtin", "--run-timeout", "120"], tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert (run["mode"], run["collective"], run["correct"]) == ("ina", collective, True)
    assert run["max_abs_err"] == 0
    for report in run["reports"]:
        rank = report["rank"]
        assert report["correct"] is True and report["collective"] == collective
        sent, received = bounds.ina_traffic(collective, rank, WORLD, ELEMENTS, K, WINDOW, dtype)
        if report["retransmissions"] == 0:
            assert report["bytes_sent"] == sent, rank
        assert report["bytes_sent"] >= sent and report["bytes_received"] >= received, rank
        wire = run["interface_bytes"]["hosts"][run["hosts"][rank]]
        expected_rx = report["bytes_received"] + FRAME_HEADERS * report["packets_received"]
        assert expected_rx <= wire["rx_bytes"] < expected_rx + 4096, (rank, wire)
        if collective == "reduce-scatter":
            # values for the rank's own chunks, headers for the others: about 1/p of the
            # allreduce's, which receives every chunk with its values
            allreduce = bounds.ina_traffic("allreduce", rank, WORLD, ELEMENTS, K, WINDOW)[1]
            assert received < 0.5 * allreduce and report["bytes_received"] < 0.5 * allreduce
