"""Benchmark (not a test): packets/s the native packet loop of the C back end
(p4switch/backend/c/runtime/io.c) forwards through the "wire" pipeline (native_wire.c) over
veth pairs between two network namespaces.

    sudo .venv/bin/python tests/device/bench_native_io.py [--count N] [--size BYTES]
        [--rate PPS ...] [--rx ring|mmsg] [--ring-kb KIB] [--nap US] [--receiver ring|counter]
        [--loop-nice N] [--repeat N]

A C sender (native_traffic.c) sends N frames from h1, paced at each --rate (or as fast as its
raw socket takes them), while a C receiver counts them at h2 through a PACKET_MMAP ring; the
loop runs on a thread of this process. Prints per run the offered and forwarded rates, the
loss and where it happened (the loop's receive ring, its sends, the receiver's ring), and the
loop thread's CPU time per forwarded frame. --rx mmsg makes the loop receive with recvmmsg
instead of its TPACKET_V2 ring; --nap 0 makes it always wait on its sockets (see
p4io_set_tuning in io.h); --ring-kb sizes its receive ring per port (default 8192: 4,096
frames of MTU 1500; losses counted as "loop ring" are that ring overflowing while the loop is
behind). --receiver counter counts at h2 from the veth's counters instead of with a socket,
whose delivery costs the loop's CPU (the kernel delivers to h2 in the loop's sendmmsg).
--loop-nice runs the loop's thread at another nice value, to see what scheduling costs.
"""
import argparse
import os
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(os.path.dirname(_HERE))]   # test helpers, repository

from device_env import Network  # noqa: E402
from native_traffic import named, run_traffic, traffic_library  # noqa: E402
from native_wire import Wire  # noqa: E402
from p4switch.backend.c.io import NativePorts  # noqa: E402

ETHERTYPE = 0x88b5
CPU_PORT = 255


def thread_cpu_seconds(tid: int) -> float:
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(lib, ports, loop_thread, h1, h2, count: int, size: int, rate: float,
            receiver_kind: str = "ring") -> dict:
    frame = (bytes.fromhex(h2.mac.replace(":", "")) + bytes.fromhex(h1.mac.replace(":", ""))
             + ETHERTYPE.to_bytes(2, "big")).ljust(size, b"\0")
    before, cpu = {}, {}

    def ready():
        before.update({port: ports.stats(port) for port in (1, 2)})
        cpu["before"] = thread_cpu_seconds(loop_thread.native_id)
    r = run_traffic(lib, h1, h2, frame, 14, count, rate, receiver_kind, on_ready=ready)
    seconds = thread_cpu_seconds(loop_thread.native_id) - cpu["before"]
    after = {port: ports.stats(port) for port in (1, 2)}
    delta = {port: {k: after[port][k] - before[port][k] for k in after[port]} for port in (1, 2)}
    r.update(loop_rx=delta[1]["rx_frames"], loop_ring_drops=delta[1]["rx_dropped"],
             loop_tx_drops=delta[2]["tx_dropped"],
             cpu_us=seconds / max(delta[1]["rx_frames"], 1) * 1e6)
    return r


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
    parser.add_argument("--loop-nice", type=int, default=None, metavar="N",
                        help="run the loop's thread at this nice value (e.g. -10: scheduled "
                             "before the other processes on a shared machine)")
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
            if args.loop_nice is not None:
                while loop_thread.native_id is None:
                    time.sleep(0.001)
                os.setpriority(os.PRIO_PROCESS, loop_thread.native_id, args.loop_nice)
            for rate in args.rate or [0.0]:
                for _ in range(args.repeat):
                    r = measure(lib, ports, loop_thread, h1, h2, args.count, args.size, rate,
                                args.receiver)
                    lost = r["sent"] - r["received"]
                    ring = f" ring_kb={args.ring_kb}" if args.rx == "ring" else ""
                    print(f"rx={args.rx}{ring} nap={args.nap}/{args.nap_min} "
                          f"receiver={args.receiver} "
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
