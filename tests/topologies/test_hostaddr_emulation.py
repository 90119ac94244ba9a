"""Host addressing through the service address (topologies/hostaddr.py) between two network
namespaces joined by a veth, as two hosts of the fabric would be (the fabric leaves MACs
alone, so a veth is what they see): no host reaches the other before the accept program is
on its interface, both reach each other (ping, TCP) once it is, and a frame addressed to
neither the host's MAC nor the service MAC is still dropped."""

import os
import socket
import subprocess
import threading

import pytest

from topologies import hostaddr

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

HOSTS = (("a", "10.0.0.1", "00:00:0a:00:00:01"), ("b", "10.0.0.2", "00:00:0a:00:00:02"))
OTHER_MAC = "02:00:00:00:99:99"


def sh(*command, check=True):
    return subprocess.run(command, capture_output=True, text=True, check=check)


@pytest.fixture
def two_hosts():
    tag = f"hq{os.getpid() % 100000}"
    names = {h: f"{tag}{h}" for h, _, _ in HOSTS}
    try:
        for name in names.values():
            sh("ip", "netns", "add", name)
        sh("ip", "link", "add", f"{tag}a0", "type", "veth", "peer", "name", f"{tag}b0")
        for host, ip, mac in HOSTS:
            ns, intf = names[host], f"{tag}{host}0"
            sh("ip", "link", "set", intf, "netns", ns)
            sh("ip", "-n", ns, "link", "set", intf, "address", mac, "up")
            sh("ip", "-n", ns, "addr", "add", f"{ip}/16", "dev", intf)
            sh("ip", "netns", "exec", ns, "sh", "-c",
               hostaddr.gateway_command(ip, 16, intf))
        yield {host: (names[host], f"{tag}{host}0", ip) for host, ip, _ in HOSTS}
    finally:
        for name in names.values():
            sh("ip", "netns", "del", name, check=False)
    assert not any(os.path.exists(f"/run/netns/{n}") for n in names.values())


def ping(ns: str, ip: str) -> bool:
    return sh("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "1", ip,
              check=False).returncode == 0


def tcp_exchange(server_ns: str, server_ip: str, client_ns: str) -> bytes:
    """One TCP connection from client_ns to server_ip:5555 in server_ns; what the server got."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", server_ns, "python3", "-c",
         "import socket; s = socket.socket(); "
         "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
         f"s.bind(('{server_ip}', 5555)); s.listen(); s.settimeout(10); "
         "c, _ = s.accept(); print(c.recv(100).decode())"],
        stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(50):
            client = sh("ip", "netns", "exec", client_ns, "python3", "-c",
                        f"import socket; s = socket.create_connection(('{server_ip}', 5555), "
                        "timeout=3); s.send(b'over the gateway')", check=False)
            if client.returncode == 0:
                break
            threading.Event().wait(0.1)      # the server is not listening yet
        output, _ = server.communicate(timeout=15)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return output.strip().encode()


def test_hosts_reach_each_other_through_the_service_mac_only_with_the_accept_program(
        two_hosts):
    (a_ns, a_intf, a_ip), (b_ns, b_intf, b_ip) = two_hosts["a"], two_hosts["b"]
    route = sh("ip", "netns", "exec", a_ns, "ip", "route", "get", b_ip).stdout
    assert "via 10.0.255.254" in route
    assert not ping(a_ns, b_ip)           # b drops frames to the service MAC as not its own
    with hostaddr.accept_program() as pinned:
        hostaddr.attach_all([(f"/run/netns/{a_ns}", a_intf), (f"/run/netns/{b_ns}", b_intf)],
                            pinned)
    assert ping(a_ns, b_ip) and ping(b_ns, a_ip)
    assert tcp_exchange(b_ns, b_ip, a_ns) == b"over the gateway"
    # a frame for some other MAC stays another host's: b does not take it in
    sh("ip", "-n", a_ns, "neigh", "replace", b_ip, "lladdr", OTHER_MAC, "dev", a_intf,
       "nud", "permanent")
    sh("ip", "-n", a_ns, "route", "replace", f"{b_ip}/32", "dev", a_intf)
    assert not ping(a_ns, b_ip)


def test_accept_program_leaves_no_mount_behind():
    with hostaddr.accept_program() as pinned:
        directory = os.path.dirname(pinned)
        assert os.path.exists(pinned)
    assert not os.path.exists(directory)
    with open("/proc/self/mounts") as f:
        assert directory not in f.read()
