"""`python -m experiments compare` over lossy links on the built-in switch (no netem needed):
loss, duplication and reordering on every link, exact sums anyway, the workers'
retransmissions in the table and the switches' impairment counters in results.json.  Runs in
a private network namespace (tests/topologies/private_netns.py)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTS)
_spec = importlib.util.spec_from_file_location(
    "private_netns", os.path.join(TESTS, "topologies", "private_netns.py"))
private_netns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(private_netns)

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]

COUNTERS = ("dropped", "duplicated", "reordered", "delayed")


def test_star2_lossy_links_exact_with_retransmissions(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments", "compare", "--topo", "star:2",
               "--modes", "ina", "--elements", "20000", "--dtype", "int32", "--out", str(out),
               "--switch", "builtin", "--loss", "5", "--dup", "2", "--reorder", "5",
               "--run-timeout", "300"]
    result = subprocess.run(private_netns.private_network_command(command, tmp_path),
                            cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=540)
    assert result.returncode == 0, result.stderr[-2000:]
    assert private_netns.interfaces_after(tmp_path) == ["lo"]
    assert private_netns.processes_mentioning(str(tmp_path)) == []

    document = json.loads((out / "results.json").read_text())
    (run,) = document["runs"]
    assert run["correct"] is True and run["max_abs_err"] == 0
    assert [r["correct"] for r in run["reports"]] == [True, True]
    assert run["retransmissions"] == sum(r["retransmissions"] for r in run["reports"]) > 0
    link = document["meta"]["link"]
    assert (link["loss_pct"], link["dup_pct"], link["reorder_pct"]) == (5, 2, 5)

    # the switch's final counters, per switch and in total; the run's share of them
    impairments = document["impairments"]
    assert set(impairments["switches"]) == {"s1"}
    total = impairments["total"]
    assert total == impairments["switches"]["s1"]
    assert total["dropped"] > 0 and total["duplicated"] > 0 and total["reordered"] > 0
    assert total["delayed"] == 0                       # no --delay
    assert all(0 < run["impairments"][name] <= total[name]
               for name in ("dropped", "duplicated", "reordered"))
    stats = json.loads((out / "logs" / "s1.impair.json").read_text())
    assert stats["final"] and sorted(stats["ports"]) == ["1", "2"]
    assert all(sorted(directions) == ["rx", "tx"] for directions in stats["ports"].values())
    assert stats["ports"]["1"]["rx"]["config"]["seed"] == 1      # compare's --seed

    # the printed table shows the retransmissions
    header, _, row = result.stdout.splitlines()[:3]
    assert "retx" in header.split()
    assert row.split()[header.split().index("retx")] == str(run["retransmissions"])
