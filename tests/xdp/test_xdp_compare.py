"""In-network aggregation with p4src/main.p4 in the kernel: `python -m experiments compare
--switch-backend xdp` on a leaf-spine network at the default K (256), exact sums for ina and
the ring, what ran recorded; shaped or impaired links refused in one line (XDP redirect passes
no qdisc)."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(REPO, "tests", "topologies"), os.path.join(REPO, "tests")]
from private_netns import interfaces_after, private_network_command  # noqa: E402
from skip_or_fail import skip_or_fail  # noqa: E402

from contracts.jobs import default_k  # noqa: E402
from p4switch.backend.xdp import loader  # noqa: E402


@pytest.mark.emulation
def test_compare_leafspine_ina_and_ring_on_xdp_switches(tmp_path):
    skip_or_fail(loader.toolchain_missing())
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "INA_VETH_NAPI"}
    result = subprocess.run(private_network_command(
        [sys.executable, "-m", "experiments", "compare", "--topo", "leafspine:2,1,2",
         "--modes", "ina,ring", "--elements", "50000", "--dtype", "int32",
         "--switch", "builtin", "--switch-backend", "xdp", "--out", str(out),
         "--run-timeout", "240"], tmp_path),
        cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=480,
        env=env)
    assert interfaces_after(tmp_path) == ["lo"]
    assert result.returncode == 0, result.stderr[-2000:]
    assert "INA_VETH_NAPI=gro" in result.stderr
    document = json.loads((out / "results.json").read_text())
    meta = document["meta"]
    assert meta["switch_backend"] == "xdp" and set(meta["switch_backends"].values()) == {"xdp"}
    assert meta["veth_napi"] == "gro"
    assert meta["k"] == default_k("builtin") == 256     # the built-in switch's K, on XDP too
    runs = {run["mode"]: run for run in document["runs"]}
    assert sorted(runs) == ["ina", "ring"]
    for run in runs.values():
        assert run["correct"] is True and run["max_abs_err"] == 0
        assert [r["correct"] for r in run["reports"]] == [True] * 4


@pytest.mark.parametrize("link", [["--bw", "100"], ["--loss", "1"], ["--delay", "5"]])
def test_shaped_or_impaired_links_are_refused_with_xdp(link, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "experiments", "compare", "--topo", "star:2", "--modes", "ina",
         "--elements", "1000", "--switch-backend", "xdp", "--out", str(tmp_path), *link],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {link[0]}: the xdp switch back end sends by XDP redirect, which no qdisc "
        "shapes and no switch impairment sees; use c"]
