"""Benchmark (not a test): packets/s of plain IPv4 forwarding through `python -m p4switch run`
over veth pairs between two network namespaces.

    sudo .venv/bin/python tests/device/bench_veth.py [--count N] [--size BYTES] [--rate PPS]
        [--log] [--impair SPEC ...]

Compiles tests/device/ipv4_forward.p4, starts the switch with --no-p4, pushes the pipeline and
one route over P4Runtime, sends N UDP frames from h1 (paced, or as fast as a raw socket allows)
while a thread counts the routed frames arriving at h2, and prints offered and forwarded rates
and the loss, and the CPU time the switch process spent per forwarded frame (user + system,
from /proc: steadier than the rate on a machine the sender and receiver share). --impair
passes the switch impairments (docs/impairments.md), to measure what they cost.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(os.path.dirname(_HERE))]   # test helpers, repository

from device_env import PROGRAM, REPO, Network, SwitchProcess  # noqa: E402
from p4rt_client import INSERT, Client, load_p4info, update  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402


def compile_program(directory: str) -> tuple[str, str]:
    device_config = os.path.join(directory, "prog.json")
    p4info = os.path.join(directory, "p4info.txtpb")
    subprocess.run([sys.executable, "-m", "p4switch", "compile", PROGRAM, "-o", device_config,
                    "--p4runtime-files", p4info], cwd=REPO, check=True)
    return p4info, device_config


def install_route(switch: SwitchProcess, p4info_path: str, device_config_path: str, h2) -> Client:
    client = Client(switch.address, switch.device_id, election_id=1)
    client.arbitrate()
    with open(device_config_path, "rb") as f:
        client.set_pipeline(load_p4info(p4info_path), f.read())
    entry = client.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": (bytes([10, 0, 2, 0]), 24)},
                               "forward", {"dstMac": bytes.fromhex(h2.mac.replace(":", "")),
                                           "port": bytes([h2.port])})
    client.write(update(INSERT, table_entry=entry))
    return client


def _receive_all(h2, count: int, result: dict) -> None:
    """Count frames at h2 until `count` arrived or none came for a second."""
    received, first, last = 0, None, None
    while received < count:
        frames = h2.receive(count=1, timeout=1.0)
        if not frames:
            break
        last = time.monotonic()
        first = first if first is not None else last
        received += 1
    result.update(received=received, first=first, last=last)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (all its threads) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime


def measure(h1, h2, count: int, size: int, rate: float | None) -> dict:
    """Send `count` frames from h1 (paced at `rate` pps, or as fast as possible) while a
    thread counts them at h2; the forwarding rate is received / (last - first arrival)."""
    payload = b"\x00" * max(0, size - 42)
    frame = bytes(Ether(src=h1.mac, dst="00:00:00:00:01:00") /
                  IP(src=h1.ip, dst="10.0.2.1") / UDP(sport=1, dport=2) / payload)
    h2.drain()
    arrivals: dict = {}
    receiver = threading.Thread(target=_receive_all, args=(h2, count, arrivals))
    receiver.start()
    start = time.monotonic()
    for i in range(count):
        if rate and i % 50 == 0:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        h1.send(frame)
    sending = time.monotonic() - start
    receiver.join()
    span = (arrivals["last"] - arrivals["first"]) if arrivals["received"] > 1 else float("nan")
    return {"sent": count, "received": arrivals["received"], "frame_bytes": len(frame),
            "offered_pps": count / sending, "forwarded_pps": arrivals["received"] / span,
            "seconds": span}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--size", type=int, default=100, help="frame size in bytes")
    parser.add_argument("--rate", type=float, default=None,
                        help="offered packets/s (default: as fast as the sender can)")
    parser.add_argument("--log", action="store_true", help="run the switch with a trace log")
    parser.add_argument("--impair", action="append", default=[], metavar="SPEC",
                        help="an --impair option for the switch (repeatable)")
    parser.add_argument("--backend", default="c,python",
                        help="switch back ends to measure, in one run (default: c,python)")
    args = parser.parse_args()
    rates = {}
    for backend in args.backend.split(","):
        rates[backend] = run_one(args, backend)
    if len(rates) == 2 and all(rates.values()):
        (a, ra), (b, rb) = rates.items()
        print(f"{a}/{b}: {ra / rb:.1f}x")
    return 0


def run_one(args, backend: str) -> float:
    with tempfile.TemporaryDirectory() as directory:
        p4info, device_config = compile_program(directory)
        network = Network(2)
        try:
            log = os.path.join(directory, "switch.log") if args.log else None
            extra = [option for spec in args.impair for option in ("--impair", spec)]
            extra += ["--backend", backend]
            switch = SwitchProcess(network, log, extra=extra)
            try:
                client = install_route(switch, p4info, device_config, network.hosts[1])
                cpu_before = cpu_seconds(switch.process.pid)
                result = measure(network.hosts[0], network.hosts[1], args.count, args.size,
                                 args.rate)
                result["switch_cpu"] = cpu_seconds(switch.process.pid) - cpu_before
                client.close()
            finally:
                switch.stop()
        finally:
            network.close()
    lost = result["sent"] - result["received"]
    print(f"[{backend}] sent {result['sent']} frames of {result['frame_bytes']} bytes at "
          f"{result['offered_pps']:.0f} pps; received {result['received']} "
          f"({lost} lost) over {result['seconds']:.2f} s: "
          f"{result['forwarded_pps']:.0f} packets/s forwarded; switch CPU "
          f"{result['switch_cpu'] / max(result['received'], 1) * 1e6:.1f} us per forwarded "
          "frame")
    return result["forwarded_pps"]


if __name__ == "__main__":
    sys.exit(main())
