"""Run records, the text table and results.json from sample worker reports."""

import json
import os
import subprocess

import pytest

from jobs import results
from contracts.cli import UsageError
from experiments.compare import job_membership, parse_modes, record_switch_threads
from jobs.results import WorkerOutcome


def report(rank, seconds, correct=True, err=0.0, sent=16_000, received=16_500):
    return {"rank": rank, "seconds": seconds, "correct": correct, "max_abs_err": err,
            "bytes_sent": sent, "bytes_received": received, "packets_sent": 100 + rank,
            "retransmissions": rank, "error": None}


def outcomes(*reports, codes=None):
    codes = codes or [0] * len(reports)
    return [WorkerOutcome(f"h{i + 1}", i, code, r) for i, (r, code) in enumerate(zip(reports, codes))]


def test_summary_of_correct_run():
    run = results.summarize("ina", "star:2", "builtin", 1, 1_000_000, "int32", 32,
                            outcomes(report(0, 2.0, sent=10), report(1, 4.0, sent=30)))
    assert run.correct and run.errors == []
    assert run.seconds == 4.0                      # the slowest worker
    assert run.melem_per_s == pytest.approx(0.25)
    assert run.gbit_per_s == pytest.approx(1_000_000 * 32 / 4.0 / 1e9)
    assert run.bytes_per_host == 20.0
    assert run.bytes_received_per_host == 16_500.0
    assert run.packets_per_host == 100.5
    assert run.retransmissions == 1
    assert run.hosts == ["h1", "h2"] and run.workers == 2


def test_wrong_result_or_failed_worker_is_not_correct():
    run = results.summarize("ina", "star:2", "builtin", 1, 100, "float32", 32,
                            outcomes(report(0, 1.0), report(1, 1.0, correct=False, err=0.5)))
    assert not run.correct
    assert run.max_abs_err == 0.5
    assert run.errors == ["h2 (rank 1): exited 0 but its result was not verified"]

    missing = [WorkerOutcome("h1", 0, 0, report(0, 1.0)),
               WorkerOutcome("h2", 1, None, None, "no report written")]
    run = results.summarize("ina", "star:2", "builtin", 1, 100, "int32", 32, missing)
    assert not run.correct and run.seconds is None and run.gbit_per_s is None
    assert run.errors == ["h2 (rank 1): no report written"]

    crashed = outcomes(report(0, 1.0), report(1, 1.0), codes=[0, 1])
    run = results.summarize("ring", "star:2", "builtin", 1, 100, "int32", None, crashed)
    assert run.errors == ["h2 (rank 1): exited with code 1"]


def test_no_workers_is_not_correct():
    assert not results.summarize("ina", "star:2", "builtin", 1, 10, "int32", 1, []).correct


def test_table_lists_every_run():
    good = results.summarize("ina", "star:4", "builtin", 1, 1000, "int32", 32,
                             outcomes(dict(report(0, 0.5), engine="c"),
                                      dict(report(1, 0.25), engine="c")))
    good.switch_backend = "c"
    good.switch_threads = "2"
    bad = results.summarize("ring", "star:4", "builtin", 1, 1000, "float32", None,
                            outcomes(report(0, 0.5, correct=False, err=1e-3)))
    mixed = results.summarize("ina", "star:4", "builtin", 1, 1000, "int32", 32,
                              outcomes(dict(report(0, 0.5), engine="c"),
                                       dict(report(1, 0.25), engine="python")))
    mixed.switch_backend = "python"
    mixed.switch_threads = "1-2"
    lines = results.format_table([good, bad, mixed]).splitlines()
    assert lines[0].split() == ["mode", "job", "topo", "workers", "elements", "dtype", "seconds",
                                "Gbit/s", "Melem/s", "MB_sent/host", "retx", "correct",
                                "max_abs_err", "switch", "threads", "engine"]
    # retx: the workers' retransmissions summed (ranks 0 and 1 report 0 and 1); switch,
    # threads and engine: what ran (the switches' data plane and packet threads, the
    # workers' engines; "-": not recorded)
    assert lines[2].split() == ["ina", "1", "star:4", "2", "1000", "int32", "0.500", "0.0001",
                                "0.002", "0.016", "1", "yes", "0", "c", "2", "c"]
    assert lines[3].split() == ["ring", "1", "star:4", "1", "1000", "float32", "0.500", "0.0001",
                                "0.002", "0.016", "0", "NO", "0.001", "-", "-", "-"]
    assert lines[4].split()[-3:] == ["python", "1-2", "c:1,python:1"]
    assert mixed.worker_engines == {"c": 1, "python": 1}


def test_results_json(tmp_path):
    run = results.summarize("ina", "star:2", "builtin", 1, 20000, "int32", 32,
                            outcomes(report(0, 1.0), report(1, 2.0)))
    path = results.write_results(str(tmp_path / "out"), [run], {"topo": "star:2"})
    document = json.loads(open(path).read())
    assert document["meta"] == {"topo": "star:2"}
    (saved,) = document["runs"]
    for key in ("mode", "topo", "workers", "elements", "dtype", "seconds", "correct",
                "max_abs_err", "bytes_per_host"):
        assert key in saved
    assert (saved["mode"], saved["workers"], saved["seconds"], saved["correct"]) == \
        ("ina", 2, 2.0, True)
    assert [r["rank"] for r in saved["reports"]] == [0, 1]


def test_load_report(tmp_path):
    assert results.load_report(str(tmp_path / "none.json")) == (None, "no report written")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    report_, why = results.load_report(str(broken))
    assert report_ is None and why.startswith("unreadable report")


def test_job_membership_and_modes():
    hosts = [f"h{i}" for i in range(1, 9)]
    assert job_membership(hosts, 1, None) == [tuple(hosts)]
    assert job_membership(hosts, 2, 3) == [("h1", "h2", "h3"), ("h4", "h5", "h6")]
    with pytest.raises(UsageError, match="do not fit"):
        job_membership(hosts, 3, 3)
    assert [m.name for m in parse_modes("ina,ring,ina")] == ["ina", "ring"]
    with pytest.raises(UsageError, match="unknown mode 'x'"):
        parse_modes("ina,x")


def test_table_command_reads_results(tmp_path, capsys):
    from experiments.__main__ import main
    good = results.summarize("ina", "star:2", "builtin", 1, 100, "int32", 32,
                             outcomes(report(0, 1.0), report(1, 2.0)))
    bad = results.summarize("ina", "star:2", "builtin", 1, 100, "float32", 32,
                            outcomes(report(0, 1.0, correct=False)))
    results.write_results(str(tmp_path / "a"), [good], {})
    results.write_results(str(tmp_path / "b"), [bad], {})
    assert main(["table", str(tmp_path / "a")]) == 0
    assert main(["table", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[5] for r in rows if r.startswith("ina")] == ["int32", "int32", "float32"]
    with pytest.raises(UsageError, match="cannot read"):
        main(["table", str(tmp_path / "none")])


def test_compare_refuses_non_root_after_checking_input(monkeypatch, tmp_path):
    from experiments.compare import main
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(UsageError, match="bad topology 'star:x'"):
        main(["--topo", "star:x", "--elements", "10", "--out", str(tmp_path)])
    with pytest.raises(UsageError, match="compare needs root"):
        main(["--topo", "star:2", "--elements", "10", "--out", str(tmp_path)])
    assert list(tmp_path.iterdir()) == []      # nothing started, nothing written


def test_provenance_names_cores_load_and_commit():
    record = results.provenance()
    assert record["cores"] == os.cpu_count()
    assert len(record["load_average"]) == 3 and all(load >= 0 for load in record["load_average"])
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=results.REPO,
                          capture_output=True, text=True).stdout.strip()
    assert record["git_commit"] == head and head


def test_switch_threads_recorded_per_switch():
    meta = {}
    record_switch_threads(meta, {"s1": 1, "s2": 1})
    assert meta == {"switch_threads": {"s1": 1, "s2": 1}, "switch_threads_ran": "1"}
    record_switch_threads(meta, {"s1": 4, "s2": 1, "s3": 2})
    assert meta["switch_threads_ran"] == "1-4"
    record_switch_threads(meta, {"s1": None})          # bmv2: not ours to count
    assert meta == {"switch_threads": {"s1": None}, "switch_threads_ran": None}
