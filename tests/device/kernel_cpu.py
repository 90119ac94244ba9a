"""Benchmark support: CPU time that leaves the processes one measures. With veth NAPI
(device_env.set_napi, $INA_VETH_NAPI) a receiver's input runs in a kernel thread
(napi/IFACE-N) or in ksoftirqd instead of inside its sender's syscall, so a figure taken from
the switch's or the workers' /proc/PID/stat alone would hide CPU that only moved.

    python tests/device/kernel_cpu.py --json FILE -- COMMAND ...

runs COMMAND while sampling the kernel threads' CPU every 20 ms (napi threads come and go
with their interfaces: each one's last reading counts) and appends one JSON line to FILE: the
command, its exit code, wall seconds, the CPU seconds of the napi threads and of ksoftirqd,
and the busy seconds of the whole machine from /proc/stat (which include whatever else runs
there). bench_veth.py takes its snapshots with `snapshot`.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

KERNEL_THREADS = ("napi/", "ksoftirqd/")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid) -> float:
    """User + system CPU time of process `pid` (all its threads; "self": this one) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK   # utime, stime


def kernel_threads() -> dict:
    """{(prefix, pid): CPU seconds} of every kernel thread named with a KERNEL_THREADS prefix."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                name = f.read()
            for prefix in KERNEL_THREADS:
                if name.startswith(prefix):
                    found[prefix, pid] = cpu_seconds(pid)
        except OSError:           # gone meanwhile
            pass
    return found


def machine_busy_seconds() -> float:
    """Busy time of every CPU so far: user nice system irq softirq steal (guest is in user)."""
    with open("/proc/stat") as f:
        jiffies = [int(x) for x in f.readline().split()[1:]]
    return (sum(jiffies[:8]) - jiffies[3] - jiffies[4]) / TICK


def snapshot(pids: dict) -> dict:
    """CPU seconds so far of the processes {name: pid}, of the kernel threads by prefix and of
    the machine ("machine")."""
    taken = {name: cpu_seconds(pid) for name, pid in pids.items()}
    taken.update(dict.fromkeys(KERNEL_THREADS, 0.0))
    for (prefix, _), seconds in kernel_threads().items():
        taken[prefix] += seconds
    taken["machine"] = machine_busy_seconds()
    return taken


class KernelThreadSampler:
    """CPU the kernel threads spent while it ran, counting threads that ended meanwhile by
    their last reading (a napi thread ends with its interface)."""

    def __init__(self, period: float = 0.02):
        self.period, self.stop_event = period, threading.Event()
        self.start_values = kernel_threads()
        self.last = dict(self.start_values)
        self.machine_start = machine_busy_seconds()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop_event.wait(self.period):
            self.last.update(kernel_threads())

    def stop(self) -> dict:
        self.stop_event.set()
        self.thread.join()
        self.last.update(kernel_threads())
        spent = dict.fromkeys(KERNEL_THREADS, 0.0)
        for key, seconds in self.last.items():
            spent[key[0]] += seconds - self.start_values.get(key, 0.0)
        return {"napi_threads_cpu_s": round(spent["napi/"], 3),
                "ksoftirqd_cpu_s": round(spent["ksoftirqd/"], 3),
                "machine_busy_cpu_s": round(machine_busy_seconds() - self.machine_start, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True, metavar="FILE",
                        help="append one JSON line with the figures to FILE")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    started = time.monotonic()
    sampler = KernelThreadSampler()
    returncode = subprocess.run(command).returncode
    record = {"command": command, "returncode": returncode,
              "wall_s": round(time.monotonic() - started, 3),
              "environment": {k: v for k, v in os.environ.items()
                              if k.startswith(("P4IO_", "INA_VETH_"))},
              **sampler.stop()}
    with open(args.json, "a") as f:
        f.write(json.dumps(record) + "\n")
    print(f"kernel_cpu: napi threads {record['napi_threads_cpu_s']:.2f} CPU-s, ksoftirqd "
          f"{record['ksoftirqd_cpu_s']:.2f}, whole machine {record['machine_busy_cpu_s']:.2f} "
          f"in {record['wall_s']:.1f} s", file=sys.stderr)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
