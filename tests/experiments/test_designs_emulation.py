"""The designs side by side, end to end in Mininet: `python -m experiments compare --modes
ina,switchml,atp,ring` on one star (the built-in switch, and real bmv2), every sum exact or
within its float bound, at 0% and 1% loss, with two and four concurrent jobs; ATP on two
levels of a leaf-spine, and four ATP jobs sharing switches with fewer aggregators than they
keep fragments in flight.  Each run is a
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


def test_the_three_designs_and_the_ring_on_one_star(tmp_path):
    code, stderr, document = compare(tmp_path, "--topo", "star:4", "--switch", "builtin",
                                     "--modes", "ina,switchml,atp,ring", "--elements", "50000")
    assert code == 0, stderr[-2000:]
    runs = document["runs"]
    assert [(r["mode"], r["workers"]) for r in runs] == [("ina", 4), ("switchml", 4),
                                                         ("atp", 4), ("ring", 4)]
    assert all(correct(r) for r in runs)
    ina, switchml, atp, _ = runs
    # the design each worker ran, and the same vector in the same packets both ways
    assert [{r["design"] for r in run["reports"]} for run in (ina, switchml, atp)] == \
        [{"ina"}, {"switchml"}, {"atp"}]
    assert switchml["packets_per_host"] == ina["packets_per_host"] >= -(-50000 // ina["k"])
    assert switchml["worker_engines"] == {"c": 4}
    # ATP: one packet per fragment, every fragment summed whole in the switch
    assert atp["packets_per_host"] == -(-50000 // atp["k"])
    server = atp["reports"][0]["server"]
    assert server["whole"] == server["acks_sent"] == atp["packets_per_host"]


def atp_server(run) -> dict:
    (server,) = [r["server"] for r in run["reports"] if "server" in r]
    return server


def test_atp_on_two_levels_of_a_leaf_spine(tmp_path):
    """Each leaf sums its four workers, the spine the two leaves: the server gets every
    fragment whole."""
    code, stderr, document = compare(tmp_path, "--topo", "leafspine:2,1,4", "--switch",
                                     "builtin", "--modes", "atp", "--elements", "50000")
    assert code == 0, stderr[-2000:]
    (run,) = document["runs"]
    assert run["workers"] == 8 and correct(run)
    assert sorted({r["rack"] for r in run["reports"]}) == [0, 1]
    server = atp_server(run)
    assert server["whole"] == run["packets_per_host"] and server["single"] == 0


def test_four_atp_jobs_on_switches_with_too_few_aggregators(tmp_path):
    """Sixteen aggregators a switch, four jobs of 32 fragments in flight each, 1% loss:
    most fragments collide and go to their job's server unaggregated; every job exact."""
    code, stderr, document = compare(tmp_path, "--topo", "leafspine:2,1,4", "--switch",
                                     "builtin", "--modes", "atp", "--jobs", "4",
                                     "--aggregators", "16", "--loss", "1",
                                     "--elements", "50000")
    assert code == 0, stderr[-2000:]
    runs = document["runs"]
    assert [(r["job"], r["workers"]) for r in runs] == [(j, 2) for j in (1, 2, 3, 4)]
    assert all(correct(r) for r in runs)
    servers = [atp_server(r) for r in runs]
    assert all(s["collisions"] > 0 for s in servers)
    assert sum(r["retransmissions"] for r in runs) > 0


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
def test_the_three_designs_on_bmv2_two_jobs_and_loss(tmp_path, p4lang_toolchain):
    code, stderr, document = compare(tmp_path, "--topo", "star:4", "--switch", "bmv2",
                                     "--modes", "switchml,atp,ina", "--jobs", "2", "--loss",
                                     "1", "--elements", "20000")
    assert code == 0, stderr[-2000:]
    assert document["meta"]["switch_backends"] == {"s1": "bmv2"}
    runs = document["runs"]
    assert [(r["mode"], r["job"]) for r in runs] == [
        (mode, job) for mode in ("switchml", "atp", "ina") for job in (1, 2)]
    assert all(correct(r) for r in runs)
