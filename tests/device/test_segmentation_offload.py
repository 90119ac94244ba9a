"""Segmentation offload through the switch (p4switch run --segmentation-offload; the native
loop's p4io_set_offload, p4switch/device/segments.py for the Python loop): a TCP transfer
between two hosts whose stacks leave their sends whole arrives byte for byte, through the C
pipeline (which forwards the sends whole) and through the Python one (which cuts them into
wire segments, every checksum its own), and the hosts' wire counters (jobs/counters.py) add
up to what a tbf counted on the wire.  Also the segmentation itself against scapy."""
import hashlib
import os
import socket
import struct
import subprocess
import threading

import pytest

from device_env import Network, in_netns, running_switch
from jobs import counters
from p4switch.device import segments

HERE = os.path.dirname(os.path.abspath(__file__))
WIRE_PROGRAM = os.path.join(HERE, "wire_all.p4")
SEGMENTS_PER_SEND = 10
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


# ---- the segmentation, against scapy ------------------------------------------------------

def _tso_frame(payload: bytes, flags: str = "PA", with_vlan: bool = False) -> tuple[bytes, int]:
    """A TCP/IPv4 frame of several segments' payload as a TSO sender hands it over: its TCP
    checksum field holds the pseudo-header's sum (the NIC finishes it); and the TCP offset."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Dot1Q, Ether
    ether = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
    if with_vlan:
        ether = ether / Dot1Q(vlan=7)
    packet = ether / IP(src="10.0.1.1", dst="10.0.2.1", id=4000) / TCP(
        sport=5000, dport=6000, seq=0xfffff000, ack=77, flags=flags,
        options=[("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]) / payload
    frame = bytearray(bytes(packet))
    tcp = len(frame) - len(payload) - 32
    length = len(frame) - tcp
    pseudo = segments.ones_complement_sum(bytes(frame[tcp - 8:tcp]) + bytes([0, 6])
                                          + length.to_bytes(2, "big"))
    frame[tcp + 16:tcp + 18] = pseudo.to_bytes(2, "big")
    return bytes(frame), tcp


def test_the_ones_complement_sum_is_rfc_1071s():
    import random
    generator = random.Random(7)

    def folded_loop(data: bytes, start: int) -> int:      # RFC 1071, word by word
        data += b"\0" * (len(data) % 2)
        total = start + sum(struct.unpack(f"!{len(data) // 2}H", data))
        while total >> 16:
            total = (total & 0xffff) + (total >> 16)
        return total
    cases = [b"", b"\0\0", b"\xff\xff", b"\xff\xff\xff\xff", b"\x01"]
    cases += [generator.randbytes(generator.randrange(1, 1600)) for _ in range(300)]
    for data in cases:
        start = generator.randrange(0x10000)
        assert segments.ones_complement_sum(data, start) == folded_loop(data, start), data
        assert segments.ones_complement_sum(data) == folded_loop(data, 0), data


@pytest.mark.parametrize("with_vlan", [False, True])
def test_a_send_of_several_segments_is_cut_as_a_nic_would(with_vlan):
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    payload = bytes(range(256)) * 20                         # 5,120 bytes: 3 x 1,448 + 776
    frame, tcp = _tso_frame(payload, "FPA", with_vlan)
    header = segments.VnetHeader(segments.F_NEEDS_CSUM, segments.GSO_TCPV4, tcp + 32, 1448,
                                 tcp, 16)
    cut = segments.wire_frames(header.pack() + frame)
    assert [len(s) for s in cut] == [tcp + 32 + n for n in (1448, 1448, 1448, 776)]
    for n, data in enumerate(cut):
        packet = Ether(data)
        ip, seg = packet[IP], packet[TCP]
        assert ip.id == 4000 + n and ip.len == 20 + 32 + len(seg.payload)
        assert seg.seq == (0xfffff000 + 1448 * n) & 0xffffffff and seg.ack == 77
        assert str(seg.flags) == ("FPA" if n == 3 else "A")
        sent_ip, sent_tcp = ip.chksum, seg.chksum
        del ip.chksum, seg.chksum                             # scapy computes them again
        again = Ether(bytes(packet))
        assert (again[IP].chksum, again[TCP].chksum) == (sent_ip, sent_tcp)
    assert b"".join(bytes(Ether(s)[TCP].payload) for s in cut) == payload


def test_a_partial_checksum_is_finished_and_a_whole_frame_kept():
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    packet = (Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
              / IP(src="10.0.1.1", dst="10.0.2.1") / UDP(sport=1, dport=2) / (b"x" * 99))
    whole = bytes(packet)
    udp = 14 + 20
    partial = bytearray(whole)
    length = len(whole) - udp
    partial[udp + 6:udp + 8] = segments.ones_complement_sum(
        whole[26:34] + bytes([0, 17]) + length.to_bytes(2, "big")).to_bytes(2, "big")
    header = segments.VnetHeader(segments.F_NEEDS_CSUM, segments.GSO_NONE, 0, 0, udp, 6)
    assert segments.wire_frames(header.pack() + bytes(partial)) == [whole]
    assert segments.wire_frames(segments.NO_VNET_HDR + whole) == [whole]


def test_what_cannot_be_cut_is_a_one_line_error():
    frame, tcp = _tso_frame(b"y" * 3000)
    for header, message in (
            (segments.VnetHeader(segments.F_NEEDS_CSUM, segments.GSO_UDP, 0, 1448, tcp, 16),
             "gso_type 3 is not supported"),
            (segments.VnetHeader(segments.F_NEEDS_CSUM, segments.GSO_TCPV4, 0, 0, tcp, 16),
             "gso_size 0"),
            (segments.VnetHeader(segments.F_NEEDS_CSUM, segments.GSO_NONE, 0, 0, 9000, 16),
             "checksum at byte 9016")):
        with pytest.raises(segments.SegmentationError, match=message):
            segments.wire_frames(header.pack() + frame)


def test_the_wire_counters_add_the_headers_of_segments_sent_whole():
    snmp = counters.parse_snmp("Ip: InReceives OutRequests\nIp: 90 107\nTcp: OutSegs InSegs\n"
                               "Tcp: 1000 80\nUdp: OutDatagrams InDatagrams\nUdp: 5 3\n"
                               "Icmp: OutMsgs InMsgs\nIcmp: 2 0\n")
    netstat = counters.parse_snmp("IpExt: InNoECTPkts InECT0Pkts\nIpExt: 400 10\n")
    # 107 IP packets sent, 7 of them UDP and ICMP: 100 TCP frames carried 1,000 segments; 90
    # IP packets came in as 410 segments
    assert counters.segment_headers(snmp, netstat) == (
        900 * counters.TCP_SEGMENT_HEADER_BYTES, 320 * counters.TCP_SEGMENT_HEADER_BYTES)


# ---- emulation: TCP between two namespaces through the switch ----------------------------

def _segmenting(network: Network) -> None:
    for host in network.hosts:
        for prefix, interface in ((["ip", "netns", "exec", host.namespace], "eth0"),
                                  ([], host.switch_interface)):
            subprocess.run([*prefix, "ethtool", "-K", interface, "tx", "on", "tso", "on",
                            "gso", "on"], check=True, capture_output=True)
            subprocess.run([*prefix, "ip", "link", "set", "dev", interface, "gso_max_segs",
                            str(SEGMENTS_PER_SEND)], check=True, capture_output=True)


def _tbf(prefix: list, interface: str) -> None:
    subprocess.run([*prefix, "tc", "qdisc", "add", "dev", interface, "root", "tbf", "rate",
                    "2gbit", "burst", "15k", "limit", "1514000"], check=True,
                   capture_output=True)


def _tbf_sent_bytes(prefix: list, interface: str) -> int:
    shown = subprocess.run([*prefix, "tc", "-s", "qdisc", "show", "dev", interface],
                           check=True, capture_output=True, text=True).stdout
    words = shown.split()
    return int(words[words.index("Sent") + 1])


def _namespace_tables(namespace: str) -> dict:
    return {name: subprocess.run(["ip", "netns", "exec", namespace, "cat", f"/proc/net/{name}"],
                                 check=True, capture_output=True, text=True).stdout
            for name in ("dev", "snmp", "netstat")}


def _wire_bytes(namespace: str) -> counters.Traffic:
    tables = _namespace_tables(namespace)
    traffic = counters.parse_net_dev(tables["dev"])["eth0"]
    sent, received = counters.segment_headers(counters.parse_snmp(tables["snmp"]),
                                              counters.parse_snmp(tables["netstat"]))
    return counters.Traffic(traffic.tx_bytes + sent, traffic.rx_bytes + received)


def _tcp_segments_sent(namespace: str) -> int:
    return counters.parse_snmp(_namespace_tables(namespace)["snmp"])["Tcp"]["OutSegs"]


def _transfer(network: Network, size: int) -> tuple[bytes, bytes]:
    """`size` bytes from h1 to h2 over TCP and their SHA-256 back (h2 -> h1); returns (what was
    sent's digest, what h2 reported)."""
    h1, h2 = network.hosts
    data = os.urandom(size)
    listener = in_netns(h2.namespace, lambda: socket.create_server((h2.ip, 0)))
    port = listener.getsockname()[1]
    got = {}

    def serve():
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(30)
            digest, left = hashlib.sha256(), size
            while left:
                chunk = connection.recv(min(left, 1 << 20))
                if not chunk:
                    break
                digest.update(chunk)
                left -= len(chunk)
            got["digest"] = digest.digest()
            connection.sendall(struct.pack("!I", size - left) + digest.digest())
    server = threading.Thread(target=serve)
    server.start()
    try:
        client = in_netns(h1.namespace, lambda: socket.create_connection((h2.ip, port), 10))
        with client:
            client.settimeout(30)
            client.sendall(data)
            answer = b""
            while len(answer) < 36:
                part = client.recv(36 - len(answer))
                if not part:
                    break
                answer += part
    finally:
        server.join(35)
        listener.close()
    assert struct.unpack("!I", answer[:4])[0] == size
    return hashlib.sha256(data).digest(), answer[4:]


@pytest.fixture
def segmenting_network():
    network = Network(2)
    try:
        for host in network.hosts:
            host.sock.close()
            host.sock = None
        _segmenting(network)
        for host, other in (network.hosts, network.hosts[::-1]):
            # the native wire sends broadcasts (ARP) to the CPU port: addresses set here
            subprocess.run(["ip", "netns", "exec", host.namespace, "ip", "neigh", "replace",
                            other.ip, "lladdr", other.mac, "dev", "eth0", "nud", "permanent"],
                           check=True, capture_output=True)
        yield network
    finally:
        network.close()


@needs_root
@pytest.mark.emulation
@pytest.mark.parametrize("backend", ["c", "python"])
def test_tcp_through_the_switch_arrives_whole_and_counts_its_wire_bytes(
        segmenting_network, tmp_path, backend):
    network = segmenting_network
    h1, h2 = network.hosts
    in_h1 = ["ip", "netns", "exec", h1.namespace]
    _tbf(in_h1, "eth0")                          # counts every segment's bytes on the wire
    _tbf([], h2.switch_interface)                # what the switch sends to h2
    size = 3_000_000 if backend == "c" else 400_000
    with running_switch(network, tmp_path, program=WIRE_PROGRAM,
                        extra=["--backend", backend, "--segmentation-offload"]) as switch:
        sent, reported = _transfer(network, size)
        assert reported == sent
        status_of = switch.stderr()
    assert "Traceback" not in status_of, status_of
    segments_sent = _tcp_segments_sent(h1.namespace)
    assert segments_sent > size / 1448
    h1_wire, h2_wire = _wire_bytes(h1.namespace), _wire_bytes(h2.namespace)
    assert h1_wire.tx_bytes == _tbf_sent_bytes(in_h1, "eth0")
    assert h2_wire.rx_bytes == _tbf_sent_bytes([], h2.switch_interface)


@needs_root
@pytest.mark.emulation
def test_the_native_loop_forwards_a_send_whole(segmenting_network):
    """The frames the C loop took off h1's port are sends of several segments, not segments."""
    from native_wire import Wire
    from p4switch.backend.c.io import NativePorts
    network = segmenting_network
    ports = NativePorts(cpu_port=255, offload=True)
    wire = Wire(1, 2, 255)
    try:
        for host in network.hosts:
            ports.add_port(host.port, host.switch_interface)
        ports.set_pipeline(wire.fn, wire.ptr)
        thread = ports.start()
        sent, reported = _transfer(network, 2_000_000)
        assert reported == sent
        stats = ports.stats(1)
    finally:
        ports.close()
        wire.free()
    thread.join(5)
    segments_sent = _tcp_segments_sent(network.hosts[0].namespace)
    assert stats["rx_dropped"] == 0 and stats["rx_frames"] * 3 < segments_sent, \
        (stats, segments_sent)
    assert stats["rx_bytes"] > 2_000_000


@needs_root
@pytest.mark.emulation
def test_the_native_loop_forwards_sends_whole_under_sanitizers(segmenting_network):
    import test_native_io
    hosts = [(h.namespace, h.switch_interface, h.port, h.mac, h.ip)
             for h in segmenting_network.hosts]
    test_native_io._run_child("import test_segmentation_offload as t; "
                              f"t.sanitized_offload_check({hosts!r}); print('CHILD OK')")


def sanitized_offload_check(hosts) -> None:
    """A TCP transfer both ways through the native loop with offload, on two worker threads
    and through recvmmsg on one port, with sanitizer builds of io.c and the wire."""
    from types import SimpleNamespace

    from device_env import Host
    from native_wire import Wire
    from p4switch.backend.c import build
    from p4switch.backend.c.io import NativePorts
    network = SimpleNamespace(hosts=[Host(*spec) for spec in hosts])
    ports = NativePorts(cpu_port=255, extra_flags=build.SANITIZER_FLAGS, threads=2,
                        offload=True)
    wire = Wire(1, 2, 255, extra_flags=build.SANITIZER_FLAGS)
    try:
        h1, h2 = network.hosts
        ports.add_port(h1.port, h1.switch_interface)
        ports.set_tuning(0, 50, 2)                 # h2's port receives with recvmmsg
        ports.add_port(h2.port, h2.switch_interface)
        ports.set_pipeline(wire.fn, wire.ptr)
        thread = ports.start()
        for network.hosts in ([h1, h2], [h2, h1]):
            sent, reported = _transfer(network, 1_000_000)
            assert reported == sent
        assert ports.stats(1)["rx_dropped"] == ports.stats(2)["rx_dropped"] == 0
    finally:
        ports.close()
        wire.free()
    thread.join(5)
