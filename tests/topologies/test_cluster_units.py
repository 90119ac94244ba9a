"""topologies/cluster.py without root: --cluster parsing, placement over servers (Mininet's
Placer classes and ours), the HTTP/2 readiness check the forwarded gRPC ports get, and the
commands' one-line refusals."""

import os
import socket
import subprocess
import sys
import threading

import grpc
import pytest
from concurrent import futures

from topologies.cluster import PLACERS, grpc_answers, parse_cluster
from topologies.spec import parse_topology

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_parse_cluster():
    cluster = parse_cluster("localhost, 10.0.9.2", user="alice")
    assert cluster.servers == ("localhost", "10.0.9.2")
    assert (cluster.user, cluster.placement, cluster.tunnel) == ("alice", "spread", "ssh")
    assert cluster.remote_servers() == ["10.0.9.2"]
    for text, words in (("a", "at least two"), ("a,a", "named twice"), ("a,,b", "empty")):
        with pytest.raises(ValueError, match=words):
            parse_cluster(text)
    with pytest.raises(ValueError, match="--placement"):
        parse_cluster("a,b", placement="nearest")
    with pytest.raises(ValueError, match="--tunnel"):
        parse_cluster("a,b", tunnel="vxlan")


def test_spread_places_hosts_and_switches_evenly():
    spec = parse_topology("star:4")
    assert parse_cluster("a,b").place(spec) == {"h1": "a", "h2": "a", "h3": "b", "h4": "b",
                                                "s1": "a"}
    spec = parse_topology("leafspine:2,1,2")
    placed = parse_cluster("a,b,c").place(spec)
    assert sorted(placed) == sorted([h.name for h in spec.hosts] +
                                    [s.name for s in spec.switches])
    for kind in (spec.hosts, spec.switches):      # bins differ by at most one
        counts = [sum(placed[n.name] == server for n in kind) for server in "abc"]
        assert max(counts) - min(counts) <= 1


def test_mininet_switchbin_keeps_hosts_with_their_switch():
    spec = parse_topology("leafspine:2,1,2")
    placed = parse_cluster("a,b", placement="switchbin").place(spec)
    for host in spec.hosts:
        switch, _ = spec.host_attachment(host.name)
        assert placed[host.name] == placed[switch]
    assert set(PLACERS) == {"spread", "switchbin", "roundrobin"}


def test_grpc_answers_only_for_an_http2_server():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        assert grpc_answers(port)
    finally:
        server.stop(0)
    # what an ssh forward does with nothing behind it: accept, then close
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def accept_and_close():
        connection, _ = listener.accept()
        connection.close()
    thread = threading.Thread(target=accept_and_close)
    thread.start()
    port = listener.getsockname()[1]
    assert not grpc_answers(port)
    thread.join()
    listener.close()
    assert not grpc_answers(port)   # nothing listening


@pytest.mark.parametrize("command", [["experiments", "compare", "--elements", "10",
                                      "--out", "/tmp/ina-unused"], ["lab"]])
def test_commands_refuse_a_one_server_cluster(command):
    result = subprocess.run([sys.executable, "-m"] + command + [
        "--topo", "star:4", "--switch", "builtin", "--cluster", "localhost"], cwd=REPO,
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "error: --cluster 'localhost': name at least two servers (localhost for this machine)")


def test_the_network_request_carries_the_cluster_and_refuses_it_with_bmv2(tmp_path, monkeypatch):
    from experiments.compare import build_parser
    from topologies.net import requested_network
    from contracts.requests import FabricRequest
    fake = tmp_path / "simple_switch_grpc"          # bmv2 "installed", never run
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    base = ["--topo", "star:4", "--modes", "ina", "--elements", "10", "--out", str(tmp_path)]
    def request(*options):
        return FabricRequest.from_options(build_parser().parse_args(base + list(options)))

    spec, kind, cluster = requested_network(request("--switch", "builtin", "--cluster",
                                                    "localhost,10.0.9.2"))
    assert (len(spec.hosts), kind, cluster.servers) == (4, "builtin", ("localhost", "10.0.9.2"))
    assert requested_network(request("--switch", "bmv2"))[2] is None
    with pytest.raises(ValueError, match="--cluster runs the builtin switch only"):
        requested_network(request("--switch", "bmv2", "--cluster", "localhost,10.0.9.2"))
