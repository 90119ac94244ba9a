"""A worker that never starts: the others stop after their bounded retransmissions, compare
exits 1 and names the missing rank (read by the controller from the switch's slot bitmap),
and nothing is left running.  In a private network namespace."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))

from private_netns import interfaces_after, private_network_command  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def test_absent_worker_is_named_and_the_others_fail_in_bounded_time(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments", "compare", "--topo", "star:4",
               "--modes", "ina", "--elements", "5000", "--dtype", "int32",
               "--absent-ranks", "2", "--switch", "builtin", "--out", str(out)]
    # the workers give up after 12 retransmissions with backoff (about 30 s): bounded
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "compare: job 1: rank 2 missing (h3)\n" in result.stderr
    assert "Traceback" not in result.stderr
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert run["correct"] is False
    assert run["errors"][-1] == "job 1: rank 2 missing (h3)"
    assert "h3 (rank 2): not started (--absent-ranks)" in run["errors"]
    stalled = [e for e in run["errors"] if "no result from the switch for slot" in e]
    assert [e.split(" ")[0] for e in stalled] == ["h1", "h2", "h4"]
    assert all("job 1:" in e for e in stalled)
    assert interfaces_after(tmp_path) == ["lo"]


def test_absent_ranks_must_be_a_list_of_ranks(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "experiments", "compare", "--topo", "star:4", "--modes", "ina",
         "--elements", "10", "--absent-ranks", "x", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith("expected a comma list of ranks, got 'x'")
