"""`python -m p4switch run --impair` end to end: a two-port wire program between hosts in two
fresh network namespaces; frames carry sequence numbers, and what arrives is compared with the
switch's --impair-stats counters and pcaps.

Random outcomes are checked against binomial bounds whose false-failure probability is below
1e-6; delays only as lower bounds on the arrival time. The machine may carry other tests'
traffic, and a stray frame can reach a host's veth: the wire program forwards only the tests'
EtherType, so tx counters are exact, and rx counters are checked against the rx pcap."""
import json
import math
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from fractions import Fraction

import pytest

from p4.v1 import p4runtime_pb2

from device_env import PROGRAM as IPV4_PROGRAM, REPO, Network, compile_program, running_switch
from p4rt_client import Client, load_p4info
from p4switch.device.pcap import read_pcap
from p4switch.device.ports import receive_frame

pytestmark = pytest.mark.emulation

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "port_swap.p4")
ETHER_TYPE = 0x88B5                  # IEEE local experimental: no host stack answers it
MAGIC = b"IMPR"
FALSE_FAILURE = 1e-6
_SOCKET_BUFFER = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def device_config(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("impair") / "port_swap.json")
    result = subprocess.run([sys.executable, "-m", "p4switch", "compile", PROGRAM, "-o", path],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def ipv4_compiled(tmp_path_factory):
    """(p4info, device config) of the device tests' IPv4 program, which has PacketOut."""
    return compile_program(IPV4_PROGRAM, tmp_path_factory.mktemp("ipv4"))


@pytest.fixture
def network():
    net = Network(2)
    try:
        for host in net.hosts:      # room for a whole test's frames even if read late
            host.sock.setsockopt(socket.SOL_SOCKET, 33, _SOCKET_BUFFER)   # SO_RCVBUFFORCE
        yield net
    finally:
        net.close()


def frame(src, dst, seq: int, run_tag: int) -> bytes:
    header = bytes.fromhex(dst.mac.replace(":", "") + src.mac.replace(":", ""))
    body = MAGIC + struct.pack("!II", run_tag, seq)
    return header + struct.pack("!H", ETHER_TYPE) + body.ljust(46, b"\0")


def sequence_number(data: bytes, run_tag: int) -> int | None:
    if len(data) < 26 or data[12:14] != struct.pack("!H", ETHER_TYPE) or data[14:18] != MAGIC:
        return None
    tag, seq = struct.unpack_from("!II", data, 18)
    return seq if tag == run_tag else None


class Receiver:
    """Collects (sequence number, arrival time) of our frames arriving at a host, on a thread."""

    def __init__(self, host, run_tag: int):
        self.host, self.run_tag = host, run_tag
        self.arrivals: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        sock = self.host.sock
        sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                data, packet_type = receive_frame(sock)
            except socket.timeout:
                continue
            except OSError:         # the test failed and closed the network under us
                return
            if packet_type == socket.PACKET_OUTGOING:
                continue
            seq = sequence_number(data, self.run_tag)
            if seq is not None:
                self.arrivals.append((seq, time.monotonic()))

    @property
    def sequence(self) -> list[int]:
        return [seq for seq, _ in self.arrivals]

    def stop(self) -> list[int]:
        self._stop.set()
        self._thread.join()
        return self.sequence


def send_numbered(src, dst, count: int, run_tag: int, batch: int = 20,
                  pause: float = 0.01) -> dict[int, float]:
    """Send `count` numbered frames from src to dst, paced so no queue on the way overflows;
    returns each one's send time."""
    sent = {}
    for seq in range(count):
        data = frame(src, dst, seq, run_tag)
        sent[seq] = time.monotonic()
        src.send(data)
        if seq % batch == batch - 1:
            time.sleep(pause)
    return sent


def read_stats(path) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def wait_until(condition, timeout: float = 60.0, what: str = "condition", state=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}"
                         + (f" (now: {state()})" if state else ""))


def binomial_bounds(n: int, p: float, false_failure: float = FALSE_FAILURE) -> tuple[int, int]:
    """(lo, hi) with P(X < lo) + P(X > hi) <= false_failure for X ~ Binomial(n, p)."""
    def pmf(k):
        if p in (0.0, 1.0):
            return float(k == round(n * p))
        return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                        + k * math.log(p) + (n - k) * math.log(1 - p))
    tail, lo = 0.0, 0
    while tail + pmf(lo) <= false_failure / 2:
        tail += pmf(lo)
        lo += 1
    tail, hi = 0.0, n
    while tail + pmf(hi) <= false_failure / 2:
        tail += pmf(hi)
        hi -= 1
    return lo, hi


def test_binomial_bounds_hold_the_tail_mass():
    n, p = 2000, Fraction(2, 100)
    lo, hi = binomial_bounds(n, float(p))

    def mass(ks):
        return sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in ks)
    assert mass(range(lo)) + mass(range(hi + 1, n + 1)) <= Fraction(1, 10 ** 6)
    # and no wider than needed: one more value on either side would pass half the budget
    assert mass(range(lo + 1)) > Fraction(1, 2 * 10 ** 6)
    assert mass(range(hi, n + 1)) > Fraction(1, 2 * 10 ** 6)
    assert binomial_bounds(10, 0.0) == (0, 0)


class ImpairedRun:
    """A switch with --impair options between h1 (port 1) and h2 (port 2), its stats file and
    pcap directory."""

    def __init__(self, network, tmp_path, device_config: str | None, *specs: str):
        """device_config None: start with --no-p4."""
        self.stats_path = str(tmp_path / "impair-stats.json")
        self.pcap_dir = tmp_path / "pcaps"
        extra = ["--impair-stats", self.stats_path, "--pcap", str(self.pcap_dir)]
        for spec in specs:
            extra += ["--impair", spec]
        self._context = running_switch(network, tmp_path, program=device_config, extra=extra)

    def __enter__(self):
        self.switch = self._context.__enter__()
        return self

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)

    def counters(self, port: int, direction: str) -> dict:
        stats = read_stats(self.stats_path)
        return stats["ports"][str(port)][direction] if stats else {}

    def stop(self) -> dict:
        """Stop the switch; the final stats."""
        assert self.switch.stop() == 0, self.switch.stderr()
        stats = read_stats(self.stats_path)
        assert stats["final"] is True
        return stats

    def pcap_sequence(self, host, direction: str, run_tag: int) -> list[int]:
        frames = read_pcap(str(self.pcap_dir / f"{host.switch_interface}_{direction}.pcap"))
        return [s for s in (sequence_number(f, run_tag) for f in frames) if s is not None]


def deliver_all(run, receiver, port, direction, count, expected_arrivals):
    """Wait until the impaired direction has seen `count` frames (or more: strays on rx) and
    the receiver got what the counters say should arrive."""
    wait_until(lambda: run.counters(port, direction).get("frames", 0) >= count,
               what=f"{count} frames through port {port} {direction}",
               state=lambda: run.counters(port, direction))
    wait_until(lambda: len(receiver.arrivals) >= expected_arrivals(run.counters(port, direction)),
               what="the frames the counters say were sent")


def test_loss_on_receive_is_binomial_and_pcaps_show_what_the_pipeline_got(
        network, tmp_path, device_config):
    h1, h2 = network.hosts
    count, tag = 2000, 1
    with ImpairedRun(network, tmp_path, device_config, "1:rx:loss=2") as run:
        receiver = Receiver(h2, tag)
        send_numbered(h1, h2, count, tag)
        deliver_all(run, receiver, 1, "rx", count, lambda c: count - c["dropped"])
        received = receiver.stop()
        rx = run.stop()["ports"]["1"]["rx"]
    strays = rx["frames"] - count
    lo, hi = binomial_bounds(rx["frames"], 0.02)
    assert lo <= rx["dropped"] <= hi, rx
    assert count - rx["dropped"] <= len(received) <= count - rx["dropped"] + strays
    assert received == sorted(set(received))          # each once, in order
    # the rx pcap holds what passed the impairment: every frame not dropped, strays included
    pcap_in = read_pcap(str(run.pcap_dir / f"{h1.switch_interface}_in.pcap"))
    assert len(pcap_in) == rx["frames"] - rx["dropped"]
    assert run.pcap_sequence(h1, "in", tag) == received
    assert run.pcap_sequence(h2, "out", tag) == received


def test_duplicates_are_counted_exactly_and_tx_pcap_shows_them(network, tmp_path, device_config):
    h1, h2 = network.hosts
    count, tag = 1000, 2
    with ImpairedRun(network, tmp_path, device_config, "2:tx:dup=5") as run:
        receiver = Receiver(h2, tag)
        send_numbered(h1, h2, count, tag)
        deliver_all(run, receiver, 2, "tx", count, lambda c: c["frames"] + c["duplicated"])
        time.sleep(0.2)                                    # a surplus copy would show now
        received = receiver.stop()
        tx = run.stop()["ports"]["2"]["tx"]
    lo, hi = binomial_bounds(count, 0.05)
    assert lo <= tx["duplicated"] <= hi, tx
    assert len(received) == count + tx["duplicated"]
    twice = [seq for seq in set(received) if received.count(seq) == 2]
    assert len(twice) == tx["duplicated"]
    assert sorted(set(received)) == list(range(count))
    assert received == sorted(received)                   # each copy right behind its original
    assert run.pcap_sequence(h2, "out", tag) == received
    assert run.pcap_sequence(h1, "in", tag) == list(range(count))


def test_reordered_frames_swap_with_the_next_and_are_counted(network, tmp_path, device_config):
    h1, h2 = network.hosts
    count, tag = 600, 3
    with ImpairedRun(network, tmp_path, device_config, "2:tx:reorder=10,seed=5") as run:
        receiver = Receiver(h2, tag)
        send_numbered(h1, h2, count, tag)
        deliver_all(run, receiver, 2, "tx", count, lambda c: c["frames"])
        received = receiver.stop()
        tx = run.stop()["ports"]["2"]["tx"]
    assert sorted(received) == list(range(count))
    assert all(abs(position - seq) <= 1 for position, seq in enumerate(received))
    descents = sum(1 for a, b in zip(received, received[1:]) if a > b)
    assert descents == tx["reordered"] > 0
    assert run.pcap_sequence(h2, "out", tag) == received


def test_delay_with_jitter_is_a_lower_bound_and_does_not_block_the_switch(
        network, tmp_path, device_config):
    h1, h2 = network.hosts
    count, tag = 20, 4
    with ImpairedRun(network, tmp_path, device_config, "1:rx:delay=400,jitter=50",
                     "2:tx:delay=600,jitter=50") as run:
        to_h2, to_h1 = Receiver(h2, tag), Receiver(h1, tag)
        sent = send_numbered(h1, h2, count, tag, batch=1, pause=0.005)
        h2.send(frame(h2, h1, 0, tag))           # the other way: not delayed
        wait_until(lambda: len(to_h2.arrivals) == count, what="the delayed frames")
        to_h1.stop(), to_h2.stop()
        ports = run.stop()["ports"]
    assert sorted(to_h2.sequence) == list(range(count))
    for seq, arrived in to_h2.arrivals:      # 350 ms at least on the way in, 550 on the way out
        assert arrived - sent[seq] >= 0.9, (seq, arrived - sent[seq])
    # the receive loop kept forwarding while the delayed frames waited
    assert len(to_h1.arrivals) == 1 and to_h1.arrivals[0][1] < min(t for _, t in to_h2.arrivals)
    assert ports["2"]["tx"]["delayed"] == ports["2"]["tx"]["frames"] == count
    assert ports["1"]["rx"]["delayed"] == ports["1"]["rx"]["frames"] >= count    # strays too


def test_packet_out_goes_through_the_tx_impairment(network, tmp_path, ipv4_compiled):
    p4info_path, device_config_path = ipv4_compiled
    h1, h2 = network.hosts
    tag = 7
    with ImpairedRun(network, tmp_path, None, "2:tx:delay=300,dup=100") as run:
        client = Client(run.switch.address, run.switch.device_id, election_id=1)
        try:
            client.arbitrate()
            with open(device_config_path, "rb") as f:
                client.set_pipeline(load_p4info(p4info_path), f.read())
            header = client._find("controller_packet_metadata", "packet_out")
            port_id = next(m.id for m in header.metadata if m.name == "egress_port")
            out = p4runtime_pb2.StreamMessageRequest()
            out.packet.payload = frame(h1, h2, 0, tag)
            out.packet.metadata.add(metadata_id=port_id, value=bytes([h2.port]))
            receiver = Receiver(h2, tag)
            sent = time.monotonic()
            client.send_stream(out)
            wait_until(lambda: len(receiver.arrivals) == 2, what="the packet-out and its copy")
        finally:
            client.close()
        time.sleep(0.2)
        assert receiver.stop() == [0, 0]
        tx = run.stop()["ports"]["2"]["tx"]
    assert all(arrived - sent >= 0.3 for _, arrived in receiver.arrivals)
    assert (tx["frames"], tx["duplicated"], tx["delayed"]) == (1, 1, 2)


def received_with_seed(network, tmp_path, device_config, seed: int, tag: int) -> list[int]:
    """Sequence numbers h2 receives through loss=20 on port 2 tx; each run has its own tag,
    so no frame of an earlier run is counted."""
    h1, h2 = network.hosts
    count = 300
    directory = tmp_path / f"run{tag}"
    directory.mkdir()
    with ImpairedRun(network, directory, device_config, f"2:tx:loss=20,seed={seed}") as run:
        receiver = Receiver(h2, tag)
        send_numbered(h1, h2, count, tag)
        deliver_all(run, receiver, 2, "tx", count, lambda c: c["frames"] - c["dropped"])
        received = receiver.stop()
        tx = run.stop()["ports"]["2"]["tx"]
    assert len(received) == count - tx["dropped"]
    return received


def test_same_seed_drops_the_same_frames(network, tmp_path, device_config):
    first = received_with_seed(network, tmp_path, device_config, 11, tag=51)
    again = received_with_seed(network, tmp_path, device_config, 11, tag=52)
    other = received_with_seed(network, tmp_path, device_config, 12, tag=53)
    assert first == again
    assert first != other


def test_frames_in_flight_are_discarded_and_reported_at_shutdown(network, tmp_path,
                                                                 device_config):
    h1, h2 = network.hosts
    tag = 6
    with ImpairedRun(network, tmp_path, device_config, "2:tx:delay=30000") as run:
        receiver = Receiver(h2, tag)
        send_numbered(h1, h2, 5, tag)
        wait_until(lambda: run.counters(2, "tx").get("frames") == 5, what="5 delayed frames")
        tx = run.stop()["ports"]["2"]["tx"]
        assert receiver.stop() == []
    assert (tx["delayed"], tx["discarded"]) == (5, 5)
    with open(run.switch.log_path) as f:
        log = f.read()
    assert "impairment port 2: tx: 5 frames, 0 dropped, 0 duplicated, 0 reordered, 5 delayed, " \
           "0 overflowed, 5 discarded" in log
