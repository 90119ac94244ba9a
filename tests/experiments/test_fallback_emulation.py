"""A job the switches cannot hold runs as a host allreduce (--fallback, ring by default),
announced on stderr and recorded in results.json; with --fallback none it is refused with one
line.  In a private network namespace: star:6, three jobs of two workers with a window of 400
slots each on a switch of 1024, so the third does not fit."""

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

COMMAND = ["-m", "experiments", "compare", "--topo", "star:6", "--jobs", "3",
           "--window", "400", "--modes", "ina", "--elements", "5000", "--dtype", "int32",
           "--switch", "builtin"]
REASON = "switch s1: job 3 needs 400 slots but only 224 contiguous of 1024 are free"


def run(tmp_path, *extra):
    out = tmp_path / "out"
    command = [sys.executable] + COMMAND + list(extra) + ["--out", str(out)]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=300)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert interfaces_after(tmp_path) == ["lo"]
    return result, out


def test_a_job_that_does_not_fit_runs_as_the_fallback_algorithm(tmp_path):
    result, out = run(tmp_path, "--fallback", "butterfly")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (f"compare: job 3 does not fit the switches ({REASON}); running it as a host "
            "allreduce (butterfly) instead\n") in result.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [(r["job"], r["mode"], r["correct"]) for r in runs] == \
        [(1, "ina", True), (2, "ina", True), (3, "butterfly", True)]
    assert [r["fallback"] for r in runs[:2]] == [None, None]
    assert runs[2]["fallback"] == {"reason": REASON, "algorithm": "butterfly",
                                   "requested": "ina"}
    # every worker's own check against the exact sum passed; the sum is what it checked
    for r in runs:
        assert [rep["correct"] for rep in r["reports"]] == [True, True]
        assert all(rep["max_abs_err"] == 0 for rep in r["reports"])


def test_fallback_none_keeps_the_refusal(tmp_path):
    result, out = run(tmp_path, "--fallback", "none")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith(f"job 3: {REASON}")
    assert "running it as a host allreduce" not in result.stderr
