"""How large a fabric this machine runs: start-up time, resident memory per switch process
(idle and while a job runs), and whether a small int32 allreduce over it is exact.

    sudo .venv/bin/python tests/fabric/scale_probe.py --topo fattree:4 [--workers N]
        [--elements E] [--window W] [--json FILE]
    sudo .venv/bin/python tests/fabric/scale_probe.py --watch --topo fattree:4 [--json FILE]

A benchmark, not a test.  The network runs under renamed nodes and its own gRPC ports
(fabric_env), so it can share the machine with another network.  Switches that share a
process (topologies.switches.SwitchGroup, the default from 64 switches on) count once per
process: RSS figures are per process, the sum over processes.  "machine MB" is the peak of
MemTotal - MemAvailable over start-up and job, less its value before the start (everything:
switches, host shells, workers, kernel buffers; and whatever else the machine ran meanwhile).
Progress lines (seconds since the start) go to stderr.  Workers: N hosts spread
evenly over the topology's host list (default: all), rank order = host order.  Prints one
Markdown row (the columns of docs/scaling.md) and, with --json, the figures.  --watch
only samples the switch processes of a network some other command runs in the same network
namespace (under the topology's own names and gRPC ports), from the moment all of them
run until they exit.  Exit 1 if the
allreduce is not exact or the network does not start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from fabric_env import (exact_sum, int32_inputs, isolated_spec, resident_mb,  # noqa: E402
                        run_jobs, running_fabric, switch_processes)
from jobs import results  # noqa: E402
from topologies.spec import parse_topology  # noqa: E402

SAMPLE_INTERVAL_S = 0.25


def machine_used_mb() -> float:
    """MemTotal - MemAvailable, MB."""
    values = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            values[key] = int(rest.split()[0])
    return (values["MemTotal"] - values["MemAvailable"]) / 1024


class MachineMemory(threading.Thread):
    """Peak of machine_used_mb() from start() until stop()."""

    def __init__(self):
        super().__init__(daemon=True)
        self.baseline = machine_used_mb()
        self.peak = self.baseline
        self._stopping = threading.Event()

    def run(self):
        while not self._stopping.wait(SAMPLE_INTERVAL_S):
            self.peak = max(self.peak, machine_used_mb())

    def stop(self) -> float:
        """Peak over the baseline, MB."""
        self._stopping.set()
        self.join()
        return self.peak - self.baseline


class RssSampler(threading.Thread):
    """Samples the RSS of every switch process until stopped; keeps each one's peak."""

    def __init__(self, pids: dict):
        super().__init__(daemon=True)
        self.pids = pids
        self.peak = {name: 0.0 for name in pids}
        self.samples = 0
        self._stopping = threading.Event()

    def run(self):
        while not self._stopping.is_set():
            for name, pid in self.pids.items():
                try:
                    self.peak[name] = max(self.peak[name], resident_mb(pid))
                except (OSError, RuntimeError):
                    pass            # exited: the job's outcome will say so
            self.samples += 1
            self._stopping.wait(SAMPLE_INTERVAL_S)

    def stop(self) -> dict:
        self._stopping.set()
        self.join()
        return self.peak


def spread(hosts: list, count: int) -> list:
    """count hosts picked evenly over the list (so a job spans every part of the fabric)."""
    if count >= len(hosts):
        return list(hosts)
    step = len(hosts) / count
    return [hosts[int(i * step)] for i in range(count)]


def mb_summary(values) -> str:
    values = sorted(values)
    return f"{values[0]:.0f} / {statistics.median(values):.0f} / {values[-1]:.0f}"


def probe(topology: str, workers, elements: int, window: int, work_dir: str,
          network_options: dict, worker_group_size=None, own_names: bool = False) -> dict:
    spec = parse_topology(topology) if own_names else isolated_spec(topology)
    figures = {"topo": topology, "switches": len(spec.switches), "hosts": len(spec.hosts),
               "command": ["tests/fabric/scale_probe.py"] + sys.argv[1:],
               "started": results.now(), **results.provenance()}
    started = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - started:7.1f} s] {message}", file=sys.stderr, flush=True)

    machine = MachineMemory()
    machine.start()
    with running_fabric(spec, work_dir, say=say, **network_options) as fabric:
        figures["start_s"] = round(time.monotonic() - started, 1)
        say(f"started in {figures['start_s']} s")
        if worker_group_size is not None:
            fabric.spawner.worker_group_size = worker_group_size
        processes = sorted(set(switch_processes(fabric).values()))
        idle = {pid: resident_mb(pid) for pid in processes}
        hosts = spread([h.name for h in spec.hosts], workers or len(spec.hosts))
        inputs = int32_inputs(hosts, elements, seed=7, low=-2 ** 20, high=2 ** 20)
        sampler = RssSampler({pid: pid for pid in processes})
        sampler.start()
        job_started = time.monotonic()
        say(f"job: {len(hosts)} workers x {elements} int32")
        try:
            plans, runs = run_jobs(fabric, {1: inputs}, os.path.join(work_dir, "run"),
                                   window=window)
        finally:
            busy = sampler.stop()
            machine_mb = machine.stop()
        say("job done; stopping the network")
        group_pids = [g.process.pid for g in fabric.spawner.worker_groups]
        worker_mb = workers_memory_mb(fabric.network)
        expected = exact_sum(inputs.values())
        exact = all(r.exit_code == 0 and (r.result.astype("int64") == expected).all()
                    for r in runs[1])
        failures = [f"{r.host}: {r.output.strip().splitlines()[-1:]}"
                    for r in runs[1] if r.exit_code != 0]
        figures.update(
            workers=len(hosts), elements=elements, tree_switches=len(plans[1].switches),
            job_s=round(time.monotonic() - job_started, 1), exact=exact, failures=failures[:3],
            rss_idle_mb=round(max(idle.values()), 1),
            rss_job_mb=round(max(busy.values()), 1),
            rss_job_min_median_max=mb_summary(busy.values()),
            rss_total_mb=round(sum(busy.values())), rss_samples=sampler.samples,
            switch_processes=len(processes), machine_mb=round(machine_mb),
            worker_groups=len(group_pids), **worker_mb)
    figures["stop_s"] = round(time.monotonic() - started - figures["start_s"]
                              - figures["job_s"], 1)
    return figures


def workers_memory_mb(network) -> dict:
    """PSS and private memory of the worker processes (worker groups, zygote children or
    processes of their own) right after the job, summed, MB: what the workers add to the
    machine.  Taken from /proc/PID/smaps_rollup before the network stops (the group
    processes and a zygote outlive their workers until then)."""
    pids = {g.process.pid for g in network.spawner.worker_groups}
    pids |= {p.pid for p in network._processes if not hasattr(p, "_zygote")}
    if network.spawner.zygote is not None:
        pids.add(network.spawner.zygote.process.pid)
    pss = private = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    key, _, rest = line.partition(":")
                    if key == "Pss":
                        pss += int(rest.split()[0])
                    elif key in ("Private_Clean", "Private_Dirty"):
                        private += int(rest.split()[0])
        except OSError:
            continue        # ended: its memory is back
    return {"worker_pss_mb": round(pss / 1024), "worker_private_mb": round(private / 1024),
            "worker_processes": len(pids)}


def switch_pids_by_port(ports: set) -> dict:
    """{gRPC port: pid} of the running `p4switch run|group` processes serving those ports in this
    process's network namespace (other networks may use the same ports in theirs)."""
    found = {}
    own_namespace = os.readlink("/proc/self/ns/net")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
            if os.readlink(f"/proc/{entry}/ns/net") != own_namespace:
                continue
        except OSError:
            continue
        if "p4switch" in argv and ("run" in argv or "group" in argv):
            for i, arg in enumerate(argv[:-1]):      # a group process serves several ports
                if arg == "--grpc-server-addr":
                    port = int(argv[i + 1].rpartition(":")[2])
                    if port in ports:
                        found[port] = int(entry)
    return found


def watch(topology: str, appear_timeout_s: float = 600.0) -> dict:
    """Peak RSS of the switch processes of a network another command runs under the
    topology's own names (e.g. `experiments compare --topo fattree:4`): waits until all of
    them run, samples until they are gone.  {switch name: peak MB}, a process shared by
    several switches under the first one's name."""
    spec = parse_topology(topology)
    names = {s.grpc_port: s.name for s in spec.switches}
    deadline = time.monotonic() + appear_timeout_s
    while len(pids := switch_pids_by_port(set(names))) < len(names):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pids)} of {len(names)} switch processes appeared")
        time.sleep(SAMPLE_INTERVAL_S)
    first_name = {}
    for port, pid in sorted(pids.items()):
        first_name.setdefault(pid, names[port])     # a group process counts once
    sampler = RssSampler({name: pid for pid, name in first_name.items()})
    sampler.start()
    while any(os.path.exists(f"/proc/{pid}") for pid in pids.values()):
        time.sleep(SAMPLE_INTERVAL_S)
    peaks = sampler.stop()
    print(f"{len(peaks)} switch processes, {sampler.samples} samples; peak RSS MB "
          f"min / median / max: {mb_summary(peaks.values())}; sum {sum(peaks.values()):.0f}")
    return peaks


def markdown_row(f: dict) -> str:
    return (f"| {f['topo']} | {f['switches']} | {f['hosts']} | {f['switch_processes']} | "
            f"{f['start_s']} | {f['rss_idle_mb']:.0f} | {f['rss_job_min_median_max']} | "
            f"{f['rss_total_mb']} | {f['machine_mb']} | "
            f"{f['workers']} x {f['elements']} | {f['tree_switches']} | {f['job_s']} | "
            f"{'yes' if f['exact'] else 'NO'} |")


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="scale_probe.py", description=__doc__.split("\n")[0])
    parser.add_argument("--topo", required=True)
    parser.add_argument("--workers", type=int, help="default: every host")
    parser.add_argument("--elements", type=int, default=2000)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--switches-per-process", type=int, default=None,
                        help="builtin switches per process (default: topologies.net's choice)")
    parser.add_argument("--host-addressing", choices=("auto", "gateway", "static"),
                        default="auto")
    parser.add_argument("--fork-workers", choices=("yes", "no"), default="no",
                        help="start the workers from a zygote (topologies/zygote.py)")
    parser.add_argument("--worker-group-size", type=int, default=None,
                        help="workers per worker group process, 0: a process each "
                             "(default: topologies.net's choice)")
    parser.add_argument("--own-names", action="store_true",
                        help="the topology's own node names and gRPC ports (9559 + switch "
                             "index) instead of renamed nodes on ports picked from 30000 on, "
                             "which at 320 switches can meet a port the kernel just gave an "
                             "outgoing connection (the ephemeral range starts at 32768)")
    parser.add_argument("--watch", action="store_true",
                        help="only sample the switches of a network another command runs "
                             "under the topology's own names")
    args = parser.parse_args(argv)
    if args.watch:
        peaks = watch(args.topo)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(peaks, f, indent=2)
        return 0
    with tempfile.TemporaryDirectory(prefix="scale-probe-") as work_dir:
        try:
            figures = probe(args.topo, args.workers, args.elements, args.window, work_dir,
                            {"switches_per_process": args.switches_per_process,
                             "host_addressing": args.host_addressing,
                             "fork_workers": args.fork_workers == "yes"},
                            args.worker_group_size, args.own_names)
        except Exception as e:       # start-up failures: say which, in one line
            print(f"scale_probe: {args.topo}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
    print(markdown_row(figures))
    print(f"workers: {figures['worker_processes']} processes ({figures['worker_groups']} "
          f"worker groups), PSS {figures['worker_pss_mb']} MB, private "
          f"{figures['worker_private_mb']} MB after the job")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    if not figures["exact"]:
        print(f"scale_probe: {args.topo}: allreduce not exact: {figures['failures']}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
