"""Several machines: a network placed over servers with Mininet's own cluster mode
(mininet.examples.cluster: MininetCluster, RemoteHost, RemoteSSHLink / RemoteGRELink, the
Placer classes).  topologies/net.py builds the same network as on one machine, with these
classes in place of Mininet's local ones when it is given a `Cluster`.

What runs where:
- hosts are Mininet RemoteHosts: their shells run over ssh on their server, in a namespace
  made there by mnexec; workers start in them over ssh (`cluster_popen`), from the same
  checkout path, under `watched_script` so that they end when the local ssh is ended;
- switches are our P4 target processes (`python -m p4switch run`), which must run on the
  server that holds their interfaces: `RemoteBuiltinP4Switch` starts the process there over
  ssh (same checkout path, `.venv` python) and forwards the switch's gRPC port with the same
  ssh connection (`-L 127.0.0.1:P:127.0.0.1:P`), so the aggregation manager keeps talking to
  127.0.0.1:P on the machine that runs it, the P4Runtime server stays on the remote
  loopback, and the traffic is ssh's (authenticated, encrypted).  The readiness check
  speaks HTTP/2 to the forward: a forward alone accepts TCP connections, only a gRPC server
  behind it answers;
- links between two nodes of one server are veths, links that cross servers are Mininet's
  tunnels: `ssh` (RemoteSSHLink: `ssh -w` tap tunnels, needs `PermitTunnel yes` on the
  servers) or `gre` (RemoteGRELink: gretap, needs the kernel's ip_gre and GRE between the
  servers; refused where the kernel has no gretap).

Requirements (docs/scaling.md): ssh from this machine to every server as the same user
without a password (BatchMode), sudo without a password there, the same checkout at the same
path on every server (with its .venv), and the output directory on a file system every
server shares at the same path (workers write their reports and wait at their start barrier
there).  `check_servers` tests all of that before anything is built and says in one line
what is missing.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Optional

from mininet.examples.cluster import (MininetCluster, Placer, RemoteGRELink, RemoteHost,
                                      RemoteMixin, RemoteSSHLink, RoundRobinPlacer,
                                      SwitchBinPlacer, findUser)

from topologies.switches import REPO, BuiltinP4Switch

TUNNELS = {"ssh": RemoteSSHLink, "gre": RemoteGRELink}
SSH_TUNNEL_TAP = "tap9"     # RemoteSSHLink makes each tunnel's tap under this name first
# Environment the processes started on a server get from ours (ssh does not pass it on).
FORWARDED_ENV_PREFIXES = ("P4SWITCH_",)
SSH_CHECK_TIMEOUT_S = 20


class EndsUnderNohup:
    """Mininet ends a node with SIGHUP to its shell's process group.  A remote node's shell is
    a local ssh, and ssh leaves SIGHUP ignored when it started ignored, as every child of a
    command run under nohup does: the shell lived on and Mininet's stop waited for it
    forever.  So the group gets SIGTERM too, which ssh obeys; the server's shell then gets
    its hangup from its own sshd."""

    def terminate(self):
        shell = getattr(self, "shell", None)
        if getattr(self, "isRemote", False) and shell is not None and shell.poll() is None:
            try:
                os.killpg(shell.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        super().terminate()


class ClusterHost(EndsUnderNohup, RemoteHost):
    """Mininet's RemoteHost that also ends when this run ignores hangups (EndsUnderNohup)."""


class ClusterError(RuntimeError):
    """A server cannot take part (one-line message)."""


class SpreadPlacer(Placer):
    """Switches and hosts each in evenly sized bins over the servers, in topology order
    (star:4 on two servers: s1, h1, h2 on the first, h3, h4 on the second), so that every
    server holds hosts.  Links between a host and a switch on another server become tunnels."""

    def __init__(self, *args, **kwargs):
        Placer.__init__(self, *args, **kwargs)
        self.placement = SwitchBinPlacer.bin(self.switches, self.servers)
        self.placement.update(SwitchBinPlacer.bin(self.hosts, self.servers))

    def place(self, node):
        return self.placement[node]


# spread: ours; switchbin: Mininet's (hosts with their switch); roundrobin: Mininet's
PLACERS = {"spread": SpreadPlacer, "switchbin": SwitchBinPlacer,
           "roundrobin": RoundRobinPlacer}


@dataclass(frozen=True)
class Cluster:
    servers: tuple               # names or addresses; "localhost" is this machine
    user: str
    placement: str = "spread"
    tunnel: str = "ssh"

    def place(self, spec) -> dict:
        """{node name: server} for a TopologySpec, by the chosen Mininet Placer."""
        placer = PLACERS[self.placement](
            servers=list(self.servers), nodes=[n.name for n in spec.hosts + spec.switches],
            hosts=[h.name for h in spec.hosts], switches=[s.name for s in spec.switches],
            links=[(l.node1, l.node2) for l in spec.links])
        return {name: placer.place(name) for name in
                [h.name for h in spec.hosts] + [s.name for s in spec.switches]}

    def server_ips(self) -> dict:
        ips = {s: RemoteMixin.findServerIP(s) for s in self.servers}
        unknown = [s for s, ip in ips.items() if not ip]
        if unknown:
            raise ClusterError(f"--cluster: cannot resolve server {unknown[0]} to an IPv4 "
                               "address")
        return ips

    def mininet(self, **params) -> MininetCluster:
        """Mininet's MininetCluster over our servers (its own precheck off: check_servers
        has made the same test, with one-line errors)."""
        return MininetCluster(servers=list(self.servers), serverIP=self.server_ips(),
                              user=self.user, placement=PLACERS[self.placement],
                              precheck=False, host=ClusterHost, link=TUNNELS[self.tunnel],
                              **params)

    @property
    def link_class(self) -> type:
        return TUNNELS[self.tunnel]

    def remote_servers(self) -> list:
        return [s for s in self.servers if s != "localhost"]


def parse_cluster(text: str, user: Optional[str] = None, placement: str = "spread",
                  tunnel: str = "ssh") -> Cluster:
    """--cluster server1,server2,...: at least two distinct servers ("localhost" for this
    machine); ValueError (one line) otherwise."""
    servers = tuple(s.strip() for s in text.split(","))
    if any(not s for s in servers):
        raise ValueError(f"--cluster {text!r}: empty server name")
    if len(servers) < 2:
        raise ValueError(f"--cluster {text!r}: name at least two servers "
                         "(localhost for this machine)")
    if len(set(servers)) != len(servers):
        raise ValueError(f"--cluster {text!r}: a server is named twice")
    if placement not in PLACERS:
        raise ValueError(f"--placement {placement!r}: choose {', '.join(PLACERS)}")
    if tunnel not in TUNNELS:
        raise ValueError(f"--tunnel {tunnel!r}: choose {', '.join(TUNNELS)}")
    return Cluster(servers, user or findUser(), placement, tunnel)


def add_cluster_arguments(parser) -> None:
    """--cluster, --cluster-user, --placement, --tunnel (compare and lab)."""
    parser.add_argument("--cluster", metavar="SERVER,SERVER[,...]", default=None,
                        help="place the network over these servers with Mininet's cluster "
                             "mode (localhost: this machine); see docs/scaling.md")
    parser.add_argument("--cluster-user", metavar="USER", default=None,
                        help="ssh user on every server (default: Mininet's: $SUDO_USER, "
                             "the logged-in user, else whoami)")
    parser.add_argument("--placement", choices=tuple(PLACERS), default="spread",
                        help="how --cluster places nodes: spread (hosts and switches evenly),"
                             " switchbin (hosts with their switch), roundrobin")
    parser.add_argument("--tunnel", choices=tuple(TUNNELS), default="ssh",
                        help="links between servers: ssh (ssh -w tap tunnels) or gre")


def cluster_of(request) -> Cluster:
    """The Cluster of a contracts.requests.ClusterRequest (--cluster and its options);
    ValueError (one line) for a bad one."""
    return parse_cluster(request.servers, request.user, request.placement, request.tunnel)


# -- checks ------------------------------------------------------------------------------

def ssh_base(cluster: Cluster, ip: str) -> list:
    """The ssh command Mininet's MininetCluster uses for its precheck, to user@ip."""
    return (["sudo", "-E", "-u", cluster.user] + MininetCluster.sshcmd
            + ["-o", f"ConnectTimeout={SSH_CHECK_TIMEOUT_S}", "-n", f"{cluster.user}@{ip}"])


def check_tunnel_support(tunnel: str) -> None:
    """GRE tunnels need gretap in this kernel (the servers' are checked when they are made)."""
    if tunnel != "gre":
        return
    name = f"ina-gre{os.getpid() % 10000}"
    done = subprocess.run(["ip", "link", "add", name, "type", "gretap", "local", "127.0.0.1",
                           "remote", "127.0.0.2"], capture_output=True, text=True)
    if done.returncode != 0:
        raise ClusterError("--tunnel gre: this kernel cannot make gretap links ('ip link add "
                           f"type gretap': {done.stderr.strip()}); use --tunnel ssh")
    subprocess.run(["ip", "link", "del", name], capture_output=True)


def check_servers(cluster: Cluster, shared_dirs=()) -> None:
    """Every remote server: ssh as the user without a password and sudo without one (what
    Mininet's precheck runs), the same checkout (this repository's path with its .venv
    python), ip tuntap for ssh tunnels, and each of shared_dirs visible (a marker file
    written here must be seen there).  ClusterError naming the first problem."""
    check_tunnel_support(cluster.tunnel)
    ips = cluster.server_ips()
    markers = []
    try:
        for directory in shared_dirs:
            os.makedirs(directory, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix=".ina-cluster-", dir=directory)
            os.close(fd)
            markers.append(path)
        python = os.path.join(REPO, ".venv", "bin", "python")
        for server in cluster.remote_servers():
            base = ssh_base(cluster, ips[server])
            _remote_check(base, "sudo true", server,
                          f"ssh {cluster.user}@{ips[server]} 'sudo true' failed (ssh key "
                          "login without a password and sudo without a password are needed)")
            _remote_check(base, f"test -x {shlex.quote(python)}", server,
                          f"no checkout at {REPO} with its .venv (the same checkout must be "
                          "at the same path on every server)")
            for marker in markers:
                _remote_check(base, f"test -e {shlex.quote(marker)}", server,
                              f"{os.path.dirname(marker)} is not shared with it (mount it at "
                              "the same path on every server, e.g. NFS)")
    finally:
        for marker in markers:
            os.unlink(marker)


def _remote_check(base: list, command: str, server: str, problem: str) -> None:
    try:
        done = subprocess.run(base + [command], capture_output=True, text=True,
                              timeout=SSH_CHECK_TIMEOUT_S + 10)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"--cluster: server {server}: no answer over ssh") from None
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[:160]
        raise ClusterError(f"--cluster: server {server}: {problem}"
                           + (f" ({said})" if said else ""))


# -- processes on servers ----------------------------------------------------------------

def forwarded_env() -> list:
    """`NAME=value` words for the environment remote processes take from ours."""
    return [f"{k}={v}" for k, v in sorted(os.environ.items())
            if k.startswith(FORWARDED_ENV_PREFIXES)]


PID_MARK = "ina-remote-pid"


def watched_script(args: list, announce_pid: bool = False) -> str:
    """The sh script a server runs for one of our processes: `args` from the checkout (with
    the forwarded environment) in the background, its pid printed first if announce_pid, and
    SIGTERM to it once our stdin ends, that is once the local ssh has ended, killed or not
    (ssh -tt's hangup does not get through sudo: a remote switch outlived its killed ssh).
    The exit status is the command's."""
    announce = f"echo {PID_MARK} $pid\n" if announce_pid else ""
    # sh gives a background job /dev/null as stdin unless redirected: hence fd 3
    return (f"cd {shlex.quote(REPO)} || exit 1\nexec 3<&0\n"
            f"env {shlex.join(forwarded_env() + list(args))} </dev/null &\n"
            f"pid=$!\n{announce}"
            "(cat <&3 >/dev/null; kill -TERM $pid 2>/dev/null) >/dev/null 2>&1 &\n"
            "exec 3<&-\nwait $pid\n")


def ssh_without_tty(node) -> list:
    """Mininet's ssh command for a remote node, without -tt (stdin stays a pipe)."""
    return [word for word in node.sshcmd if word != "-tt"]


def cluster_popen(node, args: list, **kwargs) -> subprocess.Popen:
    """Start `args` in a RemoteHost's namespace.  On another server: over ssh (Mininet's
    command for the node, without -tt), from the checkout (cwd there is REPO), so that the
    remote process ends when its local ssh is ended (`watched_script`: stdin is a pipe
    that stays open meanwhile); output (stdout/stderr kwargs) comes back through ssh.  On
    localhost: `mnexec -a PID args` as Mininet's Host.popen does.
    Not through RemoteMixin's popen: its preexec_fn runs Python in the forked child, which
    breaks with the controller's gRPC threads running (a worker died of it here), and it
    makes the child a group leader, so mnexec -d forks and the Popen ends before the command."""
    if not node.isRemote:
        return subprocess.Popen(["mnexec", "-a", str(node.pid)] + list(args),
                                start_new_session=True, **kwargs)
    kwargs.pop("cwd", None)
    kwargs["stdin"] = subprocess.PIPE
    argv = ssh_without_tty(node) + ["sudo", "-E", "mnexec", "-a", str(node.pid), "sh", "-c",
                                    shlex.quote(watched_script(args))]
    return subprocess.Popen(argv, start_new_session=True, **kwargs)


def server_run(node, argv: list) -> str:
    """Run a command in the root namespace of a remote node's server; its output.  (Not
    Mininet's rcmd: see cluster_popen on its preexec_fn.)"""
    done = subprocess.run(ssh_without_tty(node) + ["sudo", "-E"] + list(argv), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=SSH_CHECK_TIMEOUT_S + 10)
    return done.stdout


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def grpc_answers(port: int, host: str = "127.0.0.1") -> bool:
    """A gRPC (HTTP/2) server answers on host:port: it sends its SETTINGS frame after our
    connection preface.  An ssh forward with nothing listening behind it closes instead."""
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(HTTP2_PREFACE)
            return len(s.recv(9)) > 0
    except OSError:
        return False


class RemoteBuiltinP4Switch(EndsUnderNohup, RemoteMixin, BuiltinP4Switch):
    """Our P4 target on a server: the process runs there over ssh (`watched_script`: it ends
    when the connection does), its gRPC port forwarded to this machine's loopback by the same
    connection.  On localhost it is the plain BuiltinP4Switch."""

    PID_MARK = PID_MARK

    def _spawn(self, output_mode: str) -> None:
        if not self.isRemote:
            return BuiltinP4Switch._spawn(self, output_mode)
        port = self.grpc_port
        script = watched_script(self.command(), announce_pid=True)
        ssh = [word for word in ssh_without_tty(self) if word != self.dest]
        argv = ssh + ["-o", "ExitOnForwardFailure=yes",
                      "-L", f"127.0.0.1:{port}:127.0.0.1:{port}",
                      self.dest, "sudo -E sh -c " + shlex.quote(script)]
        with open(self.output_path, output_mode) as output:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=output,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def grpc_ready(self) -> bool:
        if not self.isRemote:
            return BuiltinP4Switch.grpc_ready(self)
        return grpc_answers(self.grpc_port)

    def process_label(self) -> str:
        if not self.isRemote:
            return BuiltinP4Switch.process_label(self)
        return f"{self.name} on {self.server}: switch process (ssh)"

    def not_ready(self) -> str:
        if not self.isRemote:
            return BuiltinP4Switch.not_ready(self)
        return (f"{self.name} on {self.server}: no gRPC answer through the forward of port "
                f"{self.grpc_port}")

    def remote_pid(self) -> Optional[int]:
        """The pid of the process on its server: the last one it printed (a restart appends
        to the same output file)."""
        pid = None
        try:
            with open(self.output_path, errors="replace") as f:
                for line in f:
                    if line.startswith(self.PID_MARK):
                        pid = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        return pid

    def restart_process(self, abort=None) -> int:
        """As BuiltinP4Switch's, once the remote process of the dead ssh is gone too (it ends
        a moment after its ssh; a new one started before would find the gRPC port taken and
        the controller reconnect to the old one): SIGKILL it by pid and wait for it."""
        pid = self.remote_pid() if self.isRemote else None
        if pid is not None:
            wait = (f"kill -KILL {pid} 2>/dev/null; n=0; while kill -0 {pid} 2>/dev/null "
                    "&& [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done")
            server_run(self, ["sh", "-c", shlex.quote(wait)])   # ssh joins words: quote
        return BuiltinP4Switch.restart_process(self, abort)

    def remote_stat(self) -> str:
        """The text of /proc/<pid>/stat of the switch process on its server ("" if unknown),
        for jobs/cpu.py: the local process is only its ssh."""
        pid = self.remote_pid()
        return server_run(self, ["cat", f"/proc/{pid}/stat"]) if pid is not None else ""

    def signal_stop(self):
        """SIGTERM the remote process by its pid (so it stops as a local one does, writing
        its final stats); the ssh connection then ends by itself."""
        if not self.isRemote:
            return BuiltinP4Switch.signal_stop(self)
        pid = self.remote_pid() if self.process is not None else None
        if pid is not None and self.process.poll() is None:
            server_run(self, ["kill", "-TERM", str(pid)])
        elif self.process is not None:
            BuiltinP4Switch.signal_stop(self)
