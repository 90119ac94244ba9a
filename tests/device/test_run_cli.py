"""`python -m p4switch run` command-line errors: one line on stderr, no traceback, exit 2 for
bad usage or input, 1 when the gRPC address cannot be bound."""
import socket
import subprocess
import sys

import pytest

from device_env import REPO, free_tcp_port


def run(*argv, timeout=60):
    return subprocess.run([sys.executable, "-m", "p4switch", "run", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(result, code):
    assert result.returncode == code
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("argv", [
    ["--no-p4", "-i", "1"],
    ["--no-p4", "--grpc-server-addr", "bad"],
    ["missing_program.p4"],
    [],
])
def test_bad_usage_exits_2(argv):
    assert_one_line_error(run(*argv), 2)


@pytest.mark.parametrize("spec, message", [
    ("1:rx", "is not PORT:rx|tx|both:KEY=VALUE"),
    ("1:sideways:loss=1", "direction 'sideways' is not rx, tx or both"),
    ("1:rx:loss=120", "loss is a percentage"),
    ("1:tx:delay=-5", "delay must be a finite number >= 0"),
    ("1:both:jitter=2,bogus=1", "unknown key 'bogus'"),
    ("2:rx:loss=1", "port 2 is not given with -i"),
])
def test_bad_impairment_exits_2_naming_the_problem(spec, message):
    result = run("--no-p4", "-i", "1@nowhere0", "--impair", spec)
    assert_one_line_error(result, 2)
    assert message in result.stderr and spec in result.stderr


def test_impairing_a_port_direction_twice_exits_2():
    result = run("--no-p4", "-i", "1@nowhere0", "--impair", "1:both:loss=1",
                 "--impair", "1:rx:dup=1")
    assert_one_line_error(result, 2)
    assert "port 1 rx is already impaired" in result.stderr


@pytest.mark.emulation
def test_missing_interface_exits_2():
    result = run("--no-p4", "-i", f"1@nx{__import__('os').getpid() % 100000}")
    assert_one_line_error(result, 2)
    assert "cannot open interface" in result.stderr


def test_unwritable_impairment_stats_file_exits_2():
    result = run("--no-p4", "--impair-stats", "/nonexistent-dir/stats.json")
    assert_one_line_error(result, 2)
    assert "cannot write --impair-stats" in result.stderr


@pytest.mark.emulation
def test_busy_grpc_address_exits_1():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run("--no-p4", "--grpc-server-addr", f"127.0.0.1:{port}")
    assert_one_line_error(result, 1)


@pytest.mark.parametrize("backend, native_io, why", [
    ("c", True, None), ("python", False, "--backend python")])
def test_status_file_records_the_back_end_that_runs(tmp_path, backend, native_io, why):
    """--status-file says what really runs (results.json takes it from there): the back end
    that runs the program and whether packet I/O is in C."""
    import json
    import time
    status = tmp_path / "s1.status.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "p4switch", "run", "tests/device/ipv4_forward.p4",
         "--backend", backend, "--status-file", str(status),
         "--grpc-server-addr", f"127.0.0.1:{free_tcp_port()}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not status.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status.exists(), process.stderr.read() if process.poll() is not None else ""
        assert json.loads(status.read_text()) == {
            "device_id": 0, "program": "ipv4_forward", "backend": backend,
            "native_io": native_io, "threads": 1, "segmentation_offload": False,
            "why_not_c": why}
    finally:
        process.terminate()
        process.wait(30)
