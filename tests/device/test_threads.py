"""Several datapath threads in the native packet loop (p4io_set_threads, `p4switch run
--threads`): a register read-modify-write per frame from four ports at once stays atomic, and
threads = 1 and threads = N end with identical registers, counters and returned values.
The same run on two workers with io.c and the generated pipeline built for ThreadSanitizer, the
control plane reading registers meanwhile, in a child that preloads libtsan. Also the
`--threads` command line."""
import os
import socket
import subprocess
import sys
import threading

import pytest

from device_env import REPO, Network, SwitchProcess
from p4switch.backend.c.io import NativePorts, NativePortsError

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "concurrent_sum.p4")
ETHERTYPE = 0x88b5
CELLS = 4                  # register cells the frames add to
FRAMES_PER_HOST = 1500


def sum_frame(host, seq: int) -> bytes:
    """Add seq % 7 + 1 to cell seq % CELLS; `old` (the last 4 bytes) comes back filled in."""
    return (b"\x02" + b"\x00" * 5 + bytes.fromhex(host.mac.replace(":", ""))
            + ETHERTYPE.to_bytes(2, "big") + bytes([seq % CELLS])
            + (seq % 7 + 1).to_bytes(4, "big") + b"\x00" * 4).ljust(60, b"\x00")


TSAN_FLAGS = ("-O1", "-g", "-fsanitize=thread")


def run_sums(network, threads: int, extra_flags=()) -> dict:
    """Every host sends FRAMES_PER_HOST frames at once through a C switch running
    concurrent_sum.p4 on `threads` workers (the switch and the loop built with
    `extra_flags`), the control plane reading a register meanwhile; the registers, counters
    and the (cell, add, old) of every frame that came back."""
    import p4switch
    from p4switch.backend.c.binding import NativeSwitch
    program = p4switch.compile_file(PROGRAM)
    switch = NativeSwitch(program, extra_flags=extra_flags)
    ports = NativePorts(threads=threads, extra_flags=extra_flags)
    try:
        for host in network.hosts:
            ports.add_port(host.port, host.switch_interface)
        ports.set_pipeline(switch.process_function, switch.handle)
        loop = ports.start()
        senders = [threading.Thread(target=lambda h=host: [
            h.send(sum_frame(h, seq)) for seq in range(FRAMES_PER_HOST)])
            for host in network.hosts]
        for sender in senders:
            sender.start()
        while any(sender.is_alive() for sender in senders):
            assert switch.register("sums").read(0) >= 0     # the control plane meanwhile
        for sender in senders:
            sender.join()
        returned = []
        for host in network.hosts:
            frames = host.receive(count=FRAMES_PER_HOST, timeout=10)
            assert len(frames) == FRAMES_PER_HOST, (host.port, len(frames))
            returned += [(f[14], int.from_bytes(f[15:19], "big"), int.from_bytes(f[19:23], "big"))
                         for f in frames]
        ports.set_pipeline(None, None)
    finally:
        ports.close()
    loop.join(5)
    return {"sums": [switch.register("sums").read(i) for i in range(16)],
            "frames_in": [switch.counter("frames_in").read(i)[0] for i in range(16)],
            "returned": sorted(returned)}


def assert_atomic(result: dict, hosts: int) -> None:
    """Each cell ends at the exact sum of what was added to it, and the old values handed
    back for a cell are the running sums of one order of its updates: no update lost."""
    adds = {cell: [] for cell in range(CELLS)}
    for seq in range(FRAMES_PER_HOST):
        adds[seq % CELLS] += [seq % 7 + 1] * hosts
    for cell in range(CELLS):
        olds = sorted(old for c, _, old in result["returned"] if c == cell)
        assert result["sums"][cell] == sum(adds[cell])
        # distinct running sums, each below the total, and as many as updates
        assert len(set(olds)) == len(olds) == len(adds[cell])
        assert olds[0] == 0 and olds[-1] < sum(adds[cell])
    assert result["frames_in"][1:hosts + 1] == [FRAMES_PER_HOST] * hosts


@pytest.fixture
def network():
    net = Network(4)
    try:
        for host in net.hosts:
            host.sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)     # SO_RCVBUFFORCE
        yield net
    finally:
        net.close()


@pytest.mark.emulation
def test_one_thread_and_several_give_identical_state(network):
    one = run_sums(network, 1)
    assert_atomic(one, len(network.hosts))
    several = run_sums(network, 4)
    assert_atomic(several, len(network.hosts))
    assert several["sums"] == one["sums"]
    assert several["frames_in"] == one["frames_in"]
    # the same (cell, add) pairs came back; the old values differ only by interleaving
    assert [r[:2] for r in several["returned"]] == [r[:2] for r in one["returned"]]


@pytest.mark.emulation
def test_two_workers_under_thread_sanitizer(network):
    libtsan = subprocess.run(["gcc", "-print-file-name=libtsan.so"], capture_output=True,
                             text=True).stdout.strip()
    if not os.path.isabs(libtsan):
        pytest.skip("libtsan is not installed")
    hosts = [(h.namespace, h.switch_interface, h.port, h.mac, h.ip) for h in network.hosts]
    for host in network.hosts:          # the child opens its own
        host.sock.close()
        host.sock = None
    env = dict(os.environ, LD_PRELOAD=libtsan, TSAN_OPTIONS="halt_on_error=1 exitcode=66",
               PYTHONPATH=os.pathsep.join([HERE, REPO, os.environ.get("PYTHONPATH", "")]))
    code = ("import test_threads as t; from device_env import Host; "
            f"hosts = [Host(*spec) for spec in {hosts!r}]; "
            "[h.open_socket() for h in hosts]; t.tsan_child(hosts); print('CHILD OK')")
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    assert "ThreadSanitizer" not in result.stderr, result.stderr[-6000:]
    assert result.returncode == 0 and "CHILD OK" in result.stdout, result.stderr[-6000:]


def tsan_child(hosts) -> None:
    class Hosts:
        pass
    network = Hosts()
    network.hosts = hosts
    for host in hosts:
        host.sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)         # SO_RCVBUFFORCE
    assert_atomic(run_sums(network, 2, extra_flags=TSAN_FLAGS), len(hosts))


@pytest.mark.emulation
def test_run_with_two_threads_records_them_and_updates_atomically(network, tmp_path):
    """`p4switch run --threads 2` on four ports: the status file says 2 threads in the native
    loop, and the running sums handed back per cell are all distinct (no update lost)."""
    import json
    import time
    status = tmp_path / "status.json"
    switch = SwitchProcess(network, None, program=PROGRAM,
                           extra=["--backend", "c", "--threads", "2",
                                  "--status-file", str(status)])
    try:
        deadline = time.monotonic() + 30
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        recorded = json.loads(status.read_text())
        assert (recorded["backend"], recorded["native_io"], recorded["threads"]) == \
            ("c", True, 2)
        senders = [threading.Thread(target=lambda h=host: [
            h.send(sum_frame(h, seq)) for seq in range(FRAMES_PER_HOST)])
            for host in network.hosts]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        olds = {cell: [] for cell in range(CELLS)}
        for host in network.hosts:
            frames = host.receive(count=FRAMES_PER_HOST, timeout=10)
            assert len(frames) == FRAMES_PER_HOST, (host.port, len(frames))
            for f in frames:
                olds[f[14]].append(int.from_bytes(f[19:23], "big"))
    finally:
        assert switch.stop() == 0
    for cell, values in olds.items():
        total = sum(seq % 7 + 1 for seq in range(cell, FRAMES_PER_HOST, CELLS)) * 4
        assert len(set(values)) == len(values) == FRAMES_PER_HOST // CELLS * 4
        assert min(values) == 0 and max(values) < total


def test_thread_count_out_of_range_is_refused():
    for bad in (0, 65):
        with pytest.raises(NativePortsError, match=f"threads must be 1 to 64, not {bad}"):
            NativePorts(threads=bad)
    with NativePorts(threads=3) as ports:
        assert ports.threads == 3


def test_threads_option_out_of_range_is_a_one_line_error():
    result = subprocess.run([sys.executable, "-m", "p4switch", "run", "--no-p4", "--threads",
                             "0"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == "p4switch run: --threads must be 1 to 64, not 0"
