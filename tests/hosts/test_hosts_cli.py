"""Command-line errors of `python -m hosts`: one line on stderr, exit 2 (usage) or 1 (failed run)."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = ["worker", "--job", "1", "--rank", "0", "--world", "2", "--elements", "10"]
RING = ["ring", "--rank", "0", "--world", "2", "--elements", "10"]


def run_hosts(*args):
    return subprocess.run([sys.executable, "-m", "hosts", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def assert_one_line_error(completed, status, fragment):
    assert completed.returncode == status
    lines = completed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr
    assert fragment in lines[0]
    assert "Traceback" not in completed.stderr


@pytest.mark.parametrize("args,fragment", [
    ([], "expected a command (worker|switchml|atp|allreduce|ring|gloo|train), got nothing"),
    (["bogus"], "got 'bogus'"),
    (["worker", "--job", "1"], "the following arguments are required: --rank, --world, --elements"),
    (WORKER, "one of the arguments --seed --input is required"),
    (WORKER + ["--seed", "1", "--input", "x.npy"], "not allowed with argument"),
    (WORKER + ["--seed", "1", "--dtype", "float64"], "invalid choice: 'float64'"),
    (WORKER + ["--seed", "-1"], "argument --seed: must be >= 0, got -1"),
    (WORKER + ["--seed", "x1"], "argument --seed: expected an integer, got 'x1'"),
    (WORKER + ["--seed", "1", "--timeout-ms", "soon"], "argument --timeout-ms: expected a number, got 'soon'"),
    (WORKER + ["--seed", "1", "--window", "0"], "argument --window: must be >= 1, got 0"),
    (["worker", "--job", "1", "--rank", "2", "--world", "2", "--elements", "10", "--seed", "1"],
     "--rank 2 must be below --world 2"),
    (WORKER + ["--seed", "1", "--contributor", "64"], "--contributor 64 must be below 64"),
    (WORKER + ["--seed", "1", "--job", "45536"], "--job 45536 is too large: the worker port"),
    (WORKER + ["--seed", "1", "--window", "65536"],
     "--window 65536: a job's slots are 1..65535 (the switch counts them in 16 bits)"),
    (WORKER + ["--seed", "1", "--k", "20000"],
     "--k 20000: p4src is built for K = 1, 2, 4, 8, 16, 32, 64, 128 or 256 values per packet"),
    (WORKER + ["--seed", "1", "--k", "512"], "--k 512: p4src is built for K = 1, 2, 4,"),
    (WORKER + ["--seed", "1", "--k", "100"], "--k 100: p4src is built for K = 1, 2, 4,"),
    (WORKER + ["--input", "/nonexistent/in.npy"], "cannot read input /nonexistent/in.npy"),
    (RING + ["--seed", "1", "--peers", "a:1,b:2,c:3"], "--peers lists 3 entries, --world is 2"),
    (RING + ["--seed", "1", "--peers", "a:1,b"], "peer entry 'b' is not host:port"),
    (RING + ["--seed", "1", "--peers", "a:1,b:x"], "peer entry 'b:x' is not host:port"),
])
def test_usage_errors_exit_2(args, fragment):
    assert_one_line_error(run_hosts(*args), 2, fragment)


def test_bad_input_files_exit_2(tmp_path):
    wrong_shape = tmp_path / "shape.npy"
    np.save(wrong_shape, np.zeros((2, 5), np.int32))
    assert_one_line_error(run_hosts(*WORKER, "--input", str(wrong_shape)), 2,
                          "has shape (2, 5), expected (10,)")
    wrong_type = tmp_path / "type.npy"
    np.save(wrong_type, np.zeros(10, np.float64))
    assert_one_line_error(run_hosts(*WORKER, "--input", str(wrong_type)), 2,
                          "has dtype float64, which does not fit int32")
    not_finite = tmp_path / "nan.npy"
    np.save(not_finite, np.array([1.0] * 9 + [np.nan], np.float32))
    assert_one_line_error(run_hosts(*WORKER, "--dtype", "float32", "--input", str(not_finite)), 2,
                          "input cannot be aggregated: block floating point cannot carry NaN")


def test_worker_without_a_switch_fails_with_the_job_and_slot(tmp_path):
    # Nobody listens on the switch port: the worker gives up after its retries.
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)   # bound, never read
    silent.bind(("127.0.0.1", 0))
    job = 5000 + os.getpid() % 20000
    try:
        completed = run_hosts("worker", "--job", str(job), "--rank", "0", "--world", "2",
                              "--elements", "10", "--seed", "1", "--bind", "127.0.0.1",
                              "--switch-ip", "127.0.0.1", "--switch-port",
                              str(silent.getsockname()[1]), "--timeout-ms", "10",
                              "--max-retries", "2", "--json", str(tmp_path / "r.json"))
    finally:
        silent.close()
    assert_one_line_error(completed, 1, f"job {job}: no result from the switch for slot 0 "
                                        "(chunk 0, chunk offset 0, version 0) after 2 retransmissions")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["correct"] is None and report["retransmissions"] == 2
    assert report["error"].startswith(f"job {job}: no result")


def test_ring_without_peers_fails_with_the_missing_rank():
    completed = run_hosts(*RING, "--seed", "1", "--peers", "127.0.0.1:1,127.0.0.1:2",
                          "--timeout-s", "0.3")
    assert completed.returncode == 1
    assert completed.stderr.count("\n") == 1
    assert "ring rank 0: could not connect to rank 1 at 127.0.0.1:2 within 0.3s" in completed.stderr


def test_progress_lines_on_stderr_every_interval(monkeypatch, capsys):
    from hosts.ina import worker
    from hosts.ina.engine import AggregationEngine, EngineConfig, Int32Schedule

    clock = [100.0]
    monkeypatch.setattr(worker.time, "monotonic", lambda: clock[0])
    engine = AggregationEngine(Int32Schedule(np.zeros(40, np.int32), 4),
                               EngineConfig(job_id=2, contributor=0, window=2))
    printer = worker.ProgressPrinter("job 2 rank 0")
    printer(engine)
    clock[0] += worker.PROGRESS_INTERVAL_S
    printer(engine)
    printer(engine)                           # same instant: nothing new
    # 10 chunks, and a closing round for each of the 2 slots
    assert capsys.readouterr().err == "job 2 rank 0: 0/12 rounds (0%), 0 retransmissions\n"
