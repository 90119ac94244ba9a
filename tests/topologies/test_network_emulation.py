"""A star:2 network with the builtin switch, programmed by the controller: hosts ping each
other through p4src's /32 routes, and stopping the network leaves nothing behind."""

import os

import pytest

from topologies.fabric import Fabric
from topologies.net import interface_names
from topologies.spec import parse_topology
from topologies.switches import REPO, port_accepts, python_executable

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def pids_alive(pids):
    return [pid for pid in pids if os.path.exists(f"/proc/{pid}")
            and "Z" not in open(f"/proc/{pid}/stat").read().split()[2]]


def ping(host, address, count=3, timeout=5):
    """Replies received, with our ICMP probe run in the host (no ping binary needed)."""
    output = host.cmd(f"cd {REPO} && {python_executable()} -m topologies.probe {address} "
                      f"--count {count} --timeout {timeout}")
    return output.strip().splitlines()[-1]


def test_star2_ping_and_cleanup(tmp_path):
    spec = parse_topology("star:2")
    fabric = Fabric(spec, "builtin", build_dir=str(tmp_path / "build"),
                    log_dir=str(tmp_path / "logs"), say=lambda message: None)
    with fabric:
        net = fabric.network
        h1, h2 = net.host("h1"), net.host("h2")
        switch_pid = net.switch("s1").process.pid
        host_pids = [h1.pid, h2.pid]
        assert ping(h1, "10.0.0.2") == "3/3 replies from 10.0.0.2"
        assert ping(h2, "10.0.0.1") == "3/3 replies from 10.0.0.1"
        # an address no host has is not answered (no route, and no ARP entry either)
        assert ping(h1, "10.0.0.3", count=1, timeout=1) == "0/1 replies from 10.0.0.3"
    assert pids_alive([switch_pid] + host_pids) == []
    assert [n for n in interface_names(spec) if os.path.exists(f"/sys/class/net/{n}")] == []
    assert not port_accepts(spec.switches[0].grpc_port)
    assert os.path.exists(tmp_path / "logs" / "s1.out")
