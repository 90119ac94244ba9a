"""In-network allreduce on a Mininet star with 2 and with 8 hosts, each host a worker:
int32 sums exact, float32 sums within the error bound of block floating point.

Runs `python -m experiments compare` in a private network namespace (its own veths and
127.0.0.1 ports), so it never meets another network on the machine."""

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

ELEMENTS = 30000


@pytest.mark.parametrize("hosts", [2, 8])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_star_allreduce(tmp_path, hosts, dtype):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments", "compare", "--topo", f"star:{hosts}",
               "--modes", "ina", "--elements", str(ELEMENTS), "--dtype", dtype,
               "--switch", "builtin", "--seed", "5", "--out", str(out), "--run-timeout", "300"]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert (run["mode"], run["workers"], run["elements"], run["dtype"]) == \
        ("ina", hosts, ELEMENTS, dtype)
    reports = run["reports"]
    assert len(reports) == hosts
    assert all(r["correct"] is True for r in reports), [r.get("error") for r in reports]
    if dtype == "int32":
        assert all(r["max_abs_err"] == 0 for r in reports)
    else:
        # every worker checked itself against the float64 sum within its stated bound
        for report in reports:
            assert report["error_bound"] is not None and report["error_bound"] > 0
            assert report["max_abs_err"] <= report["error_bound"]
    assert interfaces_after(tmp_path) == ["lo"]
