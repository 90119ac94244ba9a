"""Benchmark (not a test): packets/s the native packet loop of the C back end
(p4switch/backend/c/runtime/io.c) forwards through the "wire" pipeline (native_wire.c) over
veth pairs between two network namespaces.

    sudo .venv/bin/python tests/device/bench_native_io.py [--count N] [--size BYTES]
        [--rate PPS ...] [--rx ring|mmsg] [--nap US] [--receiver ring|counter] [--repeat N]

A C sender (native_traffic.c) sends N frames from h1, paced at each --rate (or as fast as its
raw socket takes them), while a C receiver counts them at h2 through a PACKET_MMAP ring; the
loop runs on a thread of this process. Prints per run the offered and forwarded rates, the
loss and where it happened (the loop's receive ring, its sends, the receiver's ring), and the
loop thread's CPU time per forwarded frame. --rx mmsg makes the loop receive with recvmmsg
instead of its TPACKET_V2 ring; --nap 0 makes it always wait on its sockets (see
p4io_set_tuning in io.h). --receiver counter counts at h2 from the veth's counters instead of
with a socket, whose delivery costs the loop's CPU (the kernel delivers to h2 in the loop's
sendmmsg).
"""
import argparse
import ctypes
import os
import socket
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(os.path.dirname(_HERE))]   # test helpers, repository

from device_env import Network, in_netns  # noqa: E402
from native_wire import Wire  # noqa: E402
from p4switch.backend.c import build  # noqa: E402
from p4switch.backend.c.io import NativePorts  # noqa: E402

ETHERTYPE = 0x88b5
CPU_PORT = 255
SOL_PACKET, PACKET_IGNORE_OUTGOING = 263, 23


def traffic_library() -> ctypes.CDLL:
    with open(os.path.join(_HERE, "native_traffic.c")) as f:
        lib = build.load(build.build_shared("native_traffic", {"native_traffic.c": f.read()},
                                            include_runtime=False))
    u64 = ctypes.c_uint64
    lib.traffic_send.restype = u64
    lib.traffic_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32, u64,
                                 ctypes.c_double, ctypes.POINTER(u64)]
    lib.traffic_receive.restype = ctypes.c_int
    lib.traffic_receive.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_uint16, u64,
                                    ctypes.c_int, ctypes.POINTER(u64),
                                    ctypes.POINTER(ctypes.c_int)]
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


_libc = ctypes.CDLL(None)


def named(name: str, function):
    """`function` run on a thread with an OS-level name (shown by top -H and perf)."""
    def target():
        _libc.prctl(15, name.encode(), 0, 0, 0)      # PR_SET_NAME
        function()
    return target


def thread_cpu_seconds(tid: int) -> float:
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_delivered(interface: str, count: int, out, ready) -> int:
    """The cheap receiver: follow the veth's count of frames handed to the host (its
    tx_packets) every millisecond, until `count` more or none for a second; fills `out` as
    traffic_receive does (no sequence check, no drop count)."""
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


def measure(lib, ports, loop_thread, h1, h2, count: int, size: int, rate: float,
            receiver_kind: str = "ring") -> dict:
    frame = (bytes.fromhex(h2.mac.replace(":", "")) + bytes.fromhex(h1.mac.replace(":", ""))
             + ETHERTYPE.to_bytes(2, "big")).ljust(size, b"\0")
    sender, receiver = host_socket(h1, receive=False), host_socket(h2, receive=True)
    try:
        before = {port: ports.stats(port) for port in (1, 2)}
        out = (ctypes.c_uint64 * 5)()
        ready = ctypes.c_int(0)
        outcome = {}
        if receiver_kind == "ring":
            receive = lambda: outcome.update(rc=lib.traffic_receive(   # noqa: E731
                receiver.fileno(), size, ETHERTYPE, count, 1000, out, ctypes.byref(ready)))
        else:
            receiver.close()
            receive = lambda: outcome.update(rc=count_delivered(      # noqa: E731
                h2.switch_interface, count, out, ready))
        counting = threading.Thread(target=named("receiver", receive))
        counting.start()
        while not ready.value and counting.is_alive():
            time.sleep(0.01)
        cpu_before = thread_cpu_seconds(loop_thread.native_id)
        elapsed = ctypes.c_uint64()
        sending = threading.Thread(target=named("sender", lambda: outcome.update(
            sent=lib.traffic_send(sender.fileno(), frame, size, count, rate or 0.0,
                                  ctypes.byref(elapsed)))))
        sending.start()
        sending.join()
        sent = outcome["sent"]
        counting.join()
        cpu = thread_cpu_seconds(loop_thread.native_id) - cpu_before
        if outcome.get("rc"):
            raise OSError(-outcome["rc"], "receiver ring setup failed")
        after = {port: ports.stats(port) for port in (1, 2)}
    finally:
        sender.close()
        receiver.close()
    received, first, last, disorder, receiver_drops = out
    delta = {port: {k: after[port][k] - before[port][k] for k in after[port]} for port in (1, 2)}
    span = (last - first) / 1e9
    return {"sent": sent, "received": received, "offered": sent / (elapsed.value / 1e9),
            "forwarded": received / span if received > 1 and span > 0 else float("nan"),
            "loop_rx": delta[1]["rx_frames"], "loop_ring_drops": delta[1]["rx_dropped"],
            "loop_tx_drops": delta[2]["tx_dropped"], "receiver_drops": receiver_drops,
            "disorder": disorder, "cpu_us": cpu / max(delta[1]["rx_frames"], 1) * 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="frame size in bytes")
    parser.add_argument("--rate", type=float, action="append", default=None,
                        help="offered packets/s (repeatable; default: as fast as possible)")
    parser.add_argument("--rx", choices=("ring", "mmsg"), default="ring",
                        help="how the loop receives (default: its TPACKET_V2 ring)")
    parser.add_argument("--ring-kb", type=int, default=8192,
                        help="the loop's receive ring per port in KiB (with --rx ring)")
    parser.add_argument("--nap", type=int, default=50, metavar="US",
                        help="the loop's sleep under load in microseconds (0: it always "
                             "waits on the sockets)")
    parser.add_argument("--nap-min", type=int, default=2,
                        help="frames per wake-up that count as load for the loop")
    parser.add_argument("--receiver-nap", type=int, default=50, metavar="US",
                        help="the receiver's sleep when its ring runs dry under load "
                             "(0: it waits on its socket, and the loop pays for waking it)")
    parser.add_argument("--receiver", choices=("ring", "counter"), default="ring",
                        help="count at h2 with a C receiver on a PACKET_MMAP ring (default), "
                             "or from the veth's counters (no socket at h2: the loop does "
                             "not pay for delivering to one)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    os.environ["TRAFFIC_NAP_US"] = str(args.receiver_nap)
    lib = traffic_library()
    network = Network(2)
    try:
        for host in network.hosts:          # the helpers' own sockets would queue copies
            host.sock.close()
            host.sock = None
        h1, h2 = network.hosts
        ports = NativePorts(cpu_port=CPU_PORT)
        ports.set_tuning(args.ring_kb if args.rx == "ring" else 0, args.nap, args.nap_min)
        wire = Wire(1, 2, CPU_PORT)
        try:
            for host in network.hosts:
                ports.add_port(host.port, host.switch_interface)
            ports.set_pipeline(wire.fn, wire.ptr)
            loop_thread = threading.Thread(target=named("p4io-loop", ports.run))
            loop_thread.start()
            for rate in args.rate or [0.0]:
                for _ in range(args.repeat):
                    r = measure(lib, ports, loop_thread, h1, h2, args.count, args.size, rate,
                                args.receiver)
                    lost = r["sent"] - r["received"]
                    print(f"rx={args.rx} nap={args.nap}/{args.nap_min} receiver={args.receiver} "
                          f"offered {r['offered']:.0f} pps "
                          f"({'max' if not rate else f'{rate:.0f} asked'}), {r['sent']} "
                          f"frames of {args.size} bytes: received {r['received']} "
                          f"({lost} lost: loop ring {r['loop_ring_drops']}, loop tx "
                          f"{r['loop_tx_drops']}, receiver {r['receiver_drops']}; "
                          f"{r['disorder']} out of order), {r['forwarded']:.0f} packets/s "
                          f"forwarded; loop CPU {r['cpu_us']:.2f} us/frame", flush=True)
        finally:
            ports.stop()
            if "loop_thread" in locals():
                loop_thread.join()
            ports.close()
            wire.free()
    finally:
        network.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
