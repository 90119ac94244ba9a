"""End to end: `python -m experiments compare` on star:2 with in-network aggregation gives
the exact int32 sum on every worker."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def test_compare_star2_ina_int32(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "experiments", "compare", "--topo", "star:2", "--modes", "ina",
         "--elements", "20000", "--dtype", "int32", "--out", str(out), "--switch", "builtin",
         "--run-timeout", "300"],
        cwd=REPO, capture_output=True, text=True, timeout=540)
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads((out / "results.json").read_text())
    (run,) = document["runs"]
    assert (run["mode"], run["topo"], run["workers"], run["elements"], run["dtype"]) == \
        ("ina", "star:2", 2, 20000, "int32")
    assert run["correct"] is True and run["max_abs_err"] == 0
    assert [r["correct"] for r in run["reports"]] == [True, True]
    # every worker sent its whole vector: 20000 values in packets of 64
    assert all(r["packets_sent"] >= 20000 // 64 for r in run["reports"])
    assert "ina" in result.stdout and "yes" in result.stdout
