"""veth NAPI on the hosts' ends (device_env.set_napi, topologies' $INA_VETH_NAPI): the setting
is what the kernel shows, and it changes no frame: UDP frames of one flow sent back to back
still cross the switch one per packet, byte for byte and in order (GRO must not merge them),
a TCP stream between the host stacks arrives exact, and a compare run records the setting
and sums exactly."""
import json
import os
import socket
import subprocess
import sys
import threading

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from device_env import (NAPI_MODES, PROGRAM, REPO, Network, compile_program, in_netns,
                        running_switch)
from p4rt_client import INSERT, Client, load_p4info, update

ROUTER_MAC = "00:00:00:00:01:00"


def napi_state(host) -> tuple:
    """(GRO on, threaded flag, napi kernel threads of the namespace's eth0) of a host's end."""
    features = subprocess.run(["ip", "netns", "exec", host.namespace, "ethtool", "-k", "eth0"],
                              check=True, capture_output=True, text=True).stdout
    gro = "generic-receive-offload: on" in features
    threaded = subprocess.run(["ip", "netns", "exec", host.namespace, "cat",
                               "/sys/class/net/eth0/threaded"], check=True,
                              capture_output=True, text=True).stdout.strip()
    return gro, threaded


def napi_threads() -> int:
    count = 0
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/comm") as f:
                count += f.read().startswith("napi/eth0-")
        except OSError:
            pass
    return count


def route(client: Client, host) -> None:
    entry = client.table_entry(
        "ipv4_lpm", {"hdr.ipv4.dstAddr": (bytes(int(x) for x in host.ip.split(".")[:3]) +
                                          b"\0", 24)},
        "forward", {"dstMac": bytes.fromhex(host.mac.replace(":", "")),
                    "port": bytes([host.port])})
    client.write(update(INSERT, table_entry=entry))


@pytest.mark.emulation
@pytest.mark.parametrize("mode", NAPI_MODES)
def test_napi_is_applied_and_frames_stay_one_per_packet(tmp_path, mode):
    p4info, device_config = compile_program(PROGRAM, tmp_path)
    threads_before = napi_threads()
    network = Network(2, napi=mode)
    try:
        h1, h2 = network.hosts
        for host in network.hosts:
            assert napi_state(host) == (mode != "off", "1" if mode == "threaded" else "0")
        assert napi_threads() - threads_before == (2 if mode == "threaded" else 0)
        with running_switch(network, tmp_path, extra=["--backend", "c"]) as switch:
            client = Client(switch.address, switch.device_id, election_id=1)
            client.arbitrate()
            with open(device_config, "rb") as f:
                client.set_pipeline(load_p4info(p4info), f.read())
            for host in (h1, h2):
                route(client, host)
            # one flow (same addresses and ports), consecutive IP ids, sizes that GRO could
            # glue together: each must arrive alone
            frames = [Ether(src=h1.mac, dst=ROUTER_MAC) /
                      IP(src=h1.ip, dst=h2.ip, id=i, flags="DF") /
                      UDP(sport=4000, dport=4001) / (bytes([i % 251]) * (200 + i % 3 * 400))
                      for i in range(400)]
            h2.sock.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)    # SO_RCVBUFFORCE: all fit
            for frame in frames:
                h1.send(bytes(frame))
            got = h2.receive(count=len(frames), timeout=5)
            expected = []
            for frame in frames:
                out = frame.copy()
                out[Ether].src, out[Ether].dst = ROUTER_MAC, h2.mac
                out[IP].ttl -= 1
                del out[IP].chksum
                expected.append(bytes(out))
            assert got == expected
            tcp_stream_arrives_exact(h1, h2)
            client.close()
    finally:
        network.close()
    assert napi_threads() == threads_before


def tcp_stream_arrives_exact(h1, h2, size: int = 2_000_000) -> None:
    """2 MB over TCP from h1's stack to h2's through the switch: GRO on the host ends may
    merge segments for the host's stack, never for the switch (its ends keep GRO off)."""
    for host, peer in ((h1, h2), (h2, h1)):
        subprocess.run(["ip", "netns", "exec", host.namespace, "ip", "neigh", "replace",
                        peer.ip, "lladdr", ROUTER_MAC, "dev", "eth0"], check=True)
    data = os.urandom(size)
    server = in_netns(h2.namespace, lambda: socket.create_server((h2.ip, 7100)))
    received = bytearray()

    def serve():
        connection, _ = server.accept()
        with connection:
            while chunk := connection.recv(1 << 16):
                received.extend(chunk)
    serving = threading.Thread(target=serve)
    serving.start()
    try:
        client = in_netns(h1.namespace, lambda: socket.create_connection((h2.ip, 7100), 5))
        with client:
            client.sendall(data)
        serving.join(30)
    finally:
        server.close()
    assert bytes(received) == data


@pytest.mark.emulation
def test_compare_records_threaded_napi_and_sums_exactly(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, INA_VETH_NAPI="threaded")
    done = subprocess.run([sys.executable, "-m", "experiments", "compare", "--topo", "star:2",
                           "--modes", "ina,ring", "--elements", "20000", "--out", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["meta"]["veth_napi"] == "threaded"
    assert results["meta"]["host_napi"] == {f"h{n}-eth0": {"gro": "on", "threaded": "1"}
                                            for n in (1, 2)}
    assert {run["mode"] for run in results["runs"]} == {"ina", "ring"}
    assert all(run["correct"] and run["max_abs_err"] == 0 for run in results["runs"])


def test_a_bad_napi_mode_is_a_one_line_error(monkeypatch):
    from topologies.net import NetworkError, veth_napi_mode
    monkeypatch.setenv("INA_VETH_NAPI", "fast")
    with pytest.raises(NetworkError, match=r"^INA_VETH_NAPI='fast': choose one of off, gro, "
                                           r"threaded$"):
        veth_napi_mode()
    monkeypatch.delenv("INA_VETH_NAPI")
    assert veth_napi_mode() == "off"
