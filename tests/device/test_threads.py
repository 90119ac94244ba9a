"""Several datapath threads in the native packet loop (p4io_set_threads, `p4switch run
--threads`): a register read-modify-write per frame from four ports at once stays atomic, and
threads = 1 and threads = N end with identical registers, counters and returned values.
Also the `--threads` command line and the status file's thread count."""
import os
import socket
import subprocess
import sys
import threading

import pytest

from device_env import REPO, Network
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


def run_sums(network: Network, threads: int) -> dict:
    """Every host sends FRAMES_PER_HOST frames at once through a C switch running
    concurrent_sum.p4 on `threads` workers; the registers, counters and the (cell, add, old)
    of every frame that came back."""
    import p4switch
    program = p4switch.compile_file(PROGRAM)
    switch = p4switch.Switch(program, backend="c")
    assert switch.backend == "c"
    ports = NativePorts(threads=threads)
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
