"""A running, programmed fabric: compiled p4src + Mininet network + aggregation manager.

What `python -m lab` and `python -m experiments compare` share: compile the
aggregation program for the switch target, start the network, connect the controller to
every switch, push pipeline and routes.  `with Fabric(...) as fabric:` always tears it all
down (supervisor first, then controller connections, then the network).

A switch process that dies is restarted by the network's supervisor and reprogrammed by
the controller (controller/recovery.py); `restart_events()` lists what happened, for
reports ("switch s1 restarted during job 3; job failed: ...").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable, Optional

from contracts.cli import (UsageError, interrupts_deferred, non_negative_int, one_line,
                           positive_int)
from contracts.jobs import default_k
from contracts.requests import FabricRequest, JobRequest
from contracts.wire import ATP_DEFAULT_AGGREGATORS, DEFAULT_K
from controller import AggregationManager, Flowlets, Pipeline, Planner, connect_all
from controller.recovery import describe_job_outcome, recover_switch, restarts_during
from fabric.spawner import HostsSpawner
from topologies.cluster import add_cluster_arguments
from topologies.impairment import add_link_arguments
from topologies.net import Network, NetworkError, describe, requested_network
from topologies.program import DEFAULT_BUILD_DIR, CompileFailed, compile_program
from topologies.spec import TopologySpec
from topologies.switches import SwitchStartError


class FabricError(RuntimeError):
    """The controller could not connect to or program the switches (one-line message)."""


# What ends a command with exit status 1 (contracts.cli.run_command's `failures`).
SETUP_ERRORS = (NetworkError, SwitchStartError, CompileFailed, FabricError)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _limited(bits: int):
    """An argparse type: an integer from 0 to 2**bits - 1 (a p4src register's range)."""
    def parse(text: str) -> int:
        value = non_negative_int(text)
        if value >= 1 << bits:
            raise argparse.ArgumentTypeError(f"must be < 2**{bits}, got {value}")
        return value
    return parse


def add_routing_arguments(parser) -> None:
    """How the switches spread host traffic (TCP baselines) over equal-cost paths:
    ECMP per flow, or flowlet switching (p4src/flowlet.p4)."""
    parser.add_argument("--flowlet-gap-us", type=_limited(48), default=0, metavar="US",
                        help="flowlet switching: after a pause longer than US microseconds a "
                             "flow's packets may take another equal-cost path (default 0: "
                             "ECMP per flow, every packet of a flow on one path)")
    parser.add_argument("--flowlet-max-bytes", type=_limited(32), default=0, metavar="N",
                        help="flowlet switching: a flowlet also ends after N bytes, pause or "
                             "not (flowcells; may reorder; default 0: no limit)")


def add_program_arguments(parser) -> None:
    """What the switches' program is built with beyond K."""
    parser.add_argument("--aggregators", type=positive_int, default=None, metavar="N",
                        help="ATP's aggregators per switch, shared by every ATP job (the "
                             f"program's ATP_AGGREGATORS; default {ATP_DEFAULT_AGGREGATORS})")


def add_fabric_arguments(parser, cluster: bool = True) -> None:
    """The options a command that starts a fabric takes about it: the links' settings
    (--bw --delay --jitter --loss --dup --reorder), routing (--flowlet-gap-us
    --flowlet-max-bytes), the program (--aggregators) and, with `cluster`, --cluster
    --cluster-user --placement --tunnel.  contracts.requests.FabricRequest.from_options
    reads them; Fabric.from_request the rest."""
    add_link_arguments(parser)
    add_routing_arguments(parser)
    add_program_arguments(parser)
    if cluster:
        add_cluster_arguments(parser)


def describe_placement(placement: dict) -> str:
    """"server: node node ...; server: ..." in the order the servers first appear."""
    servers = {}
    for name, server in placement.items():
        servers.setdefault(server, []).append(name)
    return "; ".join(f"{server}: {' '.join(names)}" for server, names in servers.items())


def requested(request: FabricRequest, job: JobRequest) -> tuple:
    """(spec, switch kind, cluster, job) of a command's requests: the network checked
    against what its switch can impair and run (topologies.net.requested_network), and the
    job with K and the window filled in where unset (JobRequest.resolved: K the switch
    kind's default, contracts.jobs.default_k, the window the links'); UsageError (one line)
    for a bad request."""
    try:
        spec, kind, cluster = requested_network(request)
    except ValueError as e:
        raise UsageError(str(e)) from None
    links = request.links
    return spec, kind, cluster, job.resolved(default_k(kind), links.bw,
                                             links.delay or links.jitter)


def switch_backend(request: FabricRequest) -> Optional[str]:
    """The built-in switch's back end a command asks for: its --switch-backend, else
    $P4SWITCH_BACKEND (which the switch processes read), else None."""
    return request.switch_backend or os.environ.get("P4SWITCH_BACKEND")


class Fabric:
    def __init__(self, spec: TopologySpec, switch_kind: str, k: int = DEFAULT_K,
                 build_dir: str = DEFAULT_BUILD_DIR, log_dir: Optional[str] = None,
                 pcap_dir: Optional[str] = None, switch_logs: bool = False,
                 say: Callable[[str], None] = _stderr, supervise: bool = True,
                 impair_seed: Optional[int] = None, cluster=None,
                 switches_per_process: Optional[int] = None, host_addressing: str = "auto",
                 fork_workers: Optional[bool] = None, flowlets: Flowlets = Flowlets(),
                 aggregators: Optional[int] = None):
        """cluster: a topologies.cluster.Cluster to place the network over several servers
        (the controller still runs here, on the switches' forwarded gRPC ports).
        flowlets: how host traffic spreads over equal-cost paths (add_routing_arguments).
        switches_per_process, host_addressing: see topologies.net.Network; fork_workers:
        fabric.spawner.HostsSpawner, which the network is handed (`self.spawner`).
        aggregators: the program's ATP_AGGREGATORS (None: its default)."""
        self.spec = spec
        self.switch_kind = switch_kind
        self.k = k
        self.build_dir = build_dir
        self.flowlets = flowlets
        self.defines = {} if aggregators is None else {"ATP_AGGREGATORS": aggregators}
        self.say = say
        self.program = None
        self.spawner = HostsSpawner(len(spec.hosts), fork_workers=bool(fork_workers))
        self.network = Network(spec, switch=switch_kind, output_dir=log_dir,
                               trace_logs=switch_logs, pcap_dir=pcap_dir, supervise=supervise,
                               impair_seed=impair_seed, cluster=cluster,
                               switches_per_process=switches_per_process,
                               host_addressing=host_addressing, spawner=self.spawner)
        self.connections = None
        self.manager = None
        self.request = None        # the FabricRequest of from_request

    @classmethod
    def from_request(cls, spec: TopologySpec, switch_kind: str, request: FabricRequest, k: int,
                     log_dir: str, **settings) -> "Fabric":
        """The fabric a command's FabricRequest asks for, its program built for K = k: the
        switches' logs, restarts and the routing of host traffic (add_fabric_arguments).
        `settings`: the other Fabric keywords (pcap_dir, impair_seed, cluster, say), which
        each command derives in its own way."""
        fabric = cls(spec, switch_kind, k=k, log_dir=log_dir, switch_logs=request.switch_logs,
                     supervise=request.restart,
                     flowlets=Flowlets(request.flowlet_gap_us, request.flowlet_max_bytes),
                     aggregators=request.aggregators, **settings)
        fabric.request = request
        return fabric

    def start(self) -> "Fabric":
        built = ", ".join(f"{name}={value}" for name, value in
                          sorted({"AGG_K": self.k, **self.defines}.items()))
        self.say(f"compiling p4src/main.p4 for {self.switch_kind} ({built})")
        self.program = compile_program(self.switch_kind, self.build_dir, self.k,
                                       defines=self.defines)
        where = (f" on {', '.join(self.network.cluster.servers)}"
                 if self.network.cluster is not None else "")
        self.say(f"starting {len(self.spec.switches)} {self.switch_kind} switch(es), "
                 f"{len(self.spec.hosts)} hosts{where}")
        self.network.start()
        if self.network.placement:
            self.say("placement: " + describe_placement(self.network.placement))
        try:
            self.say("connecting the controller; installing pipeline and routes")
            self._connect_controller()
        except BaseException:
            self.stop()
            raise
        return self

    def _connect_controller(self) -> None:
        try:
            pipeline = Pipeline.from_files(self.program.p4info, self.program.device_config)
            self.connections = connect_all(self.spec, thrift_ports=self.network.thrift_ports())
            self.manager = AggregationManager(self.spec, self.connections, pipeline,
                                              flowlets=self.flowlets)
            self.manager.install_pipeline_and_routes(
                processes=self.network.switch_processes())
        except Exception as e:   # gRPC, P4Runtime and file errors alike end the setup
            raise FabricError(f"controller setup failed: {one_line(e)}") from None
        self.network.on_switch_restart = self._recover_switch

    def _recover_switch(self, name: str) -> None:
        recover_switch(self.manager, name)
        self.say(f"switch {name} restarted; pipeline, routes and jobs re-installed")

    def describe(self) -> str:
        """One line per host (address, MAC, switch port) and switch (device id, gRPC port)."""
        return describe(self.spec)

    def planned_tree(self, job_id: int, member_hosts, window: int):
        """The reduction tree the controller would plan for a job on `member_hosts`, without
        installing it or taking slots (a fresh planner over the spec)."""
        return Planner(self.spec).plan(job_id, member_hosts, window)

    def restart_events(self) -> list:
        """The network's switch restarts so far (topologies.supervisor.RestartEvent)."""
        return self.network.restart_events()

    def restart_outcome(self, job_id: int, since: float, switches=None,
                        failure: Optional[str] = None) -> Optional[str]:
        """For a job that ran from `since` (time.monotonic()) until now on `switches` (names;
        None: every switch): None if none of them restarted meanwhile, else the line to
        report, "switch s1 restarted during job 3; job failed: <failure>" (failure: the
        first failed worker's error, None if all were correct: "...; job completed exactly")."""
        names = [s.name for s in self.spec.switches] if switches is None else switches
        events = restarts_during(self.restart_events(), since, time.monotonic(), names)
        return describe_job_outcome(job_id, events, failure) if events else None

    def stop(self) -> None:
        """The controller's connections, then the network; Ctrl-C waits for it: a connection
        left open keeps its stream's thread, and the process, alive."""
        with interrupts_deferred():
            self.network.stop_supervisor()     # no restart or recovery while tearing down
            manager, self.manager = self.manager, None
            connections, self.connections = self.connections, None
            try:
                for connection in (connections or {}).values():
                    connection.close()
            finally:
                self.network.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
