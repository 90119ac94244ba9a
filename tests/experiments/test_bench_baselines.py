"""scripts/bench_baselines.py without a network: its points, one-line errors, and --collect,
which writes the results file and its Markdown table from compares already run."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import bench_baselines  # noqa: E402
from contracts.cli import UsageError  # noqa: E402


def test_points_keep_a_topologys_own_commas():
    assert bench_baselines._points("leafspine:2,1,4@500000,star:4@1000000") == [
        ("leafspine:2,1,4", 500000), ("star:4", 1000000)]
    with pytest.raises(UsageError, match="give TOPO@ELEMENTS"):
        bench_baselines._points("star:4@many")


def _row(mode, seconds, bound, fabric=None, speedup=None, allowed=None, bw=100.0):
    return {"topo": "star:4", "collective": "allreduce", "dtype": "int32", "workers": 4,
            "elements": 1000, "bw_mbit": bw, "mode": mode, "runs": 3, "correct_runs": 3,
            "median_s": seconds, "min_s": seconds * 0.9, "max_s": seconds * 1.1,
            "bound_s": bound, "of_bound": seconds / bound if bound else None,
            "fabric_bound_s": fabric, "of_fabric_bound": seconds / fabric if fabric else None,
            "ina_speedup": speedup, "allowed_speedup": allowed, "paced_by": "links",
            "wire_bytes_per_host": 1.0}


def test_collect_writes_the_rows_and_a_backed_table(tmp_path):
    work = tmp_path / "work"
    point = work / "star4-1000-int32-100"
    point.mkdir(parents=True)
    meta = {"started": "2026-12-02T04:00:00+00:00", "cores": 2, "load_average": [0.5, 0, 0],
            "git_commit": "abc1234", "segmentation_offload": True}
    ring = {"mode": "ring", "topo": "star:4", "dtype": "int32", "elements": 1000,
            "bw_mbit": 100.0}
    (point / "results.json").write_text(json.dumps({
        "meta": meta, "runs": [
            {"correct": True, **key, "worker_cpu_seconds": cpu, "machine_busy_cores": busy}
            for key, cpu, busy in ((ring, 0.3, 1.9), (ring, 0.1, 1.5), (ring, 0.2, 2.0),
                                   ({**ring, "bw_mbit": 10.0}, 9.0, 0.1),
                                   ({**ring, "mode": "ina"}, 5.0, 1.0))]
        + [{"correct": True, **ring, "mode": "ina"}],
        "summary": [_row("ina", 1.0, 0.98), _row("ring", 1.5, 1.47, 1.47, 1.5, 1.5)]}))
    out = tmp_path / "baselines.json"
    finished = subprocess.run(
        [sys.executable, "scripts/bench_baselines.py", "--out", str(out), "--work-dir",
         str(work), "--points", "star:4@1000", "--dtypes", "int32", "--bw", "100",
         "--collect"], cwd=REPO, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    document = json.loads(out.read_text())
    assert [r["mode"] for r in document["rows"]] == ["ina", "ring"]
    ina_row, ring_row = document["rows"]
    # medians over each row's own runs (not the 10 Mbit/s one's)
    assert (ring_row["worker_cpu_s"], ring_row["machine_busy_cores"]) == (0.2, 1.9)
    assert (ina_row["worker_cpu_s"], ina_row["machine_busy_cores"]) == (5.0, 1.0)
    assert document["meta"]["git_commit"] == "abc1234"
    assert document["meta"]["started"] == meta["started"]
    assert "--collect" not in document["meta"]["command"]
    lines = finished.stdout.splitlines()
    assert "| star:4 | int32 | 100 | ring | 3/3 | 1.50 | 1.35–1.65 | 1.47 | 1.02 | 1.47 | 1.02 " \
           "| 1.50× | 1.50× | links |" in lines
    assert any(line.startswith("<!-- measured: ") for line in lines)


def test_a_work_dir_without_results_is_a_one_line_error(tmp_path):
    finished = subprocess.run(
        [sys.executable, "scripts/bench_baselines.py", "--out", str(tmp_path / "x.json"),
         "--work-dir", str(tmp_path), "--points", "star:4@1000", "--dtypes", "int32",
         "--bw", "100", "--collect"], cwd=REPO, capture_output=True, text=True)
    assert finished.returncode == 2
    assert finished.stderr.count("\n") == 1 and "--collect: no results in" in finished.stderr
