"""Benchmark (not a test): packets/s of plain IPv4 forwarding through `python -m p4switch run`
over veth pairs between two network namespaces.

    sudo .venv/bin/python tests/device/bench_veth.py [--count N] [--size BYTES] [--log]

Compiles tests/device/ipv4_forward.p4, starts the switch with --no-p4, pushes the pipeline and
one route over P4Runtime, sends N UDP frames from h1 as fast as a raw socket allows, counts the
routed frames arriving at h2, and prints offered and forwarded rates.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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


def measure(h1, h2, count: int, size: int) -> dict:
    payload = b"\x00" * max(0, size - 42)
    frame = bytes(Ether(src=h1.mac, dst="00:00:00:00:01:00") /
                  IP(src=h1.ip, dst="10.0.2.1") / UDP(sport=1, dport=2) / payload)
    h2.drain()
    start = time.monotonic()
    for _ in range(count):
        h1.send(frame)
    sent_in = time.monotonic() - start
    received, first, last = 0, None, None
    while received < count:
        frames = h2.receive(count=count - received, timeout=1.0)
        if not frames:
            break
        now = time.monotonic()
        first = first if first is not None else now
        last = now
        received += len(frames)
    elapsed = (last if last is not None else time.monotonic()) - start
    return {"sent": count, "received": received, "frame_bytes": len(frame),
            "offered_pps": count / sent_in, "forwarded_pps": received / elapsed,
            "seconds": elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--size", type=int, default=100, help="frame size in bytes")
    parser.add_argument("--log", action="store_true", help="run the switch with a trace log")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        p4info, device_config = compile_program(directory)
        network = Network(2)
        try:
            log = os.path.join(directory, "switch.log") if args.log else None
            switch = SwitchProcess(network, log)
            try:
                client = install_route(switch, p4info, device_config, network.hosts[1])
                result = measure(network.hosts[0], network.hosts[1], args.count, args.size)
                client.close()
            finally:
                switch.stop()
        finally:
            network.close()
    print(f"sent {result['sent']} frames of {result['frame_bytes']} bytes at "
          f"{result['offered_pps']:.0f} pps; received {result['received']} in "
          f"{result['seconds']:.2f} s: {result['forwarded_pps']:.0f} packets/s forwarded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
