"""Allreduce modes the compare runner knows: how to prepare a job and each worker's command.

A mode turns one `JobSetup` (job id, member hosts, vector parameters) into worker commands.
`ina` asks the aggregation manager for a reduction tree first and runs `python -m hosts worker`
on every member; the host-only algorithms (ps, binomial-tree, butterfly, ring, rabenseifner,
double-binary-tree) need nothing from the switches beyond forwarding and run
`python -m hosts allreduce --algorithm NAME`; `gloo` runs torch.distributed's Gloo allreduce
(`python -m hosts gloo`) when torch is installed.  A mode whose `unavailable()` gives a reason
is skipped.  Adding a mode means adding a class (or an instance) to MODES.

A job runs one collective (JobSetup.collective, `--collective` of compare and sweep): a mode
states which it can run (`collectives`; `check_collective` gives the one-line reason when it
cannot).  The registry (contracts/jobs.py) says which: the host algorithms run those
hosts/schedules.py has a schedule for (SUPPORTED), ina runs every one of COLLECTIVES in the
switches (hosts/ina/ina_collectives.py: owner-only results, header-only contributions).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from dataclasses import dataclass
from typing import Optional

from contracts import collectives, designs
from contracts import jobs as contract
from contracts.jobs import (ALLREDUCE, CONNECT_TIMEOUT_S, GLOO, HOST_ALGORITHMS, INA,
                            AtpWorker, GlooWorker, HostAlgorithmWorker, InaWorker,
                            SwitchMLWorker, ina_timeout_ms, job_file_stem, mode_collectives)
from contracts.requests import k_refusal
from contracts.wire import DEFAULT_SLOTS
from controller.atp import racks_of
from controller.designs import INSTALLERS
from controller.planner import PlanError, ShapeRefusal
from hosts.barrier import GO_WAIT_S
from jobs import cpu
from topologies.net import host_interface
from topologies.program import bmv2_growth_refusal
from topologies.switches import bmv2_packet_ms, builtin_packet_ms, python_executable

RING_FIRST_PORT = 21000      # host-only listeners: RING_FIRST_PORT + job (workers: 20000 + job)
GLOO_FIRST_PORT = 23000      # Gloo rendezvous on rank 0: GLOO_FIRST_PORT + job + run offset
GLOO_PORT_RUNS = 50          # a fresh port per run, so no TIME_WAIT socket is in the way


@dataclass(frozen=True)
class JobSetup:
    job: int
    hosts: tuple              # member host names, rank order
    host_ips: tuple           # their addresses, same order
    elements: int
    dtype: str
    seed: int
    window: int
    k: int
    out_dir: str              # absolute; reports and logs go below it
    run: int = 0              # index of the run in the experiment (file names, ports)
    timeout_ms: Optional[float] = None   # ina workers' first retransmission timeout
    collective: str = ALLREDUCE          # one of contracts.jobs.COLLECTIVES


def switch_refusal(switch_kind: str, k: int, mode_name: str, collective: str) -> Optional[str]:
    """Why `switch_kind` cannot run `mode_name`'s `collective` at K = k (one line), or None:
    K must be one p4src is built for; bmv2 cannot grow a packet by more than 512 bytes."""
    refusal = k_refusal(k)
    if refusal is None and switch_kind == "bmv2" and designs.is_design(mode_name) \
            and collectives.get(collective).fills_header_only:
        refusal = bmv2_growth_refusal(k, f"in-network {collective}")
    return refusal


def check_collective(mode, collective: str, switches: int = 1,
                     restarts: bool = False, dtype: str = "int32") -> Optional[str]:
    """Why `mode` cannot run `collective` (one line), or None (contracts.jobs); a design
    also where its job trees may span `switches` switches, switches restart mid-job if
    `restarts`, or for elements of `dtype` (contracts.designs)."""
    refusal = contract.check_collective(mode.name, collective)
    if refusal is None and mode.design is not None:
        refusal = mode.design.refusal(collective, switches, restarts, dtype)
    return refusal


def shape_refusal(mode, spec, groups: list) -> Optional[str]:
    """Why `mode`'s design cannot run the jobs of `groups` (lists of host names) on `spec`
    at all, from plans made on the topology alone (controller.planner.ShapeRefusal: a tree
    its switches cannot aggregate over; nothing is installed), or None."""
    if mode.design is None:
        return None
    for hosts in groups:
        try:
            INSTALLERS[mode.name](spec, DEFAULT_SLOTS).plan(1, list(hosts), 1)
        except ShapeRefusal as refusal:
            return str(refusal).replace("job 1's", "a job's")
        except PlanError:
            pass                      # a matter of capacity: the run itself says (fallback)
    return None


def switch_window_ms(switch_kind: str, spec, workers: int, window: int, k: int) -> float:
    """The time the switches of `spec` need for one window of a job of `workers` ranks: every
    packet a switch takes in per round (each worker's, and per switch beyond the first a
    partial up and a result down) times the window, at bmv2's cost per packet
    (topologies.switches.bmv2_packet_ms), or for the built-in switch at the machine's
    (builtin_packet_ms: it keeps up with the links, and this matters only for jobs of
    hundreds of workers): the switches share the machine's cores with each other and the
    workers."""
    packets = workers + 2 * (len(spec.switches) - 1)
    if switch_kind != "bmv2":
        return window * packets * builtin_packet_ms(cpu.cores())
    return window * packets * bmv2_packet_ms(k)


def job_timeout_ms(spec, switch_kind: str, k: int, workers: int, window: int,
                   bw_mbit=None, round_trip_ms: float = 0.0) -> float:
    """The ina workers' first retransmission timeout for `workers` ranks running at once on
    `spec`'s switches (contracts.jobs.ina_timeout_ms with their time for one window)."""
    return ina_timeout_ms(bw_mbit, window, k, round_trip_ms,
                          switch_window_ms(switch_kind, spec, workers, window, k))


def fabric_job_setup(fabric, job: int, hosts: list, elements: int, dtype: str, window: int,
                     out_dir: str, collective: str = ALLREDUCE) -> JobSetup:
    """A job of `hosts` on a running fabric as the lab runs one: seed = job, unshaped links'
    retransmission timeout (longer where the switches need longer for a window)."""
    return JobSetup(job=job, hosts=tuple(hosts),
                    host_ips=tuple(fabric.spec.host(h).ip for h in hosts), elements=elements,
                    dtype=dtype, seed=job, window=window, k=fabric.k, out_dir=out_dir,
                    collective=collective,
                    timeout_ms=job_timeout_ms(fabric.spec, fabric.switch_kind, fabric.k,
                                              len(hosts), window))


def report_path(setup: JobSetup, mode: str, rank: int) -> str:
    return os.path.join(setup.out_dir, "reports",
                        job_file_stem(mode, setup.run, setup.job, rank) + ".json")


def barrier_dir(setup: JobSetup, mode: str) -> str:
    """The folder of a job's start barrier (hosts/barrier.py)."""
    return os.path.join(setup.out_dir, "barriers", job_file_stem(mode, setup.run, setup.job))


def log_path(setup: JobSetup, mode: str, rank: int) -> str:
    return os.path.join(setup.out_dir, "logs",
                        job_file_stem(mode, setup.run, setup.job, rank) + ".log")


class WorkerCommands:
    """A mode's worker command lines: those of its worker specs (`specs`), run with the
    workers' Python.  `design`: the in-network design it runs (contracts/designs/), None
    for a host-only mode."""
    design = None

    def commands(self, setup: JobSetup, plan) -> list:
        return [spec.command(python_executable()) for spec in self.specs(setup, plan)]


class DesignMode(WorkerCommands):
    """In-network aggregation through the switches in one design (contracts/designs/): its
    installer puts the job on the switches (controller/designs.py), its worker spec
    (contracts.jobs: the design's command) runs each rank, told its place in the plan."""
    start_barrier = True         # the workers take --start-barrier (jobs/runner.py)

    def __init__(self, design, worker_spec):
        self.design, self.name, self.worker_spec = design, design.name, worker_spec
        self.collectives = design.collectives

    def unavailable(self) -> Optional[str]:
        return None

    def ready_within_s(self, world: int) -> float:
        """How long the launcher waits for every worker to reach the start barrier."""
        return GO_WAIT_S

    def prepare(self, manager, setup: JobSetup):
        """Install the job on the switches; returns the plan passed to commands()."""
        return manager.start_job(setup.job, list(setup.hosts), setup.window,
                                 design=self.name)

    def finish(self, manager, setup: JobSetup) -> None:
        manager.stop_job(setup.job)

    def specs(self, setup: JobSetup, plan) -> list:
        return [self.worker_spec(job=setup.job, rank=rank, world=len(setup.hosts),
                                 elements=setup.elements, dtype=setup.dtype, seed=setup.seed,
                                 window=plan.window, k=setup.k,     # the slots installed
                                 switch_ip=plan.hosts[host].switch_ip,
                                 contributor=plan.hosts[host].contributor,
                                 json=report_path(setup, self.name, rank),
                                 start_barrier=barrier_dir(setup, self.name),
                                 timeout_ms=(self.worker_spec.timeout_ms
                                             if setup.timeout_ms is None
                                             else setup.timeout_ms),
                                 collective=setup.collective)
                for rank, host in enumerate(setup.hosts)]


class InaMode(DesignMode):
    """Ours (contracts.designs.INA): `python -m hosts worker` in every host."""

    def __init__(self):
        super().__init__(designs.INA, InaWorker)


class AtpMode(DesignMode):
    """ATP (contracts.designs.ATP): `python -m hosts atp` in every host, rank 0's serving
    the job's parameter server too (on its host, as BytePS does)."""

    def __init__(self):
        super().__init__(designs.ATP, AtpWorker)

    def specs(self, setup: JobSetup, plan) -> list:
        sizes, places = racks_of(plan)
        return [AtpWorker(job=setup.job, rank=rank, world=len(setup.hosts),
                          elements=setup.elements, dtype=setup.dtype, seed=setup.seed,
                          index=places[host][1],
                          rack=places[host][0], racks=",".join(map(str, sizes)),
                          aggregators=plan.aggregators, window=plan.window, k=setup.k,
                          timeout_ms=(AtpWorker.timeout_ms if setup.timeout_ms is None
                                      else setup.timeout_ms),
                          serve=rank == 0, json=report_path(setup, self.name, rank),
                          start_barrier=barrier_dir(setup, self.name))
                for rank, host in enumerate(setup.hosts)]


class SwitchMLMode(DesignMode):
    """SwitchML (contracts.designs.SWITCHML): `python -m hosts switchml` in every host."""

    def __init__(self):
        super().__init__(designs.SWITCHML, SwitchMLWorker)


def peer_connect_timeout_s(world: int) -> float:
    """How long a host-algorithm rank waits for its peers' connections.  Ranks connect before
    the start barrier, so the first one launched waits for the last: launching 1,024 ring
    ranks into worker groups on a running fattree:16 took 6.5 minutes here (load average
    over 200), and rank 0 gave up on rank 1023 after 30 + 0.2 s per rank.  A second per
    rank only delays the report of a peer that never comes."""
    return CONNECT_TIMEOUT_S + 1.0 * world


def by_hand(setup: JobSetup, plan) -> list:
    """The ina workers' command lines to type by hand: each writes its report on stdout and
    starts without a start barrier (nobody would say go)."""
    return [dataclasses.replace(spec, json="-", start_barrier=None).command(python_executable())
            for spec in MODES[INA].specs(setup, plan)]


class HostAlgorithmMode(WorkerCommands):
    """A host-only allreduce over TCP (hosts/schedules.py): the baselines."""
    start_barrier = True

    def __init__(self, name: str):
        self.name = name
        self.collectives = mode_collectives(name)

    def unavailable(self) -> Optional[str]:
        return None

    def ready_within_s(self, world: int) -> float:
        """Ranks connect to each other before they are ready, each for up to its peer
        timeout."""
        return GO_WAIT_S + peer_connect_timeout_s(world)

    def prepare(self, manager, setup: JobSetup):
        return None

    def finish(self, manager, setup: JobSetup) -> None:
        pass

    def specs(self, setup: JobSetup, plan) -> list:
        port = RING_FIRST_PORT + setup.job
        peers = ",".join(f"{ip}:{port}" for ip in setup.host_ips)
        return [HostAlgorithmWorker(
                    algorithm=self.name, collective=setup.collective, rank=rank,
                    world=len(setup.hosts), peers=peers, elements=setup.elements,
                    dtype=setup.dtype, seed=setup.seed, json=report_path(setup, self.name, rank),
                    start_barrier=barrier_dir(setup, self.name),
                    timeout_s=peer_connect_timeout_s(len(setup.hosts)))
                for rank in range(len(setup.hosts))]


TORCH_CHECK = ("import torch.distributed as d; "
               "assert d.is_available() and d.is_gloo_available()")


class GlooMode(WorkerCommands):
    """torch.distributed.all_reduce with the Gloo backend (a real host-only peer)."""
    name = GLOO
    start_barrier = False        # dist.barrier() lines the ranks up instead (hosts/gloo.py)
    collectives = mode_collectives(GLOO)

    def unavailable(self) -> Optional[str]:
        """Why the workers' Python cannot run Gloo, or None."""
        check = subprocess.run([python_executable(), "-c", TORCH_CHECK], capture_output=True,
                               text=True)
        if check.returncode == 0:
            return None
        if "ModuleNotFoundError" in check.stderr:
            return f"torch is not installed for {python_executable()} (pip install torch)"
        return "torch is installed without torch.distributed Gloo support"

    def prepare(self, manager, setup: JobSetup):
        return None

    def finish(self, manager, setup: JobSetup) -> None:
        pass

    def specs(self, setup: JobSetup, plan) -> list:
        port = GLOO_FIRST_PORT + setup.job + 100 * (setup.run % GLOO_PORT_RUNS)
        return [GlooWorker(rank=rank, world=len(setup.hosts),
                           master=f"{setup.host_ips[0]}:{port}", ifname=host_interface(host),
                           elements=setup.elements, dtype=setup.dtype, seed=setup.seed,
                           json=report_path(setup, self.name, rank))
                for rank, host in enumerate(setup.hosts)]


# Each design's mode (contracts/designs/), by name: a new design adds its DesignMode here.
DESIGN_MODES = {designs.INA.name: InaMode, designs.SWITCHML.name: SwitchMLMode,
                designs.ATP.name: AtpMode}
MODES = {mode.name: mode for mode in (*(DESIGN_MODES[name]() for name in designs.NAMES),
                                      *map(HostAlgorithmMode, HOST_ALGORITHMS), GlooMode())}

