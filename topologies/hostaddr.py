"""Host addressing without an ARP entry per pair of hosts: the fabric as one gateway.

The switches route on IPv4 and leave Ethernet addresses alone (p4src/forwarding.p4), and the
aggregation service already has an address and a MAC every host knows (SERVICE_IP,
SERVICE_MAC).  So instead of a static ARP entry for every other host (n - 1 per host, n^2 in
all: 1,046,528 entries and about as many `ip neigh` runs for 1,024 hosts), every host gets

* one permanent neighbour entry, SERVICE_IP -> SERVICE_MAC (as before), and
* its subnet routed through that address (`ip route replace <subnet> via SERVICE_IP onlink`),

so every frame a host sends to another host carries SERVICE_MAC as its destination.  Linux
drops an IPv4 frame whose destination MAC is not the interface's own (pkt_type OTHERHOST), so
every host interface also gets a small tc ingress program (classic `tc ... bpf da`, eBPF:
`accept_program`) that marks frames addressed to SERVICE_MAC as the host's own
(bpf_skb_change_type(skb, PACKET_HOST)) and leaves every other frame as the kernel classed
it: a host whose MAC changed still does not take in frames addressed to its old one.

The program is loaded once (bpf(2) from Python, no compiler), pinned in a bpf file system
mounted for the purpose in a temporary directory while the hosts' tc filters take it (tc run
through nsenter: `attach_all`), and unpinned and unmounted right after: the filters keep it
alive until the hosts' interfaces go.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import os
import platform
import shutil
import struct
import subprocess
import tempfile

from contracts.wire import SERVICE_IP, SERVICE_MAC

BPF_SYSCALL = {"x86_64": 321, "aarch64": 280}
BPF_PROG_LOAD, BPF_OBJ_PIN = 5, 6
BPF_PROG_TYPE_SCHED_CLS = 3
BPF_FUNC_SKB_CHANGE_TYPE = 32
PACKET_HOST = 0
SKB_DATA, SKB_DATA_END = 76, 80          # offsetof(struct __sk_buff, data / data_end)


class HostAddressingError(RuntimeError):
    """The accept program could not be loaded or pinned (one line)."""


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def accept_instructions(mac: str = SERVICE_MAC) -> bytes:
    """eBPF (sched_cls, direct action): frames whose destination MAC is `mac` become
    PACKET_HOST; every frame goes on (TC_ACT_OK)."""
    raw = bytes.fromhex(mac.replace(":", ""))
    word, half = struct.unpack("=IH", raw)          # as the loads below see them
    word = struct.unpack("=i", struct.pack("=I", word))[0]    # imm is signed 32 bits
    return b"".join([
        _insn(0xbf, dst=6, src=1),                  # r6 = skb
        _insn(0x61, dst=2, src=1, off=SKB_DATA),    # r2 = data (the Ethernet header)
        _insn(0x61, dst=3, src=1, off=SKB_DATA_END),
        _insn(0xbf, dst=4, src=2),                  # r4 = data + 6
        _insn(0x07, dst=4, imm=6),
        _insn(0x2d, dst=4, src=3, off=7),           # if r4 > data_end: out
        _insn(0x61, dst=4, src=2, off=0),           # r4 = dst MAC bytes 0..3
        _insn(0x56, dst=4, off=5, imm=word),        # if (u32) r4 != word: out
        _insn(0x69, dst=4, src=2, off=4),           # r4 = dst MAC bytes 4..5
        _insn(0x56, dst=4, off=3, imm=half),        # if (u32) r4 != half: out
        _insn(0xbf, dst=1, src=6),                  # bpf_skb_change_type(skb, PACKET_HOST)
        _insn(0xb7, dst=2, imm=PACKET_HOST),
        _insn(0x85, imm=BPF_FUNC_SKB_CHANGE_TYPE),
        _insn(0xb7, dst=0, imm=0),                  # out: TC_ACT_OK
        _insn(0x95),
    ])


def _bpf(libc, command: int, attr: bytes) -> int:
    number = BPF_SYSCALL.get(platform.machine())
    if number is None:
        raise HostAddressingError(f"no bpf(2) system call number for {platform.machine()}")
    buffer = ctypes.create_string_buffer(attr, len(attr))
    result = libc.syscall(number, command, buffer, len(attr))
    if result < 0:
        error = ctypes.get_errno()
        raise HostAddressingError(f"bpf({command}): {os.strerror(error)}")
    return result


def load_program(instructions: bytes, what: str) -> int:
    """A file descriptor of the eBPF sched_cls program `instructions` (the caller closes it);
    HostAddressingError naming `what` if the kernel refuses it."""
    libc = ctypes.CDLL(None, use_errno=True)
    code = ctypes.create_string_buffer(instructions)
    license = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(4096)
    attr = struct.pack("<IIQQIIQ", BPF_PROG_TYPE_SCHED_CLS, (len(code) - 1) // 8,
                       ctypes.addressof(code), ctypes.addressof(license), 1, len(log),
                       ctypes.addressof(log))
    try:
        return _bpf(libc, BPF_PROG_LOAD, attr.ljust(128, b"\0"))
    except HostAddressingError as e:
        detail = log.value.decode(errors="replace").strip().splitlines()[-1:]
        raise HostAddressingError(f"loading {what}: {e} {' '.join(detail)}".strip()) from None


def load_accept_program(mac: str = SERVICE_MAC) -> int:
    """A file descriptor of the loaded accept program (the caller closes it)."""
    return load_program(accept_instructions(mac), "the host accept program")


@contextlib.contextmanager
def pinned_programs(programs: dict):
    """{name: path} of the loaded programs {name: file descriptor} pinned in a bpf file
    system mounted for the purpose (`tc filter ... bpf da object-pinned PATH` takes them from
    there); unpinned, unmounted and removed on leaving.  The descriptors stay the caller's."""
    directory = tempfile.mkdtemp(prefix="ina-bpf-")
    mounted = False
    try:
        result = subprocess.run(["mount", "-t", "bpf", "bpf", directory],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise HostAddressingError(f"mount -t bpf: {result.stderr.strip() or 'failed'}")
        mounted = True
        libc = ctypes.CDLL(None, use_errno=True)
        paths = {}
        for name, fd in programs.items():
            path = os.path.join(directory, name)
            buffer = ctypes.create_string_buffer(path.encode())
            _bpf(libc, BPF_OBJ_PIN,
                 struct.pack("<QI", ctypes.addressof(buffer), fd).ljust(16, b"\0"))
            paths[name] = path
        yield paths
    finally:
        if mounted:
            subprocess.run(["umount", directory], capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def accept_program(mac: str = SERVICE_MAC):
    """The path of the accept program pinned in a bpf file system (pinned_programs)."""
    fd = load_accept_program(mac)
    try:
        with pinned_programs({"accept": fd}) as paths:
            yield paths["accept"]
    finally:
        os.close(fd)


def available() -> bool:
    """Whether this machine can load the accept program (root, a kernel with bpf(2))."""
    try:
        os.close(load_accept_program())
    except (HostAddressingError, OSError):
        return False
    return True


def gateway_command(host_ip: str, prefix_len: int, interface: str) -> str:
    """One shell line (run in the host) giving it its neighbour entry and its route through
    the service address."""
    subnet = ipaddress.ip_network(f"{host_ip}/{prefix_len}", strict=False)
    return " && ".join([
        f"ip neigh replace {SERVICE_IP} lladdr {SERVICE_MAC} dev {interface} nud permanent",
        f"ip route replace {subnet} via {SERVICE_IP} dev {interface} onlink",
    ])


def tc_batch(interface: str, pinned: str) -> str:
    """`tc -batch` lines putting the pinned accept program on an interface's ingress."""
    return (f"qdisc replace dev {interface} clsact\n"
            f"filter replace dev {interface} ingress pref 1 handle 1 bpf da "
            f"object-pinned {pinned}\n")


def attach_all(interfaces: list, pinned: str, batch: int = 32) -> None:
    """Put the accept program on every (network namespace file, e.g. /proc/PID/ns/net,
    interface).  tc runs from here, in the host's network namespace but in this process's
    mount namespace, where the program is pinned (Mininet's hosts have mount namespaces of
    their own, made before the bpf file system was mounted)."""
    for first in range(0, len(interfaces), batch):
        running = []
        for namespace, interface in interfaces[first:first + batch]:
            process = subprocess.Popen(
                ["nsenter", f"--net={namespace}", "tc", "-batch", "-"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True)
            process.stdin.write(tc_batch(interface, pinned))
            process.stdin.close()
            running.append((interface, process))
        failed = None
        for interface, process in running:
            output = process.stdout.read()
            process.stdout.close()
            if process.wait() != 0 and failed is None:
                failed = f"{interface}: tc: {' '.join(output.split())[-200:] or 'failed'}"
        if failed:
            raise HostAddressingError(failed)
