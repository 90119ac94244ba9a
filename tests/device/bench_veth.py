"""Benchmark (not a test): packets/s of plain IPv4 forwarding through `python -m p4switch run`
over veth pairs between two network namespaces, for each switch back end in one run.

    sudo .venv/bin/python tests/device/bench_veth.py [--count N] [--size BYTES] [--rate PPS]
        [--backend c,python,xdp] [--program FILE] [--receiver ring|counter|drop] [--ring-kb KIB]
        [--log] [--impair SPEC ...] [--threads N] [--json FILE] [--perf FILE]
        [--napi off|gro|threaded] [--napi-ends hosts|all] [--switch-qdisc SPEC]

Compiles tests/device/ipv4_forward.p4 (or --program: the XDP back end takes
tests/device/ipv4_route.p4, and needs --napi gro), and for each --backend starts the switch
with --no-p4,
pushes the pipeline and one route over P4Runtime, sends N UDP frames from h1 with a C sender
(native_traffic.c; paced, or as fast as its raw socket takes them) while h2 counts the routed
frames (a C receiver on a PACKET_MMAP ring, or the veth's counter: native_traffic.py; with
"drop" the route sends them to another host's MAC, so h2's input drops them as soon as it
sees the address, and the switch's CPU holds the least of h2's input veth lets it), and
prints offered and forwarded rates, the loss (sent - received) and the CPU time the switch
process spent per forwarded frame (user + system, from /proc: steadier than the rate on a
machine the sender and receiver share); then the back ends' ratio of forwarded rates. --impair
passes the switch impairments (docs/impairments.md), to measure what they cost. --ring-kb
sets the C back end's receive ring per port ($P4IO_RING_KB, p4switch/backend/c/runtime/io.h).
--threads passes the switch its --threads; --json appends each run's figures to FILE as one
JSON line (scripts/bench-cores.sh collects them); --perf records the switch process with
`perf record -g` while the frames flow (FILE.BACKEND) and prints where each microsecond per
frame went (perf_breakdown.py; --json records it too). --napi gives the veth ends a NAPI
context (device_env.set_napi): the receiving host's input then runs in NAPI polls, or with
"threaded" in kernel threads, instead of inside the switch's send; so besides the switch's CPU
each run prints (and --json records) that of the napi threads, ksoftirqd, this process (the C
sender and receiver) and the whole machine per forwarded frame (kernel_cpu.py), where moved
CPU shows. With --backend xdp it prints the XDP program's own run time per frame too (the
kernel's BPF statistics, read with bpftool while the loader's run_time_stats is held).
--switch-qdisc puts a root qdisc on the switch's ends (a veth whose peer polls with NAPI holds
frames back in it when the peer's 256-frame ring is full, rather than drop).
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(os.path.dirname(_HERE))]   # test helpers, repository

from device_env import NAPI_MODES, PROGRAM, REPO, Network, SwitchProcess  # noqa: E402
from kernel_cpu import snapshot  # noqa: E402
from native_traffic import run_traffic, traffic_library  # noqa: E402
from p4rt_client import INSERT, Client, load_p4info, update  # noqa: E402
from p4switch.backend.xdp.loader import run_time_stats  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402


def compile_program(directory: str, program: str = PROGRAM) -> tuple[str, str]:
    device_config = os.path.join(directory, "prog.json")
    p4info = os.path.join(directory, "p4info.txtpb")
    subprocess.run([sys.executable, "-m", "p4switch", "compile", program, "-o", device_config,
                    "--p4runtime-files", p4info], cwd=REPO, check=True)
    return p4info, device_config


OTHER_HOST_MAC = "02:00:00:00:00:fe"   # --receiver drop: no host's address


def install_route(switch: SwitchProcess, p4info_path: str, device_config_path: str, h2,
                  mac: str | None = None) -> Client:
    client = Client(switch.address, switch.device_id, election_id=1)
    client.arbitrate()
    with open(device_config_path, "rb") as f:
        client.set_pipeline(load_p4info(p4info_path), f.read())
    dst_mac = bytes.fromhex((mac or h2.mac).replace(":", ""))
    entry = client.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": (bytes([10, 0, 2, 0]), 24)},
                               "forward", {"dstMac": dst_mac, "port": bytes([h2.port])})
    client.write(update(INSERT, table_entry=entry))
    return client


SEQUENCE_AT = 42       # the sequence number goes in the UDP payload


def measure(lib, h1, h2, count: int, size: int, rate: float | None, receiver: str) -> dict:
    """Send `count` frames from h1 (paced at `rate` pps, or as fast as possible) while h2
    counts them; the forwarding rate is received / (last - first arrival). h2's kernel drops
    the frames silently (their UDP checksum no longer matches once the sequence number is
    written), so it sends nothing back."""
    payload = b"\x00" * max(8, size - SEQUENCE_AT)
    frame = bytes(Ether(src=h1.mac, dst="00:00:00:00:01:00") /
                  IP(src=h1.ip, dst="10.0.2.1") / UDP(sport=1, dport=2) / payload)
    result = run_traffic(lib, h1, h2, frame, SEQUENCE_AT, count, rate or 0.0, receiver)
    result["frame_bytes"] = len(frame)
    return result


def xdp_program_stats() -> tuple[int, int]:
    """(runs, nanoseconds) of the XDP back end's program, p4x_pipeline, from the kernel's
    BPF statistics (counted while a run_time_stats() of the loader is held)."""
    shown = subprocess.run(["bpftool", "--json", "prog", "show", "name", "p4x_pipeline"],
                           capture_output=True, text=True, check=True).stdout
    progs = json.loads(shown) if shown.strip().startswith("[") else [json.loads(shown)]
    return (sum(p.get("run_cnt", 0) for p in progs),
            sum(p.get("run_time_ns", 0) for p in progs))


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
                        help="switch back ends to measure, in one run (default: c,python; "
                             "xdp needs --program tests/device/ipv4_route.p4 and --napi gro)")
    parser.add_argument("--program", default=PROGRAM,
                        help="the P4 program (default: ipv4_forward.p4; its table ipv4_lpm "
                             "and action forward(dstMac, port) get the route)")
    parser.add_argument("--receiver", choices=("ring", "counter", "drop"), default="ring",
                        help="count at h2 with a C receiver on a PACKET_MMAP ring (default), "
                             "or from the veth's counter of frames handed to h2 (counter: "
                             "h2's IP stack drops them at UDP; drop: they are addressed to "
                             "another MAC, so h2's IP input drops them at once)")
    parser.add_argument("--ring-kb", type=int, default=None,
                        help="the native packet loop's receive ring per port in KiB (sets "
                             "$P4IO_RING_KB for the switch; its default: 8192)")
    parser.add_argument("--threads", type=int, default=None,
                        help="the switch's --threads (default: its own choice)")
    parser.add_argument("--napi", choices=NAPI_MODES, default="off",
                        help="veth NAPI: off (default; GRO off, a receiver's input runs in "
                             "its sender's transmit), gro (GRO on: NAPI polls) or threaded "
                             "(GRO on, NAPI polled in a kernel thread)")
    parser.add_argument("--napi-ends", choices=("hosts", "all"), default="hosts",
                        help="--napi on the hosts' veth ends (default) or on every end")
    parser.add_argument("--switch-qdisc", metavar="SPEC", default=None,
                        help="a root qdisc on the switch's veth ends (tc syntax, e.g. "
                             "'pfifo limit 1000'; default: the veth's noqueue)")
    parser.add_argument("--perf", metavar="FILE", default=None,
                        help="perf record -g the switch while frames flow, into FILE.BACKEND")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="append each run's figures to FILE as a JSON line")
    args = parser.parse_args()
    if args.ring_kb is not None:
        os.environ["P4IO_RING_KB"] = str(args.ring_kb)
    lib = traffic_library()
    rates = {}
    for backend in args.backend.split(","):
        rates[backend] = run_one(args, backend, lib)
    if len(rates) == 2 and all(rates.values()):
        (a, ra), (b, rb) = rates.items()
        print(f"{a}/{b}: {ra / rb:.1f}x")
    return 0


def run_one(args, backend: str, lib) -> float:
    with tempfile.TemporaryDirectory() as directory:
        p4info, device_config = compile_program(directory, args.program)
        network = Network(2, napi=args.napi, napi_ends=args.napi_ends)
        try:
            for host in network.hosts:      # the helpers' own sockets would queue copies
                host.sock.close()
                host.sock = None
                if args.switch_qdisc:       # e.g. "pfifo limit 1000": veth backpressure
                    subprocess.run(["tc", "qdisc", "replace", "dev", host.switch_interface,
                                    "root", *args.switch_qdisc.split()], check=True)
            log = os.path.join(directory, "switch.log") if args.log else None
            extra = [option for spec in args.impair for option in ("--impair", spec)]
            extra += ["--backend", backend]
            if args.threads is not None:
                extra += ["--threads", str(args.threads)]
            switch = SwitchProcess(network, log, extra=extra)
            try:
                client = install_route(switch, p4info, device_config, network.hosts[1],
                                       OTHER_HOST_MAC if args.receiver == "drop" else None)
                stats = run_time_stats() if backend == "xdp" else contextlib.nullcontext()
                stats.__enter__()
                xdp_before = xdp_program_stats() if backend == "xdp" else None
                cpu_before = snapshot({"switch": switch.process.pid, "bench": "self"})
                perf = None if args.perf is None else subprocess.Popen(
                    ["perf", "record", "-F", "4999", "-g", "-p", str(switch.process.pid),
                     "-o", f"{args.perf}.{backend}"], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL)
                result = measure(lib, network.hosts[0], network.hosts[1], args.count,
                                 args.size, args.rate,
                                 "counter" if args.receiver == "drop" else args.receiver)
                cpu_after = snapshot({"switch": switch.process.pid, "bench": "self"})
                result["cpu"] = {k: cpu_after[k] - cpu_before[k] for k in cpu_before}
                if xdp_before is not None:       # the pipeline's own time in the kernel
                    runs, ns = (a - b for a, b in zip(xdp_program_stats(), xdp_before))
                    result["xdp_runs"], result["xdp_ns"] = runs, ns
                stats.__exit__(None, None, None)
                if perf is not None:
                    perf.send_signal(2)      # SIGINT: perf writes its file and exits
                    perf.wait(30)
                client.close()
            finally:
                switch.stop()
        finally:
            network.close()
    lost = result["sent"] - result["received"]
    per_frame = {k: round(v / max(result["received"], 1) * 1e6, 2)
                 for k, v in result["cpu"].items()}
    cpu_us = per_frame["switch"]
    parts = []
    if args.perf:
        from perf_breakdown import breakdown
        parts = [{"part": name, "percent": percent,
                  "us_per_frame": round(percent / 100 * cpu_us, 2)}
                 for name, percent in breakdown(f"{args.perf}.{backend}")]
        for part in parts:
            print(f"[{backend}] {part['us_per_frame']:5.2f} us ({part['percent']:4.1f}%) "
                  f"{part['part']}")
    xdp_us = None
    if "xdp_runs" in result:
        xdp_us = round(result["xdp_ns"] / max(result["xdp_runs"], 1) / 1000, 3)
        print(f"[{backend}] XDP program: {result['xdp_runs']} runs, {xdp_us:.3f} us each "
              "(its own run time, bpf_stats; the redirect and the veths' NAPI polls are in "
              "the machine's figure)", flush=True)
    if args.json:
        record = {"backend": backend, "program": os.path.basename(args.program),
                  "xdp_program_us_per_run": xdp_us, "threads": args.threads, "receiver": args.receiver,
                  "count": args.count, "rate_asked": args.rate, "frame_bytes":
                  result["frame_bytes"], "offered_pps": round(result["offered"]),
                  "sent": result["sent"], "received": result["received"], "lost": lost,
                  "forwarded_pps": round(result["forwarded"]),
                  "switch_cpu_us_per_frame": round(cpu_us, 2),
                  "napi": args.napi, "napi_ends": args.napi_ends,
                  "switch_qdisc": args.switch_qdisc,
                  "napi_threads_cpu_us_per_frame": per_frame["napi/"],
                  "ksoftirqd_cpu_us_per_frame": per_frame["ksoftirqd/"],
                  "sender_receiver_cpu_us_per_frame": per_frame["bench"],
                  "machine_cpu_us_per_frame": per_frame["machine"],
                  "load_average": list(os.getloadavg())}
        if parts:
            record["breakdown"] = parts
        with open(args.json, "a") as f:
            f.write(json.dumps(record) + "\n")
    print(f"[{backend}] sent {result['sent']} frames of {result['frame_bytes']} bytes at "
          f"{result['offered']:.0f} pps ({f'{args.rate:.0f} asked' if args.rate else 'max'}); "
          f"received {result['received']} ({lost} lost; {result['disorder']} out of order) "
          f"receiver={args.receiver} ring_kb={os.environ.get('P4IO_RING_KB', 'default')}: "
          f"{result['forwarded']:.0f} packets/s forwarded; switch "
          f"CPU {cpu_us:.2f} us per "
          f"forwarded frame; load average {os.getloadavg()[0]:.2f}", flush=True)
    print(f"[{backend}] CPU us per forwarded frame: switch {cpu_us:.2f}, napi threads "
          f"{per_frame['napi/']:.2f}, ksoftirqd {per_frame['ksoftirqd/']:.2f}, sender+receiver "
          f"{per_frame['bench']:.2f}, whole machine {per_frame['machine']:.2f} "
          f"(napi={args.napi} on {args.napi_ends})", flush=True)
    return result["forwarded"]


if __name__ == "__main__":
    sys.exit(main())
