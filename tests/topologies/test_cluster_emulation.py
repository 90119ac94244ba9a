"""Mininet's cluster mode on one machine: a second "server" made of a network namespace with
its own sshd (tests/topologies/ssh_server.py), reached over a veth with a key made for the
test.  `experiments compare --cluster localhost,<server>` places star:4 with two hosts on
each server (the switch and h1, h2 here; h3, h4 there, their links ssh tunnels), the
controller programs the switch, and the allreduces come out exact.  Everything the test made
is gone afterwards: the namespace, veths and tunnels, sshd and its sessions, the key files,
the ssh_config drop-in.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))

from ssh_server import NamespaceSSHServer  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

SSH_DIR = os.path.expanduser("~/.ssh")
SSH_MUX_DIR = os.path.join(SSH_DIR, "mn")     # MininetCluster makes it (mkdir -p)


def interfaces() -> set:
    return set(os.listdir("/sys/class/net"))


@contextlib.contextmanager
def namespace_server(**options):
    """NamespaceSSHServer, and ~/.ssh/mn (and ~/.ssh) removed afterwards when MininetCluster
    made them (it runs mkdir -p) and they are empty."""
    made = [d for d in (SSH_DIR, SSH_MUX_DIR) if not os.path.isdir(d)]
    try:
        with NamespaceSSHServer(**options) as srv:
            yield srv
    finally:
        for directory in reversed(made):
            if os.path.isdir(directory) and not os.listdir(directory):
                os.rmdir(directory)


@pytest.fixture
def server():
    before = interfaces()
    with namespace_server() as srv:
        yield srv
    assert not os.path.exists(srv.config_file)
    assert srv.namespace not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                               text=True).stdout
    assert interfaces() - before == set()


def compare(argv: list, timeout: int = 400):
    return subprocess.run([sys.executable, "-m", "experiments", "compare"] + argv, cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def test_star4_allreduce_over_two_servers_is_exact(server, tmp_path):
    out = tmp_path / "out"
    before = interfaces()
    result = compare(["--topo", "star:4", "--modes", "ina,ring", "--elements", "20000",
                      "--dtype", "int32", "--switch", "builtin", "--k", "64",
                      "--cluster", f"localhost,{server.ip}", "--out", str(out),
                      "--run-timeout", "300"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"placement: localhost: h1 h2 s1; {server.ip}: h3 h4" in result.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [(r["mode"], r["workers"], r["correct"], r["max_abs_err"]) for r in runs] == \
        [("ina", 4, True, 0), ("ring", 4, True, 0)]
    for run in runs:
        assert [r["correct"] for r in run["reports"]] == [True] * 4
    meta = json.loads((out / "results.json").read_text())["meta"]
    assert meta["cluster"] == {"servers": ["localhost", server.ip], "placement": "spread",
                               "tunnel": "ssh"}
    # h3 and h4 really ran there: their shells and workers logged in over ssh
    assert server.log().count("Accepted publickey for root") >= 4
    # the network is gone on both servers: no interface left here, no process there but sshd
    assert interfaces() - before == set()
    assert server.namespace_processes() == [server.sshd.pid]


def test_unreachable_server_is_one_line_exit_1(server, tmp_path):
    result = compare(["--topo", "star:4", "--modes", "ina", "--elements", "100",
                      "--switch", "builtin", "--cluster", "localhost,10.250.254.254",
                      "--out", str(tmp_path / "out")], timeout=120)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: --cluster: server 10.250.254.254: ")
    assert "Traceback" not in result.stderr


def test_gre_tunnel_without_gretap_is_refused(server, tmp_path):
    """Where the kernel has no gretap (this machine: 'Error: Unknown device type.'), --tunnel
    gre fails before anything is built, saying so."""
    probe = subprocess.run(["ip", "link", "add", "ina-greprobe", "type", "gretap", "local",
                            "127.0.0.1", "remote", "127.0.0.2"], capture_output=True, text=True)
    if probe.returncode == 0:
        subprocess.run(["ip", "link", "del", "ina-greprobe"])
        pytest.skip("this kernel has gretap: the refusal cannot be shown here")
    result = compare(["--topo", "star:4", "--modes", "ina", "--elements", "100",
                      "--switch", "builtin", "--cluster", f"localhost,{server.ip}",
                      "--tunnel", "gre", "--out", str(tmp_path / "out")], timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: --tunnel gre: this kernel cannot make gretap links ('ip link add type "
        f"gretap': {probe.stderr.strip()}); use --tunnel ssh")


def test_bad_cluster_lists_exit_2(tmp_path):
    for value, words in (("localhost", "at least two servers"),
                         ("localhost,localhost", "named twice"),
                         ("localhost,", "empty server name")):
        result = compare(["--topo", "star:4", "--elements", "10", "--switch", "builtin",
                          "--cluster", value, "--out", str(tmp_path / "out")], timeout=60)
        assert result.returncode == 2, value
        assert words in result.stderr.strip().splitlines()[-1]


def test_lab_with_the_switch_on_the_other_server(server, tmp_path):
    """`lab --cluster SERVER,localhost`: the switch process runs on the namespace server (over
    ssh, its gRPC port forwarded here), h3 and h4 here reach it through ssh tunnels; the lab
    CLI's allreduce is exact on all four ranks.  The lab runs as under nohup (SIGHUP
    ignored, and so in its ssh children): its stop still ends the remote shells
    (topologies.cluster.EndsUnderNohup), where it used to wait for them forever."""
    script = tmp_path / "script"
    script.write_text("allreduce 1 5000\n")
    result = subprocess.run([sys.executable, "-m", "lab", "--topo", "star:4", "--switch",
                             "builtin", "--cluster", f"{server.ip},localhost", "--cli",
                             "--script", str(script), "--logs", str(tmp_path / "logs"),
                             "--no-pcap"], cwd=REPO, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=400,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert f"placement: {server.ip}: h1 h2 s1; localhost: h3 h4" in output
    for rank, host in enumerate(("h1", "h2", "h3", "h4")):
        assert f"{host} rank {rank}: correct" in output, output[-3000:]
    assert "ina job 1, 5000 x int32 on 4 workers: correct" in output
    # the switch's output came back through ssh, and its process is gone with the network
    assert "ina-remote-pid" in (tmp_path / "logs" / "s1.out").read_text()
    assert server.namespace_processes() == [server.sshd.pid]


def test_remote_switch_killed_is_restarted_and_the_job_exact(server, tmp_path):
    """compare --kill-switch on a switch that runs on the other server: its ssh is killed,
    its process there ends with it, the supervisor starts it again over ssh (forward and
    all) and the controller reprograms it; the allreduce comes out exact."""
    out = tmp_path / "out"
    result = compare(["--topo", "star:4", "--modes", "ina", "--elements", "1000000",
                      "--dtype", "int32", "--k", "256", "--switch", "builtin",
                      "--cluster", f"{server.ip},localhost", "--kill-switch", "s1@0.3",
                      "--out", str(out), "--run-timeout", "300"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"placement: {server.ip}: h1 h2 s1; localhost: h3 h4" in result.stderr
    assert "switch s1 restarted; pipeline, routes and jobs re-installed" in result.stderr
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert (run["correct"], run["max_abs_err"]) == (True, 0)
    # two processes ran there, one after the other
    assert (out / "logs" / "s1.out").read_text().count("ina-remote-pid") == 2
    assert server.namespace_processes() == [server.sshd.pid]


def test_server_without_permit_tunnel_is_one_line_exit_1(tmp_path):
    """An sshd that does not permit tunnels: Mininet's RemoteSSHLink reads the first
    character `ssh -w ... 'echo @'` prints; when ssh's "Tunnel forwarding failed" comes
    first it raises that, when "@" does, the link seems made and the next tunnel fails on
    the tap9 left behind.  Either way compare stops with Mininet's message in one line and
    removes what it had built."""
    before = interfaces()
    with namespace_server(permit_tunnel=False) as srv:
        result = compare(["--topo", "star:4", "--modes", "ina", "--elements", "100",
                          "--switch", "builtin", "--cluster", f"localhost,{srv.ip}",
                          "--out", str(tmp_path / "out")], timeout=180)
        assert result.returncode == 1, result.stderr[-2000:]
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("error: --cluster: building the network failed: "), last
        assert "Tunnel forwarding failed" in last or "tap9" in last, last
        assert "Traceback" not in result.stderr
        assert srv.namespace_processes() == [srv.sshd.pid]
    assert interfaces() - before == set()
