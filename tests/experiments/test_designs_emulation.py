"""The designs side by side, end to end in Mininet: `python -m experiments compare --modes
ina,switchml,ring` on one star (the built-in switch, and real bmv2), every sum exact or
within its float bound, at 0% and 1% loss, with two and four concurrent jobs.  Each run is a
command in a private network namespace (tests/topologies/private_netns.py), left with only
lo."""

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


def compare(tmp_path, *args) -> tuple:
    """(exit code, stderr, results.json) of `compare ARGS` in a private network namespace."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments", "compare", "--out", str(out),
               "--run-timeout", "240", *args]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=420)
    assert interfaces_after(tmp_path) == ["lo"]
    document = json.loads((out / "results.json").read_text()) \
        if (out / "results.json").exists() else None
    return result.returncode, result.stderr, document


def correct(run, exact=True) -> bool:
    return run["correct"] is True and all(r["correct"] for r in run["reports"]) \
        and (run["max_abs_err"] == 0 or not exact)


def test_ours_switchml_and_the_ring_on_one_star(tmp_path):
    code, stderr, document = compare(tmp_path, "--topo", "star:4", "--switch", "builtin",
                                     "--modes", "ina,switchml,ring", "--elements", "50000")
    assert code == 0, stderr[-2000:]
    runs = document["runs"]
    assert [(r["mode"], r["workers"]) for r in runs] == [("ina", 4), ("switchml", 4),
                                                         ("ring", 4)]
    assert all(correct(r) for r in runs)
    ina, switchml, _ = runs
    # the design each worker ran, and the same vector in the same packets both ways
    assert {r["design"] for r in ina["reports"]} == {"ina"}
    assert {r["design"] for r in switchml["reports"]} == {"switchml"}
    assert switchml["packets_per_host"] == ina["packets_per_host"] >= -(-50000 // ina["k"])
    assert switchml["worker_engines"] == {"c": 4}


def test_switchml_under_loss_with_four_jobs(tmp_path):
    """1% loss on every link, four jobs of two workers at once, float32: the workers
    retransmit, the switch answers retransmissions into complete copies, every sum is within
    its block floating point bound."""
    code, stderr, document = compare(tmp_path, "--topo", "star:8", "--switch", "builtin",
                                     "--modes", "switchml", "--jobs", "4", "--loss", "1",
                                     "--dtype", "float32", "--elements", "100000")
    assert code == 0, stderr[-2000:]
    runs = document["runs"]
    assert [(r["job"], r["workers"]) for r in runs] == [(j, 2) for j in (1, 2, 3, 4)]
    assert all(correct(r, exact=False) for r in runs)
    assert all(r["max_abs_err"] <= max(p["error_bound"] for p in r["reports"]) for r in runs)
    assert sum(r["retransmissions"] for r in runs) > 0


@pytest.mark.bmv2
def test_switchml_and_ours_on_bmv2_two_jobs_and_loss(tmp_path, p4lang_toolchain):
    code, stderr, document = compare(tmp_path, "--topo", "star:4", "--switch", "bmv2",
                                     "--modes", "switchml,ina", "--jobs", "2", "--loss", "1",
                                     "--elements", "20000")
    assert code == 0, stderr[-2000:]
    assert document["meta"]["switch_backends"] == {"s1": "bmv2"}
    runs = document["runs"]
    assert [(r["mode"], r["job"]) for r in runs] == [("switchml", 1), ("switchml", 2),
                                                     ("ina", 1), ("ina", 2)]
    assert all(correct(r) for r in runs)
