"""Benchmark support: C traffic between two hosts of a device_env.Network, so that Python is
not what limits the rate (bench_native_io.py, bench_veth.py).

A paced C sender (native_traffic.c) sends N copies of a frame from h1, each with a 64-bit
sequence number at a given offset, while h2 counts them: with a C receiver on a PACKET_MMAP
ring ("ring": frames of the right length and EtherType, in sequence order or not), or from
the counter of frames handed to h2's interface ("counter": no socket at h2, whose delivery
would cost the sending side's CPU). Loss is always sent - received.
"""
import ctypes
import os
import socket
import threading
import time

from device_env import in_netns
from p4switch.backend.c import build

_HERE = os.path.dirname(os.path.abspath(__file__))
SOL_PACKET, PACKET_IGNORE_OUTGOING = 263, 23
_libc = ctypes.CDLL(None)


def traffic_library() -> ctypes.CDLL:
    with open(os.path.join(_HERE, "native_traffic.c")) as f:
        lib = build.load(build.build_shared("native_traffic", {"native_traffic.c": f.read()},
                                            include_runtime=False))
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    lib.traffic_send.restype = u64
    lib.traffic_send.argtypes = [ctypes.c_int, ctypes.c_char_p, u32, u32, u64, ctypes.c_double,
                                 ctypes.POINTER(u64)]
    lib.traffic_receive.restype = ctypes.c_int
    lib.traffic_receive.argtypes = [ctypes.c_int, u32, ctypes.c_uint16, u32, u64, ctypes.c_int,
                                    ctypes.POINTER(u64), ctypes.POINTER(ctypes.c_int)]
    return lib


def host_socket(host, receive: bool) -> socket.socket:
    """A raw socket on the host's eth0: the receiver's gets every frame but its own, the
    sender's (protocol 0) none."""
    def make():
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        sock.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)          # SO_SNDBUFFORCE
        if receive:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            sock.bind(("eth0", 3))
        else:
            sock.bind(("eth0", 0))
        return sock
    return in_netns(host.namespace, make)


def named(name: str, function):
    """`function` run on a thread with an OS-level name (shown by top -H and perf)."""
    def target():
        _libc.prctl(15, name.encode(), 0, 0, 0)      # PR_SET_NAME
        function()
    return target


def count_delivered(interface: str, count: int, out, ready) -> int:
    """The cheap receiver: follow the count of frames the switch side of h2's veth pair
    handed to h2 (its tx_packets) every millisecond, until `count` more or none for a second;
    fills `out` as traffic_receive does (no sequence check, no drop count)."""
    path = f"/sys/class/net/{interface}/statistics/tx_packets"

    def read() -> int:
        with open(path) as f:
            return int(f.read())
    base = last_value = read()
    ready.value = 1
    last_change = time.monotonic()
    while last_value - base < count and time.monotonic() - last_change < 1.0:
        time.sleep(0.001)
        value, now = read(), time.monotonic_ns()
        if value != last_value:
            if last_value == base:
                out[1] = now
            out[2], last_change, last_value = now, now / 1e9, value
    out[0] = last_value - base
    return 0


def run_traffic(lib, h1, h2, frame: bytes, seq_at: int, count: int, rate: float,
                receiver_kind: str = "ring", on_ready=None) -> dict:
    """Send `count` copies of `frame` from h1 at `rate` pps (0: as fast as the socket takes
    them) and count them at h2; `on_ready()` is called once the receiver is ready, just
    before the first frame. Returns sent, received, offered and forwarded pps (received /
    first-to-last arrival), disorder and the receiver's own drops."""
    ethertype = int.from_bytes(frame[12:14], "big")
    sender, receiver = host_socket(h1, receive=False), host_socket(h2, receive=True)
    try:
        out = (ctypes.c_uint64 * 5)()
        ready = ctypes.c_int(0)
        outcome = {}
        if receiver_kind == "ring":
            receive = lambda: outcome.update(rc=lib.traffic_receive(   # noqa: E731
                receiver.fileno(), len(frame), ethertype, seq_at, count, 1000, out,
                ctypes.byref(ready)))
        else:
            receiver.close()
            receive = lambda: outcome.update(rc=count_delivered(      # noqa: E731
                h2.switch_interface, count, out, ready))
        counting = threading.Thread(target=named("receiver", receive))
        counting.start()
        while not ready.value and counting.is_alive():
            time.sleep(0.01)
        if on_ready is not None:
            on_ready()
        elapsed = ctypes.c_uint64()
        sending = threading.Thread(target=named("sender", lambda: outcome.update(
            sent=lib.traffic_send(sender.fileno(), frame, len(frame), seq_at, count,
                                  rate or 0.0, ctypes.byref(elapsed)))))
        sending.start()
        sending.join()
        counting.join()
        if outcome.get("rc"):
            raise OSError(-outcome["rc"], "receiver ring setup failed")
    finally:
        sender.close()
        receiver.close()
    received, first, last, disorder, receiver_drops = out
    span = (last - first) / 1e9
    sent = outcome["sent"]
    return {"sent": sent, "received": received,
            "offered": sent / (elapsed.value / 1e9) if elapsed.value else float("nan"),
            "forwarded": received / span if received > 1 and span > 0 else float("nan"),
            "disorder": disorder, "receiver_drops": receiver_drops}
