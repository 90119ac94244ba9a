"""The aggregation manager: installs the pipeline, routes and jobs on every switch.

`AggregationManager(spec, connections)` drives one `SwitchConnection` (or anything with the
same methods) per switch of a TopologySpec: the program and /32 routes (ECMP members, groups
and entries) once, then per job what its design's installer plans and writes
(designs.py; ours: the reduction tree of planner.py as the table entries and multicast
groups of entries.py).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from .diagnosis import MissingReport, missing_ranks
from .entries import (DROP_REASONS, DROP_REASONS_COUNTER, EGRESS_DROPS_COUNTER, EVENTS,
                      EVENTS_COUNTER, OWNER_PORTS_TABLE, Flowlets, RouteWrites, route_writes)
from contracts.designs import INA
from contracts.wire import DEFAULT_SLOTS

from .designs import INSTALLERS
from .planner import JobPlan, PlanError

SLOT_OWNER_REGISTER = "slot_state.owner"      # AGG_CELLS = 2 * AGG_SLOTS cells
INSTALL_THREADS = 8        # switches programmed at once by install_pipeline_and_routes


class AggregationManager:
    def __init__(self, spec, connections: dict, pipeline=None,
                 slots_per_switch: int = DEFAULT_SLOTS, flowlets: Flowlets = Flowlets()):
        """flowlets: off (default) routes host traffic per flow over its equal-cost paths;
        on, by flowlets (entries.Flowlets, p4src/flowlet.p4)."""
        missing = [s.name for s in spec.switches if s.name not in connections]
        if missing:
            raise ValueError(f"no connection for switch {missing[0]}")
        self.spec = spec
        self.connections = connections
        self.pipeline = pipeline
        self.flowlets = flowlets
        # one installer per design (controller/designs.py); ours keeps the planner that
        # routes, status and the recovery of restarted switches read
        self.installers = {name: installer(spec, slots_per_switch)
                           for name, installer in INSTALLERS.items()}
        self.planner = self.installers[INA.name].planner
        self._installed: dict[int, tuple[str, list, list]] = {}   # job: design, writes
        self._route_parts: dict | None = None
        self._route_parts_lock = threading.Lock()
        # Held while jobs are installed or removed, and by controller.recovery while it
        # re-installs a restarted switch, so a job is never installed twice or missed there.
        self.lock = threading.RLock()

    def install_pipeline_and_routes(self, threads: int = INSTALL_THREADS,
                                    processes: dict | None = None) -> None:
        """Load the program (if a pipeline was given, else adopt the running one's P4Info)
        and write a /32 route for every host on every switch (ECMP over equal-cost paths).
        Up to `threads` switches at a time (each its own connection): the switches' work
        and ours overlap.  `processes` ({switch: its process}) spreads them: switches that
        share a process (topologies' switch groups) take turns in it, one request at a time
        under its GIL, so the switches programmed together come from different processes.
        The first failure is raised once the others are done."""
        self.routes_on(next(iter(self.connections)))     # every switch's, computed once here

        def install(name: str) -> None:
            conn = self.connections[name]
            if self.pipeline is not None:
                conn.set_pipeline(self.pipeline)
            else:
                conn.fetch_p4info()
            self._check_slot_capacity(name, conn)
            self._fit_installers(conn)
            install_routes(conn, self.routes_on(name))

        with ThreadPoolExecutor(max_workers=max(1, threads),
                                thread_name_prefix="install") as pool:
            futures = [pool.submit(install, name)
                       for name in spread_over_processes(list(self.connections), processes)]
        for future in futures:
            future.result()

    def routes_on(self, name: str) -> RouteWrites:
        """The ECMP members, groups, /32 ipv4_routes entries and flowlet settings of switch
        `name`.  Computed once for all switches (the topology does not change), so that a
        restarted switch (controller.recovery) costs only its own writes: at fattree:16,
        every switch's routes (327,680 entries) take ~6 s of controller CPU to compute."""
        with self._route_parts_lock:
            if self._route_parts is None:
                writes = route_writes(self.planner.topology.routes(), self.flowlets)
                self._route_parts = writes.by_switch(self.connections)
            return self._route_parts[name]

    def _fit_installers(self, conn) -> None:
        """Tell the installers that size themselves by the program (ATP's pool) its
        P4Info (every switch runs the same program)."""
        helper = getattr(conn, "helper", None)
        if helper is None:
            return
        for installer in self.installers.values():
            if hasattr(installer, "fit_to_program"):
                installer.fit_to_program(helper)

    def _check_slot_capacity(self, name: str, conn) -> None:
        """Refuse to plan more slots than the program has (its AGG_SLOTS, from the P4Info)."""
        helper = getattr(conn, "helper", None)
        if helper is None:
            return
        cells = helper.register(SLOT_OWNER_REGISTER).size
        configured = self.planner.allocators[name].capacity
        if configured > cells // 2:
            raise PlanError(f"switch {name}: its program has {cells // 2} aggregation slots "
                            f"(AGG_SLOTS), fewer than the {configured} the controller was given "
                            "(slots_per_switch)")

    def start_job(self, job_id: int, member_hosts, window: int,
                  design: str = INA.name) -> JobPlan:
        """Plan and install a job of `design` (contracts/designs/); on a failed install
        nothing of the job stays behind."""
        with self.lock:
            return self._start_job(job_id, member_hosts, window, design)

    def _start_job(self, job_id: int, member_hosts, window: int, design: str) -> JobPlan:
        if job_id in self._installed:
            raise PlanError(f"job {job_id} is already running")
        installer = self.installers[design]
        plan = installer.plan(job_id, member_hosts, window)
        entries, groups = installer.writes(plan, self.spec)
        done_entries, done_groups = [], []
        try:
            for reset in installer.resets(plan):
                self.connections[reset.switch].reset_register_cells(reset.register,
                                                                    reset.first, reset.end)
            for group in groups:
                self.connections[group.switch].insert_multicast_group(group)
                done_groups.append(group)
            owner_ports: dict[str, list] = {}
            for entry in entries:
                if entry.table == OWNER_PORTS_TABLE:     # many, one write per switch below
                    owner_ports.setdefault(entry.switch, []).append(entry)
                    continue
                self.connections[entry.switch].insert_entries([entry])
                done_entries.append(entry)
            for name, batch in owner_ports.items():
                self.connections[name].insert_entries(batch)
                done_entries.extend(batch)
        except Exception:
            self._remove(done_entries, done_groups)
            installer.release(job_id)
            raise
        self._installed[job_id] = (design, entries, groups)
        return plan

    def stop_job(self, job_id: int) -> None:
        """Remove the job's entries and groups and free its slots."""
        with self.lock:
            if job_id not in self._installed:
                raise PlanError(f"job {job_id} is not running")
            design, entries, groups = self._installed.pop(job_id)
            self.installers[design].release(job_id)
            self._remove(entries, groups)

    def missing_ranks(self, job_id: int) -> MissingReport:
        """Which ranks a running job waits for, from its slot bitmaps (controller/diagnosis.py).
        Raises RegisterReadUnsupported on bmv2, PlanError for a job that is not running."""
        plan = self.planner.jobs.get(job_id)
        if plan is None:
            raise PlanError(f"job {job_id} is not running")
        return missing_ranks(plan, self.connections)

    def installer_of(self, job_id: int):
        """The installer of the design running job `job_id`."""
        if job_id not in self._installed:
            raise PlanError(f"job {job_id} is not running")
        return self.installers[self._installed[job_id][0]]

    def jobs(self) -> dict:
        """{job_id: plan} of the running jobs, of every design."""
        return {job: plan for installer in self.installers.values()
                for job, plan in installer.jobs().items()}

    def status(self) -> dict:
        """{switch: {"drops": {reason: packets}, "events": {event: packets}}}, non-zero only."""
        return self.read_status(self.connections)

    @staticmethod
    def read_status(connections: dict) -> dict:
        """status() for any {switch: connection} whose P4Info is known."""
        report = {}
        for name, conn in connections.items():
            drops = _named(conn.read_counter(DROP_REASONS_COUNTER), DROP_REASONS)
            for reason, packets in _named(conn.read_counter(EGRESS_DROPS_COUNTER),
                                          DROP_REASONS).items():
                drops[reason] = drops.get(reason, 0) + packets
            report[name] = {"drops": drops,
                            "events": _named(conn.read_counter(EVENTS_COUNTER), EVENTS)}
        return report

    def _remove(self, entries: list, groups: list) -> None:
        by_switch: dict[str, list] = {}
        for entry in entries:
            by_switch.setdefault(entry.switch, []).append(entry)
        for name, switch_entries in by_switch.items():
            self.connections[name].delete_entries(switch_entries)
        for group in groups:
            self.connections[group.switch].delete_multicast_group(group)


def spread_over_processes(names: list, processes: dict | None) -> list:
    """`names` reordered round-robin over their processes ({name: process}; none: each
    its own), each process's names in their order: consecutive names are in different
    processes as long as there are processes left."""
    queues: dict = {}
    for name in names:
        queues.setdefault((processes or {}).get(name, name), []).append(name)
    order = []
    while queues:
        for process in list(queues):
            order.append(queues[process].pop(0))
            if not queues[process]:
                del queues[process]
    return order


def install_routes(conn, writes) -> None:
    """Write one switch's RouteWrites: its entries, then its default entries."""
    if writes.entries:
        conn.insert_entries(writes.entries)
    if writes.defaults:
        conn.modify_entries(writes.defaults)


def _named(cells: dict, names: dict) -> dict:
    return {names[i]: packets for i, (packets, _) in sorted(cells.items())
            if i in names and packets}
