"""`python -m experiments soak`: a short soak on star:4 (two concurrent jobs, alternating
dtypes and job ids) exits 0 with every allreduce correct and nothing leaked; its thresholds
(experiments.soak.judge) refuse growth.  The long soak is a documented benchmark (README)."""

import json
import os
import subprocess
import sys

import pytest

from experiments.soak import judge

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))


def resources(rss, fds, threads, pid=10):
    return {"pid": pid, "rss_mib": rss, "fds": fds, "threads": threads}


def sample(rss=40.0, fds=12, threads=3, slots=0, collecting=0, pid=10):
    return {"switches": {"s1": resources(rss, fds, threads, pid)},
            "controller": resources(80.0, 20, 5, 1), "slots_in_use": slots,
            "cells_collecting": collecting}


def test_thresholds():
    assert judge({"before": sample(), "after": sample(rss=55.0, threads=7)})[1] == []
    assert judge({"before": sample(), "after": sample(threads=8)})[1] == \
        ["switch threads grew by 5"]
    growth, failures = judge({"before": sample(), "after": sample(rss=57.0, fds=13)})
    assert growth["switch_fds"] == 1 and growth["switch_rss_mib"] == 17.0
    assert failures == ["switch s1 RSS grew 17.0 MiB (from 40.0)", "switch fds grew by 1"]
    assert judge({"before": sample(), "after": sample(slots=64, collecting=2)})[1] == \
        ["64 slots still in use", "2 slot cells left collecting a round"]
    assert judge({"before": sample(), "after": sample(pid=11)})[1] == \
        ["switch s1 restarted during the soak"]
    # 25% of a large process is noise too
    assert judge({"before": sample(rss=200.0), "after": sample(rss=245.0)})[1] == []


@pytest.mark.emulation
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
def test_short_soak_exits_0(tmp_path):
    from private_netns import interfaces_after, private_network_command
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments", "soak", "--topo", "star:4",
               "--allreduces", "8", "--elements", "3000", "--jobs", "2", "--out", str(out)]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout
    (line,) = result.stdout.strip().splitlines()
    assert line.startswith("soak: 8/8 allreduces correct on star:4") and line.endswith(": ok")
    report = json.loads((out / "soak.json").read_text())
    assert report["ok"] is True
    done = report["allreduces"]
    assert [a["dtype"] for a in done] == ["int32", "float32"] * 4
    assert [a["jobs"] for a in done] == [[1, 2], [3, 4]] * 4
    assert all(a["correct"] for a in done)
    assert all(1 <= a["elements"] <= 3000 for a in done)
    assert report["after"]["slots_in_use"] == 0 and report["after"]["cells_collecting"] == 0
    # what ran, recorded as compare records it: the back end and packet threads the switch's
    # status file gives (no "threads" there: a single-threaded switch), each link's qdiscs
    meta = report["meta"]
    status = json.loads((out / "logs" / "s1.status.json").read_text())
    assert (meta["switch_backend_requested"], meta["switch_backends"]) == ("auto", {"s1": "c"})
    assert (meta["switch_threads"], meta["switch_threads_ran"]) == \
        ({"s1": status.get("threads", 1)}, str(status.get("threads", 1)))
    assert sorted(tuple(link["link"]) for link in meta["link_qdiscs"]) == \
        [(f"h{i}-eth0", f"s1-eth{i}") for i in range(1, 5)]
    assert all(any(q.split()[1:2] == ["root"] for q in qdiscs)
               for link in meta["link_qdiscs"] for qdiscs in link["qdiscs"].values())
    assert interfaces_after(tmp_path) == ["lo"]
