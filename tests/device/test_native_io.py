"""The native packet I/O loop of the C back end (p4switch/backend/c/runtime/io.c, bound by
p4switch/backend/c/io.py), driven with the "wire" pipeline of native_wire.c: unit tests that
need no network, and emulation tests over veth pairs to hosts in network namespaces."""
import os
import select
import socket
import subprocess
import sys
import threading
import time

import pytest

from native_wire import Wire
from p4switch.backend.c import build
from p4switch.backend.c.io import NativePorts, NativePortsError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CPU = 255
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="raw sockets need root")


def frame(dst: str, src: str, payload: bytes, ethertype: int = 0x88b5) -> bytes:
    """An Ethernet frame of a local experimental EtherType (no stack reacts to it)."""
    return (bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
            + ethertype.to_bytes(2, "big") + payload)


def padded(seq: int, size: int) -> bytes:
    return seq.to_bytes(4, "big") + bytes((seq + i) & 0xff for i in range(size - 18))


@pytest.fixture
def loop():
    ports = NativePorts(cpu_port=CPU)
    wire = Wire(1, 2, CPU)
    ports.set_pipeline(wire.fn, wire.ptr)
    yield ports, wire
    ports.close()
    wire.free()


# ---- unit tests: no interfaces needed -------------------------------------------------

def test_create_and_close_twice():
    ports = NativePorts()
    assert ports.stats(1) == dict.fromkeys(
        ("rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "tx_dropped", "rx_dropped"), 0)
    ports.close()
    ports.close()
    with pytest.raises(ValueError):
        ports.inject(1, b"x" * 60)


def test_bad_interface_is_a_one_line_error():
    with NativePorts() as ports:
        with pytest.raises(NativePortsError) as error:
            ports.add_port(1, "p4nosuch9")
    message = str(error.value)
    assert "\n" not in message
    if IS_ROOT:
        assert message == "cannot open interface p4nosuch9: No such device"
    else:
        assert message == "opening a raw socket for p4nosuch9 needs root (CAP_NET_RAW)"


def test_interface_name_too_long():
    with NativePorts() as ports, pytest.raises(NativePortsError, match="invalid name"):
        ports.add_port(1, "x" * 40)


@needs_root
def test_port_number_taken_twice():
    with NativePorts() as ports:
        ports.add_port(3, "lo")
        with pytest.raises(NativePortsError, match=r"^port 3 is already open \(on lo\)$"):
            ports.add_port(3, "lo")


def test_inject_runs_the_pipeline_and_counts_ports_without_interfaces(loop):
    ports, wire = loop
    assert ports.inject(1, b"\x01" * 60)            # to port 2: no interface
    assert ports.global_stats()["no_port_dropped"] == 1
    assert not ports.inject(9, b"\x01" * 60)        # the wire refuses port 9: -1
    assert ports.global_stats()["pipeline_dropped"] == 1
    assert wire.frames() == 2


def test_cpu_port_queue_and_its_fd(loop):
    ports, _ = loop
    fd = ports.cpu_fd()
    assert select.select([fd], [], [], 0)[0] == []
    assert ports.pop_cpu() is None
    sent = [b"\xff" + bytes([n]) * 70 for n in range(3)]
    for data in sent:
        assert ports.inject(1, data)
    assert select.select([fd], [], [], 0)[0] == [fd]
    assert [ports.pop_cpu() for _ in range(3)] == sent
    assert ports.pop_cpu() is None
    assert select.select([fd], [], [], 0)[0] == []
    assert ports.send(CPU, b"\x00straight to the CPU")
    assert ports.pop_cpu() == b"\x00straight to the CPU"


def test_cpu_queue_is_bounded(loop):
    ports, _ = loop
    for n in range(4096 + 5):
        ports.inject(1, b"\xff" + n.to_bytes(4, "big"))
    assert ports.global_stats()["cpu_dropped"] == 5
    popped = []
    while (data := ports.pop_cpu()) is not None:
        popped.append(data)
    assert popped == [b"\xff" + n.to_bytes(4, "big") for n in range(4096)]


@needs_root
def test_fan_out_beyond_one_transmit_batch(loop):
    ports, _ = loop
    ports.add_port(2, "lo")
    data = b"\xfe\x40" + b"\x00" * 98                # 16 * 64 = 1024 copies
    for _ in range(3):
        assert ports.inject(1, data)
    assert ports.stats(2)["tx_frames"] + ports.stats(2)["tx_dropped"] == 3 * 1024
    assert ports.stats(2)["tx_bytes"] == ports.stats(2)["tx_frames"] * 100


def test_no_pipeline_drops_and_send_to_unknown_port(loop):
    ports, _ = loop
    ports.set_pipeline(None, None)
    assert not ports.inject(1, b"\xff" * 60)
    assert ports.pop_cpu() is None
    assert ports.global_stats()["pipeline_dropped"] == 1
    assert not ports.send(7, b"\x01" * 60)
    assert ports.global_stats()["no_port_dropped"] == 1


def test_stop_before_and_while_running():
    ports = NativePorts()
    ports.stop()
    running = threading.Thread(target=ports.run)    # a stopped loop returns at once
    running.start()
    running.join(30)
    assert not running.is_alive()
    ports.close()
    ports = NativePorts()
    thread = ports.start()
    time.sleep(0.1)
    assert thread.is_alive()
    ports.stop()
    thread.join(30)
    assert not thread.is_alive()
    ports.close()


def test_io_c_is_clean_under_extra_warnings():
    build.build_shared("p4io-warnings", {"io.c": build.runtime_source("io.c")},
                       extra_flags=("-Wextra", "-Wno-unused-parameter", "-Wno-sign-compare",
                                    "-Wshadow", "-Werror"))


# ---- under AddressSanitizer/UBSan, in a child process --------------------------------

def _asan_env() -> dict:
    libasan = subprocess.run([build.compiler() or "gcc", "-print-file-name=libasan.so"],
                             capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(libasan) or not os.path.exists(libasan):
        pytest.skip("libasan is not installed")
    env = dict(os.environ, LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    env["PYTHONPATH"] = os.pathsep.join([HERE, REPO, env.get("PYTHONPATH", "")])
    return env


def _run_child(code: str, timeout: float = 300) -> None:
    result = subprocess.run([sys.executable, "-c", code], env=_asan_env(), cwd=REPO,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0 and "CHILD OK" in result.stdout, \
        result.stdout[-3000:] + result.stderr[-6000:]
    assert "AddressSanitizer" not in result.stderr and "runtime error" not in result.stderr, \
        result.stderr[-6000:]


def test_unit_paths_under_sanitizers():
    _run_child("import test_native_io as t; t.sanitized_unit_check(); print('CHILD OK')")


def sanitized_unit_check() -> None:
    """inject, the CPU queue and its overflow, send, stop, with sanitizer builds."""
    ports = NativePorts(cpu_port=CPU, extra_flags=build.SANITIZER_FLAGS)
    wire = Wire(1, 2, CPU, extra_flags=build.SANITIZER_FLAGS)
    ports.set_pipeline(wire.fn, wire.ptr)
    if os.geteuid() == 0:
        ports.add_port(2, "lo")
        assert ports.inject(1, b"\xfe\x40" + b"\x00" * 98)
        assert ports.stats(2)["tx_frames"] + ports.stats(2)["tx_dropped"] == 1024
    for n in range(4100):
        ports.inject(1, b"\xff" + n.to_bytes(2, "big") * 50)
    assert ports.inject(2, b"\x01" * 2000) and not ports.send(4, b"x")
    count = 0
    while ports.pop_cpu() is not None:
        count += 1
    assert count == 4096 and ports.global_stats()["cpu_dropped"] == 4
    thread = ports.start()
    ports.inject(1, b"\xff" * 100)
    assert ports.pop_cpu() == b"\xff" * 100
    ports.close()
    thread.join(2)
    wire.free()


# ---- emulation: veth pairs to hosts in network namespaces -----------------------------

def big_buffers(host) -> None:
    """Room on the host's socket for everything a test sends before it reads."""
    host.sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)       # SO_RCVBUFFORCE


@pytest.fixture
def network():
    from device_env import Network
    net = Network(2)
    try:
        for host in net.hosts:
            big_buffers(host)
        yield net
    finally:
        net.close()


TUNINGS = {"ring": (8192, 50, 2), "recvmmsg": (0, 50, 2), "no-nap": (8192, 0, 2)}


@pytest.fixture(params=["ring", "recvmmsg", "no-nap"])
def switch(network, request):
    """The loop on the network's two ports with the wire between them, receiving through
    PACKET_MMAP rings or with recvmmsg, sleeping under load or always waiting on sockets."""
    ports = NativePorts(cpu_port=CPU)
    ports.set_tuning(*TUNINGS[request.param])
    wire = Wire(1, 2, CPU)
    try:
        for host in network.hosts:
            ports.add_port(host.port, host.switch_interface)
        ports.set_pipeline(wire.fn, wire.ptr)
        thread = ports.start()
        yield ports, wire
    finally:
        ports.close()
        wire.free()
    thread.join(2)
    assert not thread.is_alive()


def _exchange(h1, h2, sizes, direction_tag: int) -> tuple[list, list]:
    sent = [frame(h2.mac, h1.mac, bytes([direction_tag]) + padded(n, size - 1))
            for n, size in enumerate(sizes)]
    for data in sent:
        h1.send(data)
    return sent, h2.receive(count=len(sent), timeout=3)


@pytest.mark.emulation
def test_frames_cross_byte_identical_both_ways(switch, network):
    ports, wire = switch
    h1, h2 = network.hosts
    sizes = [60, 61, 64, 100, 128, 511, 1000, 1514] * 25
    sent, got = _exchange(h1, h2, sizes, 1)
    assert got == sent
    back, got_back = _exchange(h2, h1, sizes, 2)
    assert got_back == back
    total = sum(sizes)
    s1, s2 = ports.stats(1), ports.stats(2)
    assert (s1["rx_frames"], s1["rx_bytes"]) == (len(sizes), total)
    assert (s2["tx_frames"], s2["tx_bytes"]) == (len(sizes), total)
    assert (s2["rx_frames"], s1["tx_frames"]) == (len(sizes), len(sizes))
    assert s1["tx_dropped"] == s2["tx_dropped"] == s1["rx_dropped"] == s2["rx_dropped"] == 0
    assert wire.frames() == 2 * len(sizes)
    # the loop's own transmissions are not received back
    assert h1.receive(timeout=0.2) == [] and h2.receive(timeout=0.2) == []


@pytest.mark.emulation
def test_vlan_tags_are_kept(switch, network):
    h1, h2 = network.hosts
    tagged = frame(h2.mac, h1.mac, (0x2064).to_bytes(2, "big") + b"\x88\xb5" + padded(1, 80),
                   ethertype=0x8100)                       # PCP 1, VLAN 100
    qinq = frame(h2.mac, h1.mac, (0x00c8).to_bytes(2, "big") + b"\x81\x00\x00\x0a\x88\xb5"
                 + padded(2, 80), ethertype=0x88a8)        # 802.1ad outer 200, inner 10
    for data in (tagged, qinq):
        h1.send(data)
    assert h2.receive(count=2) == [tagged, qinq]


def vlan_frame(dst: str, src: str, seq: int, size: int) -> bytes:
    """A VLAN-tagged frame of `size` bytes: up to MTU + 18 on a link of that MTU."""
    return frame(dst, src, b"\x00\x64\x88\xb5" + padded(seq, size - 4), ethertype=0x8100)


@pytest.mark.emulation
def test_tagged_full_size_frames_among_small_ones_keep_their_order(switch, network):
    """Tagged 1518-byte frames (MTU + 18, the most a link of MTU 1500 carries) between small
    ones: everything arrives, in order, and is counted."""
    ports, _ = switch
    h1, h2 = network.hosts
    sent = []
    for n in range(300):
        sent.append(vlan_frame(h2.mac, h1.mac, n, 1518) if n % 3 == 1
                    else frame(h2.mac, h1.mac, padded(n, 100 + n % 7)))
    for data in sent:
        h1.send(data)
    assert h2.receive(count=len(sent), timeout=3) == sent
    stats = ports.stats(2)
    assert (stats["tx_frames"], stats["tx_bytes"]) == (len(sent), sum(map(len, sent)))
    assert stats["tx_dropped"] == 0


@pytest.mark.emulation
def test_a_congested_port_counts_what_it_drops(switch, network):
    """A shaped egress (tbf with a small queue) refuses most of a 1,600-frame fan-out: what
    it refused is counted as dropped, what it took arrives."""
    ports, _ = switch
    h1, h2 = network.hosts
    subprocess.run(["tc", "qdisc", "add", "dev", h2.switch_interface, "root", "tbf", "rate",
                    "20mbit", "burst", "20kb", "limit", "30kb"], check=True)
    try:
        copies = 16 * 100
        fan_out = frame(h2.mac, h1.mac, padded(1, 1000))
        fan_out = b"\xfe\x64" + fan_out[2:]                  # 100: 16 * 100 copies
        h1.send(fan_out)
        deadline = time.monotonic() + 3
        while (sum(ports.stats(2)[k] for k in ("tx_frames", "tx_dropped")) < copies
               and time.monotonic() < deadline):
            time.sleep(0.01)
        stats = ports.stats(2)
        assert stats["tx_frames"] + stats["tx_dropped"] == copies
        assert 0 < stats["tx_dropped"] < copies
        got = h2.receive(count=stats["tx_frames"], timeout=3)
        assert len(got) == stats["tx_frames"] and set(got) == {fan_out}
        assert h2.receive(timeout=0.2) == []
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", h2.switch_interface, "root"])


@pytest.mark.emulation
def test_cpu_port_frames_reach_pop_cpu(switch, network):
    ports, _ = switch
    h1, h2 = network.hosts
    punted = frame("ff:ff:ff:ff:ff:ff", h1.mac, padded(5, 80))
    h1.send(punted)
    assert select.select([ports.cpu_fd()], [], [], 2)[0] == [ports.cpu_fd()]
    assert ports.pop_cpu() == punted
    assert ports.pop_cpu() is None
    assert h2.receive(timeout=0.2) == []


@pytest.mark.emulation
def test_inject_and_send(switch, network):
    ports, _ = switch
    h1, h2 = network.hosts
    injected = frame(h2.mac, h1.mac, padded(6, 100))
    assert ports.inject(1, injected)                    # as if from port 1: out of port 2
    assert h2.receive(count=1) == [injected]
    direct = frame(h1.mac, h2.mac, padded(7, 200))
    assert ports.send(1, direct)                        # straight out of port 1
    assert h1.receive(count=1) == [direct]
    assert h2.receive(timeout=0.2) == []
    assert ports.stats(1)["rx_frames"] == 0 and ports.stats(1)["tx_frames"] == 1


@pytest.mark.emulation
def test_pipeline_swapped_while_running(switch, network):
    ports, wire = switch
    h1, h2 = network.hosts
    ports.set_pipeline(None, None)
    h1.send(frame(h2.mac, h1.mac, padded(8, 100)))
    assert h2.receive(timeout=0.3) == []
    other = Wire(1, 2, CPU)
    ports.set_pipeline(other.fn, other.ptr)
    data = frame(h2.mac, h1.mac, padded(9, 100))
    h1.send(data)
    assert h2.receive(count=1) == [data]
    ports.set_pipeline(wire.fn, wire.ptr)
    other.free()
    assert other.ptr is None


@pytest.mark.emulation
def test_port_added_while_running(network):
    h1, h2 = network.hosts
    wire = Wire(1, 2, CPU)
    with NativePorts(cpu_port=CPU) as ports:
        ports.add_port(1, h1.switch_interface)
        ports.set_pipeline(wire.fn, wire.ptr)
        thread = ports.start()
        h1.send(frame(h2.mac, h1.mac, padded(1, 100)))      # port 2 not open yet: dropped
        deadline = time.monotonic() + 2
        while ports.global_stats()["no_port_dropped"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ports.global_stats()["no_port_dropped"] == 1
        ports.add_port(2, h2.switch_interface)
        data = frame(h2.mac, h1.mac, padded(2, 100))
        h1.send(data)
        assert h2.receive(count=1) == [data]
    thread.join(2)
    wire.free()


@pytest.mark.emulation
def test_a_burst_is_forwarded_without_loss(switch, network):
    ports, _ = switch
    h1, h2 = network.hosts
    sent = [frame(h2.mac, h1.mac, padded(n, 100)) for n in range(5000)]
    received = []
    receiver = threading.Thread(target=lambda: received.extend(
        h2.receive(count=len(sent), timeout=5)))
    receiver.start()
    for data in sent:
        h1.send(data)
    receiver.join()
    assert received == sent
    assert ports.stats(2)["tx_frames"] == len(sent)


@pytest.mark.emulation
def test_everything_is_removed_afterwards():
    from device_env import Network
    threads_before = threading.active_count()
    fds_before = len(os.listdir("/proc/self/fd"))
    network = Network(2)
    try:
        ports = NativePorts(cpu_port=CPU)
        wire = Wire(1, 2, CPU)
        for host in network.hosts:
            ports.add_port(host.port, host.switch_interface)
        ports.set_pipeline(wire.fn, wire.ptr)
        thread = ports.start()
        h1, h2 = network.hosts
        data = frame(h2.mac, h1.mac, padded(1, 100))
        h1.send(data)
        assert h2.receive(count=1) == [data]
        ports.close()
        thread.join(30)
        assert not thread.is_alive()
        wire.free()
    finally:
        network.close()
    assert threading.active_count() == threads_before
    assert len(os.listdir("/proc/self/fd")) == fds_before
    names = {host.namespace for host in network.hosts}
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not names & {line.split()[0] for line in listed.splitlines() if line.strip()}
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not any(f" {host.switch_interface}@" in links or f" {host.switch_interface}:" in links
                   for host in network.hosts)


@pytest.mark.emulation
def test_forwarding_under_sanitizers(network):
    h1, h2 = network.hosts
    hosts = [(h.namespace, h.switch_interface, h.port, h.mac, h.ip) for h in network.hosts]
    h1.sock.close()
    h2.sock.close()
    h1.sock = h2.sock = None
    _run_child(f"import test_native_io as t; t.sanitized_forwarding_check({hosts!r}); "
               "print('CHILD OK')")


def sanitized_forwarding_check(hosts) -> None:
    """Forwarding both ways, a VLAN tag, the CPU port, inject and send, on two worker
    threads, with sanitizer builds of io.c and the wire (run in a child that has libasan
    preloaded)."""
    from device_env import Host
    h1, h2 = (Host(*spec) for spec in hosts)
    for host in (h1, h2):
        host.open_socket()
        big_buffers(host)
    # two workers: each port received by its own thread, both sending on the other port
    ports = NativePorts(cpu_port=CPU, extra_flags=build.SANITIZER_FLAGS, threads=2)
    wire = Wire(1, 2, CPU, extra_flags=build.SANITIZER_FLAGS)
    for host in (h1, h2):
        ports.add_port(host.port, host.switch_interface)
    ports.set_pipeline(wire.fn, wire.ptr)
    thread = ports.start()
    try:
        sizes = [60, 100, 1514] * 100
        sent, got = _exchange(h1, h2, sizes, 1)
        assert got == sent, (len(got), len(sent))
        back, got_back = _exchange(h2, h1, sizes, 2)
        assert got_back == back
        tagged = frame(h2.mac, h1.mac, b"\x20\x64\x88\xb5" + padded(1, 80), ethertype=0x8100)
        large = vlan_frame(h2.mac, h1.mac, 2, 1518)
        for data in (tagged, large, tagged):
            h1.send(data)
        assert h2.receive(count=3) == [tagged, large, tagged]
        punted = b"\xff" * 6 + frame(h1.mac, h1.mac, padded(2, 80))[6:]
        h1.send(punted)
        deadline = time.monotonic() + 2
        while (data := ports.pop_cpu()) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert data == punted
        assert ports.inject(2, back[0]) and h1.receive(count=1) == [back[0]]
        assert ports.send(2, sent[0]) and h2.receive(count=1) == [sent[0]]
        assert ports.stats(1)["rx_frames"] == len(sizes) + 4
    finally:
        ports.close()
        thread.join(2)
        wire.free()
        for host in (h1, h2):
            host.sock.close()
