"""`python -m p4switch group`: several devices in one process, each with its own device id
and P4Runtime server; the same pipeline pushed to each (one Program shared), entries written
to one seen on that one only; SIGTERM stops all with exit 0; bad command lines exit 2 with
one line."""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from controller.client import Pipeline, SwitchConnection, SwitchError
from controller.entries import Lpm, TableEntry
from device_env import PROGRAM, REPO, compile_program
from p4switch.device.group import split_members
from contracts.cli import UsageError


def free_ports(count: int) -> list:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def group(*argv):
    return subprocess.Popen([sys.executable, "-m", "p4switch", "group", *argv], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_split_members_cuts_at_separators_and_refuses_empty_members():
    assert split_members(["--no-p4", "--device-id", "1", "---", "--no-p4"]) == \
        [["--no-p4", "--device-id", "1"], ["--no-p4"]]
    for argv in ([], ["---", "--no-p4"], ["--no-p4", "---"], ["a", "---", "---", "b"]):
        with pytest.raises(UsageError):
            split_members(argv)


@pytest.mark.parametrize("argv, message", [
    (["--no-p4", "--device-id", "1", "---", "--no-p4", "--device-id", "1",
      "--grpc-server-addr", "127.0.0.1:1"], "two members have device id 1"),
    (["--no-p4", "---"], "an empty member"),
    (["--no-p4", "---", "-i", "x"], "member 2:"),
])
def test_bad_command_lines_exit_2_with_one_line(argv, message):
    result = subprocess.run([sys.executable, "-m", "p4switch", "group", *argv], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def test_devices_of_one_process_are_separate_switches(tmp_path):
    p4info, device_config = compile_program(PROGRAM, tmp_path)
    pipeline = Pipeline.from_files(p4info, device_config)
    ports = free_ports(3)
    argv = []
    for i, port in enumerate(ports):
        argv += (["---"] if i else []) + ["--no-p4", "--device-id", str(10 + i),
                                          "--grpc-server-addr", f"127.0.0.1:{port}"]
    process = group(*argv)
    connections = []
    try:
        for i, port in enumerate(ports):
            connections.append(SwitchConnection(f"s{i}", f"127.0.0.1:{port}", 10 + i)
                               .connect(timeout=60))
        for conn in connections:
            conn.set_pipeline(pipeline)
        route = TableEntry("s1", "MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000001, 32)},
                           "MyIngress.forward", {"dstMac": 0x020000000001, "port": 2})
        connections[1].insert_entries([route])
        counts = [len(conn.read_table("MyIngress.ipv4_lpm")) for conn in connections]
        assert counts == [0, 1, 0]
        with pytest.raises(SwitchError):          # each server is its own device id only
            SwitchConnection("wrong", f"127.0.0.1:{ports[0]}", 11).connect(timeout=10)
    finally:
        for conn in connections:
            conn.close()
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert "3 switches up (device ids 10, 11, 12)" in output
