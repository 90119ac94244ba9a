"""`p4switch run --backend xdp`: the pipeline attached to the ports' veths as an XDP program,
driven over P4Runtime, forwarding between hosts in fresh network namespaces without the
switch process seeing a frame."""
import json
import os
import subprocess
import sys

import pytest
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(REPO, "tests", "device"), os.path.join(REPO, "tests")]
from device_env import Network, SwitchProcess, compile_program  # noqa: E402
from p4rt_client import INSERT, Client, load_p4info, update  # noqa: E402
from skip_or_fail import skip_or_fail  # noqa: E402

from p4switch.backend.xdp import loader  # noqa: E402

pytestmark = pytest.mark.emulation
PROGRAM = os.path.join(REPO, "tests", "device", "ipv4_route.p4")
ROUTER_MAC = "00:00:00:00:01:00"


@pytest.fixture(scope="module", autouse=True)
def toolchain():
    skip_or_fail(loader.toolchain_missing())


def udp_frame(host, dst_ip: str, ttl: int, seq: int) -> Ether:
    return Ether(src=host.mac, dst=ROUTER_MAC) / IP(src=host.ip, dst=dst_ip, ttl=ttl, id=seq) / \
        UDP(sport=1234, dport=5678) / f"xdp device test {seq:04d}".encode()


def routed(frame: Ether, dst_mac: str) -> bytes:
    out = frame.copy()
    out[Ether].src, out[Ether].dst = frame[Ether].dst, dst_mac
    out[IP].ttl -= 1
    del out[IP].chksum
    return bytes(out)


def attached_programs(network) -> list[str]:
    """The switch-side interfaces that have an XDP program now."""
    shown = subprocess.run(["ip", "-d", "link", "show"], capture_output=True, text=True).stdout
    names = {h.switch_interface for h in network.hosts}
    blocks = shown.split("\n")
    found, current = [], None
    for line in blocks:
        if line and line[0].isdigit():
            current = line.split(":")[1].strip().split("@")[0]
        elif current in names and "prog/xdp" in line:
            found.append(current)
    return found


def replica(frame: Ether, port: int, rid: int) -> bytes:
    """A multicast copy: ipv4_route.p4's egress writes port ++ rid into the identification
    (and the checksum anew); the multicast action leaves the TTL."""
    out = frame.copy()
    out[IP].id = (port << 7) | rid
    del out[IP].chksum
    return bytes(out)


def test_routes_and_multicasts_in_the_kernel_exactly_and_detaches_on_exit(tmp_path):
    p4info, device_config = compile_program(PROGRAM, tmp_path)
    network = Network(3, napi="gro")          # a redirected frame needs the peer's NAPI
    try:
        h1, h2, h3 = network.hosts
        status = tmp_path / "status.json"
        switch = SwitchProcess(network, None, extra=["--backend", "xdp", "--status-file",
                                                     str(status)])
        try:
            client = Client(switch.address, switch.device_id, election_id=1)
            client.arbitrate()
            with open(device_config, "rb") as f:
                client.set_pipeline(load_p4info(p4info), f.read())
            route = client.table_entry(
                "ipv4_lpm", {"hdr.ipv4.dstAddr": (bytes([10, 0, 2, 0]), 24)}, "forward",
                {"dstMac": bytes.fromhex(h2.mac.replace(":", "")), "port": bytes([h2.port])})
            group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=7)
            group.replicas.add(egress_port=h2.port, instance=1)
            group.replicas.add(egress_port=h3.port, instance=2)
            fanout = client.table_entry(
                "ipv4_lpm", {"hdr.ipv4.dstAddr": (bytes([10, 0, 9, 0]), 24)}, "multicast",
                {"group": bytes([7])})
            client.write(update(INSERT, table_entry=route),
                         update(INSERT, packet_replication_engine_entry=p4runtime_pb2.
                                PacketReplicationEngineEntry(multicast_group_entry=group)),
                         update(INSERT, table_entry=fanout))
            assert json.loads(status.read_text())["backend"] == "xdp"
            assert sorted(attached_programs(network)) == sorted(h.switch_interface
                                                                for h in network.hosts)
            for host in (h2, h3):
                host.drain()
            frames = [udp_frame(h1, "10.0.2.1", 64, seq) for seq in range(40)]
            for frame in frames:
                h1.send(bytes(frame))
            h1.send(bytes(udp_frame(h1, "10.0.2.1", 1, 999)))     # TTL 1: dropped
            h1.send(bytes(udp_frame(h1, "10.0.8.1", 64, 998)))    # no route: dropped
            assert h2.receive(count=41, timeout=1.0) == [routed(f, h2.mac) for f in frames]
            assert h3.receive(timeout=0.3) == []
            shared = [udp_frame(h1, "10.0.9.1", 64, seq) for seq in range(20)]
            for frame in shared:
                h1.send(bytes(frame))
            assert h2.receive(count=21, timeout=1.0) == [replica(f, h2.port, 1) for f in shared]
            assert h3.receive(count=21, timeout=1.0) == [replica(f, h3.port, 2) for f in shared]
            assert h1.receive(timeout=0.3) == []       # the ingress port is not in the group
            client.close()
        finally:
            assert switch.stop() == 0, switch.stderr()
        assert attached_programs(network) == []
    finally:
        network.close()


def test_tracing_options_are_refused_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "p4switch", "run", PROGRAM, "--backend",
                             "xdp", "--pcap", str(tmp_path), "-i", "1@lo"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "p4switch run: --backend xdp runs every frame in the kernel: --pcap, --log-console, "
        "--log-file, --impair and --impair-stats are not supported with it"]
