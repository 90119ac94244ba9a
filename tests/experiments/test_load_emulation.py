"""Load: eight concurrent in-network jobs of two workers each on fattree:4 (16 hosts, 20
switches), every one exact, none refused or sent to the host fallback.  In a private network
namespace."""

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


def test_eight_concurrent_jobs_on_fattree4_are_exact(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments", "compare", "--topo", "fattree:4",
               "--jobs", "8", "--workers", "2", "--modes", "ina", "--elements", "20000",
               "--dtype", "int32", "--fallback", "none", "--switch", "builtin",
               "--out", str(out)]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert sorted(r["job"] for r in runs) == list(range(1, 9))
    assert all(r["mode"] == "ina" and r["fallback"] is None for r in runs)
    assert all(r["correct"] and r["workers"] == 2 for r in runs)
    assert all(rep["max_abs_err"] == 0 for r in runs for rep in r["reports"])
    assert interfaces_after(tmp_path) == ["lo"]
