"""One simulated run: one mode at one point on SimGrid, each worker's outcome and the
simulation's details (experiments/simulated.py makes them the emulator's results.Run, so
results.json, `experiments table` and `experiments plot` take both).

`simulate_run(request)` runs in a child process (`run_isolated`: one SimGrid engine per
process): it parses the topology, gives every link the requested rate, delay and loss, builds
the platform, and runs either in-network aggregation (the controller's planner makes the
reduction tree: controller/planner.py; the protocol: simulation/ina.py) or a host-only
algorithm (the schedules of hosts/schedules.py: simulation/host_algorithms.py), by the C++
actors of simulation/simcore.cpp (Request.engine "cpp", the default: cpp_engine.py) or the
Python ones ("python").  Workers are the first p hosts, as in compare.  Every simulated
worker starts at time 0; its report's `seconds` is the simulated time at which it had the
whole result.  A worker fails (its `error`) when it did not finish, and for in-network
aggregation when a round's result was not the exact sum of all ranks' contributions.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import resource
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, Optional

from contracts import designs
from contracts.designs import INA
from contracts.jobs import ina_timeout_ms
from contracts.wire import DEFAULT_K, DEFAULT_WINDOW, TCP_FRAME_BYTES, TCP_PAYLOAD_PER_FRAME
from controller.planner import Planner
from hosts.schedules import ALGORITHMS, Send, schedule
from simulation import cpp_engine
from simulation.programs import CHUNK_ELEMENTS, host_programs
from topologies import spec as topology_spec
from topologies.spec import parse_topology

SIM_MODES = tuple(d.name for d in designs.REGISTRY.values() if d.simulated) + ALGORITHMS
JOB_ID = 1
HEARTBEAT_S = 30.0


class SimulationError(RuntimeError):
    """The simulation could not run or did not finish (one-line message)."""


@dataclass(frozen=True)
class WorkerResult:
    """One simulated worker: its report (None when it did not finish) or what went wrong."""
    host: str
    rank: int
    report: Optional[dict]
    error: Optional[str] = None


def unsupported_impairments(spec) -> list:
    """Link settings the simulation does not model (it refuses them rather than ignore them)."""
    found = set()
    for link in spec.links:
        for field in ("dup_pct", "reorder_pct", "jitter_ms"):
            if getattr(link, field):
                found.add(field.rsplit("_", 1)[0])
    return sorted(found)


@dataclass(frozen=True)
class Request:
    topo: str
    mode: str
    workers: int
    elements: int
    bw_mbit: float
    k: int = DEFAULT_K
    window: int = DEFAULT_WINDOW
    delay_ms: float = 0.0
    loss_pct: float = 0.0
    train: Optional[int] = None       # None: 1, packet level
    seed: int = 1
    repeat: int = 0
    engine: str = "cpp"               # "cpp": simulation/simcore.cpp; "python": the reference
    host_us: float = 0.0              # processing per frame (cpp_engine.Costs; cpp engine only)
    switch_us: float = 0.0

    @property
    def costs(self) -> cpp_engine.Costs:
        return cpp_engine.Costs(self.host_us / 1e6, self.switch_us / 1e6, TCP_FRAME_BYTES)


SIM_MAX_SWITCHES = 100_000


@contextlib.contextmanager
def simulation_switch_limit():
    """topologies/spec.py refuses more than MAX_SWITCHES (1,024) switches: each is a process
    with its own gRPC port in the emulator.  A simulated switch is an actor, so the simulation
    parses with a larger limit (fattree:42, 2,205 switches, for 16,384 workers)."""
    saved = topology_spec.MAX_SWITCHES
    topology_spec.MAX_SWITCHES = max(saved, SIM_MAX_SWITCHES)
    try:
        yield
    finally:
        topology_spec.MAX_SWITCHES = saved


def spec_for(request: Request):
    with simulation_switch_limit():
        spec = parse_topology(request.topo)
    return spec.with_link_defaults(bw=request.bw_mbit, delay_ms=request.delay_ms or None,
                                   loss_pct=request.loss_pct or None)


def choose_train(request: Request) -> int:
    """Packets per simulated message: 1 (packet level) unless --train says otherwise.  A
    train is stored and forwarded whole at every hop, so when the window, not the link,
    bounds the rate (100 Gbit/s links: a window of 32 packets is 2.8 us of data against
    round trips of several us) trains lengthen the run: on fattree:4, 16 workers, 1,000,000
    elements, K=256, 1 us links, trains of 8 packets gave 1.55x and of 32 packets 3.45x the
    packet-level time (docs/scaling.md).  They are there for link-bound settings only."""
    return request.train or 1


def simulate_run(request: Request) -> tuple[list, dict]:
    """(every worker's WorkerResult in rank order, the simulation's details), in this
    process: SimGrid allows one engine per process, so run it through `run_isolated`."""
    started = time.monotonic()
    spec = spec_for(request)
    hosts = [h.name for h in spec.hosts][:request.workers]
    if len(hosts) < request.workers:
        raise SimulationError(f"{request.topo} has {len(spec.hosts)} hosts, fewer than "
                              f"{request.workers} workers")
    model = design_model(request.mode)        # None: a host algorithm
    plan = model.plan(spec, hosts, request.window) if model else None
    if request.engine != "cpp" and (request.host_us or request.switch_us):
        raise SimulationError("processing costs (--host-us, --switch-us) are simulated by "
                              "the C++ actors only (--engine cpp)")
    if request.engine == "cpp":
        built = time.monotonic()
        outcomes, details = (model.cpp(request, spec, plan, hosts) if model else
                             _run_hosts_cpp(request, spec, hosts))
    else:
        network, ina, host_algorithms, actor = load_simgrid()
        platform = network.Platform(spec, [] if model else host_pairs(request, hosts))
        built = time.monotonic()
        if model:
            outcomes, details = model.python(request, platform, plan, hosts, ina, actor)
        else:
            outcomes, details = _run_hosts(request, platform, hosts, host_algorithms, actor)
    details.update(cpp_engine.TIMES if request.engine == "cpp" else {})
    details.update(simulator=f"SimGrid {simgrid_version()}", engine=request.engine,
                   host_us=request.host_us, switch_us=request.switch_us,
                   setup_s=round(built - started, 3),
                   wall_s=round(time.monotonic() - started, 3), peak_rss_mb=peak_rss_mb())
    return outcomes, details


def peak_rss_mb() -> dict:
    """Peak resident set sizes, MB, of the run's processes (getrusage): "python" is this
    process (the forked child: pages it shares with `simulate` counted too), "simcore" the
    largest child it waited for (the C++ engine; 0 with --engine python).  Both are alive
    together while simcore runs, so "total", their sum, bounds the run's memory."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024       # Linux: KB
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"python": round(own, 1), "simcore": round(children, 1),
            "total": round(own + children, 1)}


def ina_timeout_s(request: Request, plan) -> float:
    depth = max(_depth(plan, name) for name in plan.switches) + 1
    round_trip_ms = 2 * depth * (request.delay_ms or 0.0)
    return ina_timeout_ms(request.bw_mbit, request.window, request.k, round_trip_ms) / 1e3


def _ina_outcome(host: str, rank: int, done: bool, s) -> WorkerResult:
    """A worker's outcome from its stats (ina.WorkerStats, or simcore's as a namespace)."""
    error = s.error or (None if done else "did not finish")
    if error is None and s.wrong_results:
        error = f"{s.wrong_results} rounds with a wrong sum"
    report = None if not done else {
        "seconds": s.finished, "correct": error is None, "max_abs_err": 0.0 if error is None
        else None, "bytes_sent": s.bytes_sent, "bytes_received": s.bytes_received,
        "packets_sent": s.packets_sent, "retransmissions": s.retransmissions,
        "wire_bytes_sent": s.wire_bytes_sent, "wire_bytes_received": s.wire_bytes_received}
    return WorkerResult(host, rank, report, error)


def _run_ina_cpp(request: Request, spec, plan, hosts: list) -> tuple[list, dict]:
    train = choose_train(request)
    shape = cpp_engine.Shape(request.elements, request.k, request.window, train)
    timeout_s = ina_timeout_s(request, plan)
    ran = cpp_engine.run_ina(spec, plan, hosts, shape, timeout_s,
                         max(cpp_engine.MAX_TIMEOUT_S, timeout_s), cpp_engine.DEFAULT_MAX_RETRIES,
                         request.seed, request.costs)
    outcomes = [_ina_outcome(host, rank, w["done"], SimpleNamespace(**w))
                for rank, (host, w) in enumerate(zip(hosts, ran["workers"]))]
    return outcomes, {"train": train, "timeout_ms": timeout_s * 1e3, "tree_switches":
                      len(plan.switches), "root": plan.root, "frames_lost": ran["frames_lost"],
                      "closings_unanswered": sum(w["closings_unanswered"] for w in ran["workers"]),
                      "switch_events": ran["events"]}


def _run_hosts_cpp(request: Request, spec, hosts: list) -> tuple[list, dict]:
    if request.loss_pct:
        raise SimulationError(f"--loss is simulated for ina only: TCP's loss recovery is not "
                              f"modelled, so {request.mode} cannot run with loss")
    world = len(hosts)
    if request.mode == "ring" and cpp_engine.ring_fast_path(world, request.elements,
                                                         CHUNK_ELEMENTS):
        programs = (cpp_engine.ring_triples(rank, world, request.elements) for rank in range(world))
    else:
        programs = host_programs(request.mode, world, request.elements)
    ranks = cpp_engine.run_hosts(spec, hosts, programs, TCP_PAYLOAD_PER_FRAME, TCP_FRAME_BYTES,
                             request.costs)
    outcomes = [_host_outcome(host, rank, r["done"], SimpleNamespace(**r))
                for rank, (host, r) in enumerate(zip(hosts, ranks))]
    return outcomes, {"messages": sum(r["messages_sent"] for r in ranks),
                      "chunk_elements": CHUNK_ELEMENTS}


def _host_outcome(host: str, rank: int, finished: bool, s) -> WorkerResult:
    report = None if not finished else {
        "seconds": s.finished, "correct": True, "max_abs_err": None,
        "bytes_sent": s.bytes_sent, "bytes_received": s.bytes_received,
        "packets_sent": s.messages_sent, "retransmissions": 0,
        "wire_bytes_sent": s.wire_bytes_sent, "wire_bytes_received": s.wire_bytes_received}
    return WorkerResult(host, rank, report, None if finished else "did not finish")


def _run_ina(request: Request, platform, plan, hosts: list, ina, actor) -> tuple[list, dict]:
    train = choose_train(request)
    shape = ina.Shape(request.elements, request.k, request.window, train)
    timeout_s = ina_timeout_s(request, plan)
    job = ina.InaJob(platform, plan, hosts, shape, timeout_s, request.seed)
    job.workers = [ina.SimWorker(rank, len(hosts), shape, timeout_s) for rank in range(len(hosts))]
    job.switches = {name: ina.SwitchCells(name, sw) for name, sw in plan.switches.items()}
    for name in plan.switches:
        actor.create(f"switch-{name}", platform.host(name), ina.switch_actor, job, name)
    for rank, host in enumerate(hosts):
        actor.create(f"worker-{host}", platform.host(host), ina.worker_actor, job, rank)
    with Heartbeat(request, lambda: sum(w.accepted for w in job.workers),
                   shape.rounds * len(hosts), "rounds"):
        platform.run()
    outcomes = [_ina_outcome(host, rank, worker.done, worker.stats)
                for rank, (host, worker) in enumerate(zip(hosts, job.workers))]
    events: dict = {}
    for cells in job.switches.values():
        for name, count in cells.events.items():
            events[name] = events.get(name, 0) + count
    return outcomes, {"train": train, "timeout_ms": timeout_s * 1e3, "tree_switches":
                      len(plan.switches), "root": plan.root, "frames_lost": job.frames_lost,
                      "closings_unanswered": sum(w.stats.closings_unanswered
                                                 for w in job.workers),
                      "switch_events": events}


def host_pairs(request: Request, hosts: list) -> set:
    """(sender host, receiver host) of every message of the host-only algorithm's schedules."""
    world = len(hosts)
    pairs = set()
    for rank in range(world):
        for op in schedule(request.mode, rank, world, request.elements, CHUNK_ELEMENTS):
            pairs.add((hosts[rank], hosts[op.peer]) if isinstance(op, Send)
                      else (hosts[op.peer], hosts[rank]))
    return pairs


class Heartbeat:
    """A line on stderr every HEARTBEAT_S seconds of a long simulation: how far it is (read
    from plain counters of the actors' state, never from SimGrid)."""

    def __init__(self, request: Request, done, total: int, unit: str):
        self.request, self.done, self.total, self.unit = request, done, total, unit
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.started = time.monotonic()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()

    def _beat(self) -> None:
        while not self.stop.wait(HEARTBEAT_S):
            print(f"simulate: {self.request.mode}: {self.done():,} of {self.total:,} "
                  f"{self.unit} after {time.monotonic() - self.started:.0f} s",
                  file=sys.stderr, flush=True)


def _depth(plan, name: str) -> int:
    depth = 0
    while plan.switches[name].parent is not None:
        name, depth = plan.switches[name].parent, depth + 1
    return depth


def _run_hosts(request: Request, platform, hosts: list, host_algorithms,
               actor) -> tuple[list, dict]:
    if request.loss_pct:
        raise SimulationError(f"--loss is simulated for ina only: TCP's loss recovery is not "
                              f"modelled, so {request.mode} cannot run with loss")
    job = host_algorithms.HostJob(platform, request.mode, hosts, request.elements)
    for rank, host in enumerate(hosts):
        actor.create(f"rank-{host}", platform.host(host), host_algorithms.rank_actor, job,
                     rank)
    with Heartbeat(request, lambda: sum(s.messages_sent for s in job.ranks),
                   sum(len(ops) for ops in job.programs) // 2, "messages (about)"):
        platform.run()
    outcomes = [_host_outcome(host, rank, s.finished is not None, s)
                for rank, (host, s) in enumerate(zip(hosts, job.ranks))]
    return outcomes, {"messages": sum(s.messages_sent for s in job.ranks),
                      "chunk_elements": job.chunk_elements}


def simgrid_version() -> str:
    """SimGrid's version from its C header (the same library both engines run on)."""
    try:
        with open(cpp_engine.SIMGRID_VERSION_HEADER) as f:
            text = f.read()
    except OSError:
        return "unknown"
    parts = [re.search(rf"#define SIMGRID_VERSION_{part} (\d+)", text)
             for part in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) if m else "?" for m in parts)


@dataclass(frozen=True)
class DesignModel:
    """A design's SimGrid model (contracts/designs/): its job plan on the simulated fabric
    and its actors, in C++ (simcore.cpp, through cpp_engine.py) and in Python."""
    plan: Callable        # (spec, hosts, window) -> the plan its actors follow
    cpp: Callable         # (request, spec, plan, hosts) -> (outcomes, details)
    python: Callable      # (request, platform, plan, hosts, ina module, Actor) -> the same


def _tree_plan(spec, hosts: list, window: int):
    return Planner(spec).plan(JOB_ID, hosts, window)


# Each simulated design's model, by design name: a design without one has `simulated` False
# and is refused in one line (design_model).
MODELS = {INA.name: DesignModel(plan=_tree_plan, cpp=_run_ina_cpp, python=_run_ina)}


def design_model(mode: str) -> Optional[DesignModel]:
    """The model of the design `mode`, None for a host algorithm; SimulationError for a
    design that has no SimGrid model."""
    if not designs.is_design(mode):
        return None
    if mode not in MODELS:
        raise SimulationError(f"{mode} has no SimGrid model: run it on the emulated fabric "
                              "(experiments compare)")
    return MODELS[mode]


def load_simgrid():
    """(network, ina, host_algorithms, simgrid.Actor), imported here and not at the top:
    only the simulation's child process loads SimGrid, which prints a configuration line on
    stderr when it is imported (silenced here) and allows one engine per process."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            import simgrid   # noqa: PLC0415  (child only: see the docstring)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    # the modules that import SimGrid at their top: child only, as above
    from simulation import host_algorithms, ina, network   # noqa: PLC0415
    return network, ina, host_algorithms, simgrid.Actor


def _child(connection, function, args) -> None:
    # SimGrid runs the actors in threads while the main thread waits in C++, where a Python
    # handler (contracts.cli turns SIGTERM into KeyboardInterrupt) would never run: the child
    # dies on SIGTERM, as multiprocessing ends daemon children when the parent exits.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    cpp_engine.die_with_parent()          # and on its parent's death, even by SIGKILL
    try:
        connection.send(("ok", function(*args)))
    except SimulationError as error:
        connection.send(("error", str(error)))
    except BaseException as error:     # noqa: BLE001  (reported to the parent, one line)
        last = traceback.extract_tb(error.__traceback__)[-1:]
        where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
        connection.send(("error", f"{type(error).__name__}: {error}{where}"))
    finally:
        connection.close()


def run_isolated(function, *args):
    """function(*args) in a forked child process (SimGrid: one engine per process), such as
    `simulate_run` or a caller's function around it; its return value, or SimulationError
    with the child's one-line error."""
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sending, function, args), daemon=True)
    child.start()
    sending.close()
    try:
        status, value = receiving.recv()
    except EOFError:
        child.join()
        raise SimulationError(f"the simulation process died (exit code {child.exitcode})") \
            from None
    except BaseException:              # interrupted: the child goes at once
        child.terminate()
        raise
    finally:
        if child.is_alive():
            child.join(timeout=5)
    if status != "ok":
        raise SimulationError(value)
    return value

