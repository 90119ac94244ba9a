"""`p4switch run` and `p4switch group` stop with exit 0 however many SIGTERMs arrive at once
(Mininet sends two).  A handler that took a lock (threading.Event.set) could be interrupted by
the next signal inside that lock and hang the process until SIGKILL, losing its final stats."""

import signal
import subprocess
import sys
import time

import pytest

from device_env import REPO
from test_group import free_ports
from p4switch.device.stopflag import StopFlag
from topologies.switches import port_accepts

BURST = 200


def wait_listening(process, port: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()
        if port_accepts(port):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


@pytest.mark.parametrize("command", ["run", "group"])
def test_a_burst_of_sigterms_stops_the_switch_with_exit_0(command):
    for attempt in range(3):
        port, = free_ports(1)
        process = subprocess.Popen(
            [sys.executable, "-m", "p4switch", command, "--no-p4", "--device-id", "1",
             "--grpc-server-addr", f"127.0.0.1:{port}"], cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_listening(process, port)
            for _ in range(BURST):
                process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stdout.close()


def test_stop_flag_wait_returns_when_set_or_timed_out():
    flag = StopFlag()
    started = time.monotonic()
    assert flag.wait(0.1) is False and time.monotonic() - started >= 0.1
    flag.set()
    assert flag.is_set() and flag.wait(10) is True
