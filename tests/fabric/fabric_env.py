"""Multi-switch fabrics for the emulation tests and the scaling probe, under names of their own.

The generated topologies name their nodes s1.., h1.. and put the gRPC servers on 9559..,
so two networks of them cannot run at once.  `isolated_spec` renames every node with a
tag of its own and moves the gRPC ports to a free range; the reduction trees, addresses
and port numbers stay those of the named topology.  `running_fabric` starts it (compiled
p4src, Mininet, controller) and always tears it down; `run_jobs` runs one or more
allreduce jobs at the same time from given int32 inputs and returns every worker's result
vector, so that tests compare them with sums they computed themselves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import string
import subprocess
import time

import numpy as np

from fabric import Fabric
from topologies.net import interface_names
from topologies.spec import TopologySpec, parse_topology, validate
from topologies.switches import REPO, port_accepts, python_executable

ISOLATED_GRPC_BASE = 30000        # far from 9559.. and from the workers' 20000 + job
GRPC_PORT_BLOCK = 64              # ports per block (more for larger topologies)
WORKER_TIMEOUT_S = 600.0


_specs_made = itertools.count()


def new_tag() -> str:
    """f<pid mod 1000><a, b, ...>: unique per process and call (names stay <= 10 chars)."""
    return f"f{os.getpid() % 1000}{string.ascii_lowercase[next(_specs_made) % 26]}"


def isolated_spec(topology: str) -> TopologySpec:
    """`parse_topology(topology)` with nodes renamed <tag><name> (a new tag per call) and
    gRPC ports in a block free at the time of the call."""
    tag = new_tag()
    spec = parse_topology(topology)
    grpc_base = _free_grpc_block(os.getpid() + sum(map(ord, tag)), len(spec.switches))
    rename = {n.name: tag + n.name for n in list(spec.hosts) + list(spec.switches)}
    hosts = [dataclasses.replace(h, name=rename[h.name]) for h in spec.hosts]
    switches = [dataclasses.replace(s, name=rename[s.name], grpc_port=grpc_base + i)
                for i, s in enumerate(spec.switches)]
    links = [dataclasses.replace(l, node1=rename[l.node1], node2=rename[l.node2])
             for l in spec.links]
    isolated = TopologySpec(spec.kind, hosts, switches, links)
    validate(isolated)
    return isolated


def _free_grpc_block(seed: int, count: int) -> int:
    stride = GRPC_PORT_BLOCK * -(-count // GRPC_PORT_BLOCK)
    blocks = (65000 - ISOLATED_GRPC_BASE) // stride
    for attempt in range(blocks):
        base = ISOLATED_GRPC_BASE + ((seed + attempt) % blocks) * stride
        if not any(port_accepts(base + i) for i in range(count)):
            return base
    raise RuntimeError("no free block of gRPC ports on 127.0.0.1")


@contextlib.contextmanager
def running_fabric(spec: TopologySpec, work_dir: str, k: int = 64, say=None,
                   **network_options):
    """A started Fabric (builtin switches) whose files stay under work_dir; network_options
    (switches_per_process, host_addressing) go to topologies.net.Network; say: where the
    fabric's progress lines go (default: nowhere)."""
    log_dir = os.path.join(work_dir, "switch-logs")
    fabric = Fabric(spec, "builtin", k=k, build_dir=os.path.join(work_dir, "build"),
                    log_dir=log_dir, say=say or (lambda message: None), **network_options)
    pids = []
    with fabric:
        pids = sorted(set(switch_processes(fabric).values()))
        yield fabric
    left = [n for n in interface_names(spec) if os.path.exists(f"/sys/class/net/{n}")]
    alive = [pid for pid in pids if _running(pid)]
    assert not left and not alive, f"left behind: interfaces {left}, switch processes {alive}"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def int32_inputs(hosts: list, elements: int, seed: int, low: int = -1000,
                 high: int = 1000) -> dict:
    """A distinct random int32 vector per host (values in [low, high))."""
    rng = np.random.default_rng(seed)
    return {h: rng.integers(low, high, size=elements, dtype=np.int64).astype(np.int32)
            for h in hosts}


def exact_sum(vectors) -> np.ndarray:
    return np.sum([v.astype(np.int64) for v in vectors], axis=0)


def node_names(fabric, *plain) -> list:
    """Names in the isolated fabric of the generated topology's nodes (h1 -> f123ah1)."""
    tag = fabric.spec.switches[0].name[:-len("s1")]
    return [tag + n for n in plain]


def assert_exact(runs: list, inputs: dict) -> None:
    """Every worker exited 0 with the exact int32 sum of the job's inputs."""
    expected = exact_sum(inputs.values())
    for run in runs:
        assert run.exit_code == 0, f"{run.host}: {run.output[-500:]}"
        assert run.result.dtype == np.int32
        np.testing.assert_array_equal(run.result.astype(np.int64), expected, err_msg=run.host)


@dataclasses.dataclass
class WorkerRun:
    host: str
    exit_code: int | None
    started: float           # time.monotonic() at launch
    finished: float          # time.monotonic() when seen exited
    result: np.ndarray | None
    output: str              # the worker's stdout/stderr


def run_jobs(fabric, jobs: dict, work_dir: str, window: int = 16, k: int = 64) -> tuple:
    """Run every job at once: jobs = {job_id: {host: int32 input vector}} (rank = order).
    Installs each job through the aggregation manager, starts all workers, waits for all,
    stops the jobs.  Returns ({job_id: JobPlan}, {job_id: [WorkerRun, ...] in rank order})."""
    os.makedirs(work_dir, exist_ok=True)
    manager = fabric.manager
    launched = {}
    try:
        plans = {}
        for job_id, inputs in jobs.items():
            plans[job_id] = manager.start_job(job_id, list(inputs), window)
        for job_id, inputs in jobs.items():
            launched[job_id] = [
                _launch_worker(fabric, plans[job_id], job_id, rank, host, vector, len(inputs),
                               window, k, work_dir)
                for rank, (host, vector) in enumerate(inputs.items())]
        finished = _wait_all([p for entries in launched.values() for _, p, _, _ in entries])
        return plans, {job_id: [_worker_run(host, process, started, stem,
                                            finished[process.pid])
                                for host, process, started, stem in entries]
                       for job_id, entries in launched.items()}
    finally:
        for job_id in list(manager.jobs()):
            manager.stop_job(job_id)


def _launch_worker(fabric, plan, job_id, rank, host, vector, world, window, k, work_dir):
    stem = os.path.join(work_dir, f"job{job_id}-rank{rank}")
    np.save(stem + ".in.npy", vector)
    member = plan.hosts[host]
    command = [python_executable(), "-m", "hosts", "worker", "--job", str(job_id),
               "--rank", str(rank), "--world", str(world), "--elements", str(len(vector)),
               "--dtype", "int32", "--window", str(window), "--k", str(k),
               "--input", stem + ".in.npy", "--output", stem + ".out.npy",
               "--switch-ip", member.switch_ip, "--contributor", str(member.contributor)]
    with open(stem + ".log", "wb") as log:
        started = time.monotonic()
        process = fabric.network.popen(host, command, cwd=REPO, stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT)
    return host, process, started, stem


def _wait_all(processes: list) -> dict:
    """Poll every worker together, so each one's exit time is known to within a poll;
    kill those still running at the deadline.  Returns {pid: monotonic exit time}."""
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    finished = {}
    while len(finished) < len(processes) and time.monotonic() < deadline:
        for process in processes:
            if process.pid not in finished and process.poll() is not None:
                finished[process.pid] = time.monotonic()
        time.sleep(0.05)
    for process in processes:
        if process.pid not in finished:
            process.kill()
            process.wait()
            finished[process.pid] = time.monotonic()
    return finished


def _worker_run(host, process, started, stem, finished) -> WorkerRun:
    code = process.returncode if process.returncode is not None and process.returncode >= 0 \
        else None
    result = np.load(stem + ".out.npy") if code == 0 else None
    with open(stem + ".log", errors="replace") as f:
        output = f.read()
    return WorkerRun(host, code, started, finished, result, output)


def switch_processes(fabric) -> dict:
    """{switch name: pid} of the running switch processes (switches that share a process,
    topologies.switches.SwitchGroup, have the same pid)."""
    return {s.name: fabric.network.switch(s.name).process.pid for s in fabric.spec.switches}


def resident_mb(pid: int) -> float:
    """VmRSS of one process, MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"process {pid} has no VmRSS")
