"""A second "server" on this machine for cluster-mode tests: a network namespace reached over
a veth pair, running its own sshd that accepts a key made for the test.

    with NamespaceSSHServer() as server:      # server.ip: the address to put in --cluster
        ...

What it makes, and removes on exit: the namespace (ina-srv<pid>), the veth pair (its root
end 10.250.X.1/30, the namespace end 10.250.X.2/30), a temporary directory with an ed25519
client key, the sshd host key, sshd_config, known_hosts and sshd's log, the sshd process
(started by us, ended by its pid), /run/sshd if it did not exist, and one drop-in file
/etc/ssh/ssh_config.d/ina-cluster-<pid>.conf that tells ssh which key and known_hosts file
to use for that address only (Mininet's cluster classes run plain `ssh user@ip`, so the key
cannot be passed on their command line).  The sshd permits tunnels (Mininet's RemoteSSHLink
uses `ssh -w`) and logins as root with a key.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

SSHD = "/usr/sbin/sshd"
SSH_CONFIG_DIR = "/etc/ssh/ssh_config.d"


def _run(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


class NamespaceSSHServer:
    def __init__(self, subnet: int = None, permit_tunnel: bool = True):
        tag = os.getpid() % 10000
        self.subnet = (os.getpid() % 200) + 20 if subnet is None else subnet
        self.namespace = f"ina-srv{tag}"
        self.veth = f"ina-sv{tag}"            # root end; the namespace end is ina-sp<tag>
        self.peer = f"ina-sp{tag}"
        self.local_ip = f"10.250.{self.subnet}.1"
        self.ip = f"10.250.{self.subnet}.2"
        self.config_file = os.path.join(SSH_CONFIG_DIR, f"ina-cluster-{tag}.conf")
        self.dir = None
        self.sshd = None
        self._made_run_sshd = False
        self._made = []          # what to undo, in reverse order
        self.permit_tunnel = permit_tunnel

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> "NamespaceSSHServer":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def _start(self) -> None:
        if not os.path.exists(SSHD):
            raise RuntimeError(f"{SSHD} is missing: apt-get install openssh-server")
        self.dir = tempfile.mkdtemp(prefix="ina-sshsrv-")
        d = self.dir
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ina-cluster-test",
             "-f", f"{d}/id_ed25519")
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{d}/host_key")
        shutil.copy(f"{d}/id_ed25519.pub", f"{d}/authorized_keys")
        with open(f"{d}/host_key.pub") as f:
            host_key = " ".join(f.read().split()[:2])
        with open(f"{d}/known_hosts", "w") as f:
            f.write(f"{self.ip} {host_key}\n")
        with open(f"{d}/sshd_config", "w") as f:
            f.write(f"ListenAddress {self.ip}\nPort 22\nHostKey {d}/host_key\n"
                    f"PidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    f"UseDNS no\nPermitTunnel {'yes' if self.permit_tunnel else 'no'}\n"
                    "AllowAgentForwarding yes\n"
                    "MaxSessions 100\nMaxStartups 100:30:200\n")
        os.chmod(f"{d}/host_key", 0o600)

        _run("ip", "netns", "add", self.namespace)
        self._made.append(lambda: _run("ip", "netns", "del", self.namespace))
        _run("ip", "link", "add", self.veth, "type", "veth", "peer", "name", self.peer)
        self._made.append(self._delete_veth)
        _run("ip", "link", "set", self.peer, "netns", self.namespace)
        _run("ip", "addr", "add", f"{self.local_ip}/30", "dev", self.veth)
        _run("ip", "link", "set", self.veth, "up")
        inside = ("ip", "netns", "exec", self.namespace)
        _run(*inside, "ip", "addr", "add", f"{self.ip}/30", "dev", self.peer)
        _run(*inside, "ip", "link", "set", self.peer, "up")
        _run(*inside, "ip", "link", "set", "lo", "up")

        if not os.path.isdir("/run/sshd"):        # sshd's privilege separation directory
            os.makedirs("/run/sshd", mode=0o755)
            self._made_run_sshd = True
        with open(self.config_file, "w") as f:
            f.write(f"Host {self.ip}\n    IdentityFile {d}/id_ed25519\n"
                    f"    IdentitiesOnly yes\n    UserKnownHostsFile {d}/known_hosts\n"
                    "    StrictHostKeyChecking yes\n")
        self._made.append(lambda: os.unlink(self.config_file))
        self.sshd = subprocess.Popen(list(inside) + [SSHD, "-D", "-f", f"{d}/sshd_config",
                                                     "-E", f"{d}/sshd.log"],
                                     stdin=subprocess.DEVNULL)
        self._wait_listening()

    def _wait_listening(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sshd.poll() is not None:
                raise RuntimeError(f"sshd exited with {self.sshd.returncode}: {self.log()}")
            with socket.socket() as s:
                s.settimeout(0.3)
                if s.connect_ex((self.ip, 22)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"sshd on {self.ip}:22 not listening after {timeout} s")

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "sshd.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def _delete_veth(self) -> None:
        if os.path.exists(f"/sys/class/net/{self.veth}"):
            _run("ip", "link", "del", self.veth)

    def namespace_processes(self) -> list:
        """Pids of the processes still in the server's namespace."""
        done = subprocess.run(["ip", "netns", "pids", self.namespace], capture_output=True,
                              text=True)
        return [int(p) for p in done.stdout.split()]

    def stop(self) -> None:
        if self.sshd is not None and self.sshd.poll() is None:
            self.sshd.terminate()
            try:
                self.sshd.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.sshd.kill()
                self.sshd.wait()
        self.sshd = None
        # ssh sessions sshd forked for the cluster (they outlive sshd's listener) and
        # anything left in the namespace: ended by pid before the namespace goes
        for pid in self.namespace_processes() if os.path.exists(
                f"/run/netns/{self.namespace}") else []:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
        while self._made:
            undo = self._made.pop()
            try:
                undo()
            except (OSError, RuntimeError):
                pass
        if self._made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)
            self._made_run_sshd = False
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
