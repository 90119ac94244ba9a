"""Test helpers: network namespaces with veth pairs to a switch process, raw sockets inside
those namespaces, and starting/stopping `python -m p4switch run`.

Everything is named after the test process's pid and removed on exit.
"""
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import grpc

from p4switch.device.ports import enable_vlan_auxdata, receive_frame

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ipv4_forward.p4")
CPU_PORT = 255
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def compile_program(program: str, out_dir) -> tuple:
    """(p4info path, device config path) of `program` from `python -m p4switch compile`."""
    stem = os.path.join(str(out_dir), os.path.splitext(os.path.basename(program))[0])
    device_config, p4info = stem + ".json", stem + ".txtpb"
    result = subprocess.run([sys.executable, "-m", "p4switch", "compile", program,
                             "-o", device_config, "--p4runtime-files", p4info],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return p4info, device_config


def sh(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


def in_netns(namespace: str, function):
    """Run `function()` on a thread that has entered network namespace `namespace`."""
    outcome = {}

    def target():
        try:
            with open(f"/var/run/netns/{namespace}") as f:
                if _libc.setns(f.fileno(), _CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {namespace} failed")
            outcome["value"] = function()
        except BaseException as e:  # handed back to the caller's thread
            outcome["error"] = e
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class Host:
    """A namespace with one interface `eth0` whose peer is a switch port."""

    def __init__(self, namespace: str, switch_interface: str, port: int, mac: str, ip: str):
        self.namespace, self.switch_interface = namespace, switch_interface
        self.port, self.mac, self.ip = port, mac, ip
        self.sock = None

    def open_socket(self) -> None:
        def make():
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            enable_vlan_auxdata(sock)
            sock.bind(("eth0", 3))
            return sock
        self.sock = in_netns(self.namespace, make)

    def send(self, frame: bytes) -> None:
        self.sock.send(frame)

    def drain(self) -> None:
        self.receive(timeout=0.05)

    def receive(self, count: int | None = None, timeout: float = 2.0) -> list[bytes]:
        """Frames arriving on eth0 (not ones the host sent) until `count` or `timeout`."""
        frames, deadline = [], time.monotonic() + timeout
        while count is None or len(frames) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                data, packet_type = receive_frame(self.sock)
            except socket.timeout:
                break
            if packet_type != socket.PACKET_OUTGOING:
                frames.append(data)
        return frames


NAPI_MODES = ("off", "gro", "threaded")


def set_napi(interface: str, mode: str, namespace: str | None = None) -> None:
    """Give a veth end a NAPI context (`mode` "gro": GRO on, so a sender's veth queues frames
    for this end's NAPI poll instead of running its input inside the send) and, "threaded",
    poll it in its own kernel thread (napi/IFACE-N) rather than in softirq on the sender's
    CPU; "off": GRO off, no NAPI (input runs in the sender's transmit)."""
    prefix = [] if namespace is None else ["ip", "netns", "exec", namespace]
    sh(*prefix, "ethtool", "-K", interface, "gro", "off" if mode == "off" else "on")
    sh(*prefix, "sh", "-c", f"echo {int(mode == 'threaded')} > "
                            f"/sys/class/net/{interface}/threaded")


class Network:
    """`count` hosts, each in its own namespace, on switch ports 1..count; `napi` (NAPI_MODES)
    on the host ends (`napi_ends` "hosts") or on both ends ("all")."""

    def __init__(self, count: int, napi: str = "off", napi_ends: str = "hosts"):
        tag = f"{os.getpid() % 100000}"
        self.hosts = []
        try:
            for n in range(1, count + 1):
                namespace, interface = f"p4dev{tag}h{n}", f"pd{tag}s{n}"
                host = Host(namespace, interface, n, f"00:00:00:00:00:{n:02x}", f"10.0.{n}.1")
                self.hosts.append(host)
                sh("ip", "netns", "add", namespace)
                sh("ip", "link", "add", interface, "type", "veth", "peer", "name", "eth0",
                   "netns", namespace)
                for ns_prefix in ([], ["ip", "netns", "exec", namespace]):
                    iface = "eth0" if ns_prefix else interface
                    sh(*ns_prefix, "sysctl", "-qw", f"net.ipv6.conf.{iface}.disable_ipv6=1")
                    sh(*ns_prefix, "ethtool", "-K", iface, "rx", "off", "tx", "off",
                       "tso", "off", "gso", "off", "gro", "off", "rxvlan", "off",
                       "txvlan", "off")
                    sh(*ns_prefix, "ip", "link", "set", iface, "up")
                sh("ip", "netns", "exec", namespace, "ip", "link", "set", "eth0",
                   "address", host.mac)
                sh("ip", "netns", "exec", namespace, "ip", "addr", "add", f"{host.ip}/16",
                   "dev", "eth0")
                if napi != "off":
                    set_napi("eth0", napi, namespace)
                    if napi_ends == "all":
                        set_napi(interface, napi)
                host.open_socket()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for host in self.hosts:
            if host.sock is not None:
                host.sock.close()
            subprocess.run(["ip", "link", "del", host.switch_interface], capture_output=True)
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SwitchProcess:
    """`python -m p4switch run --no-p4` (or with a program) on the network's interfaces."""

    def __init__(self, network: Network, log_path: str | None, extra=(), device_id: int = 0,
                 program: str | None = None):
        self.address = f"127.0.0.1:{free_tcp_port()}"
        self.device_id = device_id
        command = [sys.executable, "-m", "p4switch", "run", program or "--no-p4",
                   "--device-id", str(device_id), *extra]
        if log_path is not None:
            command += ["--log-file", log_path]
        for host in network.hosts:
            command += ["-i", f"{host.port}@{host.switch_interface}"]
        command += ["--", "--grpc-server-addr", self.address, "--cpu-port", str(CPU_PORT)]
        self.log_path = log_path
        # stderr to a file, not a pipe: a pipe nobody reads could fill up and stall the switch.
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                                        stderr=self._stderr)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float = 30.0) -> None:
        channel = grpc.insecure_channel(self.address)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"switch exited early: {self.stderr()}")
                try:
                    grpc.channel_ready_future(channel).result(timeout=0.5)
                    return
                except grpc.FutureTimeoutError:
                    pass
            raise RuntimeError(f"switch did not start listening on {self.address}")
        finally:
            channel.close()

    def stop(self) -> int:
        """SIGTERM the switch; returns its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def stderr(self) -> str:
        """What the switch wrote on stderr so far."""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")


@contextlib.contextmanager
def running_switch(network: Network, tmp_path, **kwargs):
    switch = SwitchProcess(network, str(tmp_path / "switch.log"), **kwargs)
    try:
        yield switch
    finally:
        switch.stop()
