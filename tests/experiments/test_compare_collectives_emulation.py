"""End to end: `python -m experiments sweep --collective reduce-scatter` on star:4 with the
ring (two sizes), and `compare --collective broadcast` with the binomial tree: every worker
exact, the runs and summary rows carrying the collective, each host's payload bytes equal to
hosts/bounds.py's count for its rank, and the hosts' interface counters within the TCP
framing of it."""

import json
import os
import sys

import pytest

from hosts import bounds

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_compare_emulation import run_in_private_network  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "hosts"))

from test_allreduce_bytes_emulation import within_frame_bounds  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


@pytest.mark.parametrize("command,collective,algorithm,sizes", [
    ("sweep", "reduce-scatter", "ring", (30001, 60000)),
    ("compare", "broadcast", "binomial-tree", (30001,))])
def test_collective_runs_are_exact_with_the_formula_bytes(tmp_path, command, collective,
                                                          algorithm, sizes):
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", command, "--topo", "star:4", "--modes",
         algorithm, "--collective", collective, "--elements", ",".join(map(str, sizes)),
         "--bw", "50", "--out", str(out), "--switch", "builtin", "--run-timeout", "200"],
        tmp_path, timeout=540)
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads((out / "results.json").read_text())
    assert document["meta"]["collective"] == collective
    runs = document["runs"]
    assert [(r["mode"], r["collective"], r["elements"]) for r in runs] == \
        [(algorithm, collective, size) for size in sizes]
    for run in runs:
        assert run["correct"] is True and run["max_abs_err"] == 0
        resent = {r["rank"]: r["retransmissions"] for r in run["reports"]}   # TCP_INFO's
        for report in run["reports"]:
            rank = report["rank"]
            assert report["correct"] is True and report["collective"] == collective
            payload = bounds.traffic(algorithm, rank, 4, run["elements"], 4, collective)
            assert (report["bytes_sent"], report["bytes_received"]) == payload, rank
            host = run["hosts"][rank]
            wire = run["interface_bytes"]["hosts"][host]
            assert within_frame_bounds(wire["tx_bytes"], payload[0], payload[1],
                                       resent[rank]), (rank, resent)
            assert within_frame_bounds(wire["rx_bytes"], payload[1], payload[0],
                                       sum(resent.values()) - resent[rank]), (rank, resent)
    rows = document["summary"]
    assert {row["collective"] for row in rows} == {collective}
    for row, size in zip(rows, sizes):
        assert row["formula_bytes_per_host"] == sum(
            bounds.traffic(algorithm, r, 4, size, 4, collective)[0] for r in range(4)) / 4
        assert row["steps"] == bounds.steps(algorithm, 4, collective)
