"""Reduction-tree planner: which switches aggregate a job, who contributes where, which slots.

For a job's member hosts the planner picks a root switch and the tree of shortest paths from
every member's switch up to it; each switch in the tree aggregates the contributions of its
children (hosts, or child switches sending their partial aggregates) and, unless it is the
root, contributes once to its parent.  Choice of root: smallest depth first, then fewest
switches, then the least loaded switches (jobs already running on them), so concurrent jobs
spread over different spines/cores; remaining ties go to the earlier switch in the spec.

Every switch in a job's tree gets a contiguous slot range of the job's window from its
`SlotAllocator`; a switch without room refuses the job with an error naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import networkx as nx

from contracts.requests import window_refusal
from contracts.wire import (DEFAULT_SLOTS, MAX_CONTRIBUTORS, MAX_JOB_ID, SERVICE_IP,
                            worker_port)

from .slots import SlotAllocator
from .topology import TopologyGraph

GENERATION_BITS = 16             # agg_jobs' generation parameter


class PlanError(ValueError):
    """A job that cannot be planned on this topology (one-line message)."""


class ShapeRefusal(PlanError):
    """A job whose tree a design cannot run at all (SwitchML: more than one switch; ATP: more
    than two levels).  It depends on the topology and the members only, so commands refuse
    it before the network starts (jobs.modes.shape_refusal)."""


class CapacityError(PlanError):
    """A valid job the switches cannot hold: no free slot range on a switch of its tree, more
    contributors at a switch than its bitmap has bits, or no switch common to its members.
    Runners may run such a job as a host allreduce instead (experiments --fallback)."""


@dataclass(frozen=True)
class Child:
    """A contributor below a switch: a member host or a child switch of the tree."""

    node: str
    port: int                    # the switch's port towards the child
    contributor: int             # the child's contributor index at this switch
    is_host: bool


@dataclass
class SwitchPlan:
    """One switch's part in a job's reduction tree."""

    switch: str
    children: list               # [Child], in port order
    slot_base: int
    slot_count: int
    mcast_group: int
    parent: Optional[str] = None
    parent_port: Optional[int] = None          # this switch's port towards the parent
    contributor_at_parent: Optional[int] = None

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def fan_in(self) -> int:
        return len(self.children)


@dataclass(frozen=True)
class HostPlan:
    """What a worker needs: `--contributor`, `--switch-ip`, and where it is plugged in."""

    host: str
    switch: str
    port: int
    contributor: int
    switch_ip: str = SERVICE_IP


@dataclass
class JobPlan:
    job_id: int
    window: int
    root: str
    generation: int = 1          # this installation; tells the switch its slot state is fresh
    switches: dict = field(default_factory=dict)   # name -> SwitchPlan, root first (top-down)
    hosts: dict = field(default_factory=dict)      # name -> HostPlan, in member order
    aggregators: int = 0         # a design whose pool every job shares (ATP): its size

    @property
    def udp_port(self) -> int:
        """The UDP port every worker of the job binds; results come back to it."""
        return worker_port(self.job_id)

    def to_text(self) -> str:
        """The tree as indented text: switches with fan-in and slots, hosts with indices."""
        lines = [f"job {self.job_id}: {len(self.hosts)} workers, window {self.window}, "
                 f"root {self.root}, {len(self.switches)} switch"
                 f"{'es' if len(self.switches) != 1 else ''}"]
        self._describe(self.root, 1, lines)
        return "\n".join(lines)

    def _describe(self, name: str, depth: int, lines: list) -> None:
        sw = self.switches[name]
        role = "root" if sw.is_root else (f"parent {sw.parent} via port {sw.parent_port}, "
                                          f"contributor {sw.contributor_at_parent} there")
        last = sw.slot_base + sw.slot_count - 1
        lines.append(f"{'  ' * depth}{name} ({role}): fan-in {sw.fan_in}, "
                     f"slots {sw.slot_base}-{last}, multicast group {sw.mcast_group}")
        for child in sw.children:
            if child.is_host:
                lines.append(f"{'  ' * (depth + 1)}{child.node}: port {child.port}, "
                             f"contributor {child.contributor}")
            else:
                self._describe(child.node, depth + 1, lines)


class Planner:
    """Plans jobs on one topology and keeps their slot allocations and switch load."""

    def __init__(self, spec, slots_per_switch: int = DEFAULT_SLOTS):
        self.topology = TopologyGraph(spec)
        self.allocators = {name: SlotAllocator(name, slots_per_switch)
                           for name in self.topology.switch_names}
        self.jobs: dict[int, JobPlan] = {}
        self._last_generation = 0

    def plan(self, job_id: int, member_hosts, window: int) -> JobPlan:
        """Plan a job and reserve its slots; raises PlanError (nothing reserved) if it can't."""
        members = list(member_hosts)
        self._check_request(job_id, members, window)
        root, parent_of = self._choose_tree(members)
        plan = self._build_plan(job_id, members, window, root, parent_of)
        self._reserve_slots(plan)
        plan.generation = self._next_generation()
        self.jobs[job_id] = plan
        return plan

    def _next_generation(self) -> int:
        """1, 2, ... 65535, 1, ...: a new number per installed job (0 = never used)."""
        self._last_generation = self._last_generation % ((1 << GENERATION_BITS) - 1) + 1
        return self._last_generation

    def renew_generation(self, job_id: int) -> int:
        """Give a running job a new generation (after a switch of its tree restarted: every
        slot cell of the old one then counts as empty); returns it."""
        plan = self.jobs[job_id]
        plan.generation = self._next_generation()
        return plan.generation

    def release(self, job_id: int) -> JobPlan:
        plan = self.jobs.pop(job_id, None)
        if plan is None:
            raise PlanError(f"job {job_id} is not running")
        for name in plan.switches:
            self.allocators[name].release(job_id)
        return plan

    # ------------------------------------------------------------ checks

    def _check_request(self, job_id: int, members: list, window: int) -> None:
        if not isinstance(job_id, int) or not 0 <= job_id <= MAX_JOB_ID:
            raise PlanError(f"job id {job_id!r} outside 0..{MAX_JOB_ID}")
        if job_id in self.jobs:
            raise PlanError(f"job {job_id} is already running")
        if window_refusal(window):
            raise PlanError(window_refusal(window))
        if not members:
            raise PlanError(f"job {job_id} has no member hosts")
        hosts = set(self.topology.host_names)
        for name in members:
            if name not in hosts:
                raise PlanError(f"job {job_id}: no host named {name!r} in the topology")
        if len(set(members)) != len(members):
            raise PlanError(f"job {job_id}: a host is listed twice")

    # ------------------------------------------------------------ tree choice

    def _choose_tree(self, members: list) -> tuple[str, dict]:
        """(root, {switch: parent switch}) of the best tree over the members' switches."""
        leaves = {self.topology.attachment(h)[0] for h in members}
        switches = self.topology.switch_graph()
        load = self._switch_load()
        best = None
        for order, root in enumerate(self.topology.switch_names):
            distance = nx.single_source_shortest_path_length(switches, root)
            if not all(leaf in distance for leaf in leaves):
                continue
            parent_of = self._tree_to(switches, root, leaves)
            tree = set(parent_of) | {root}
            score = (max(distance[leaf] for leaf in leaves), len(tree),
                     sum(load[s] for s in tree), order)
            if best is None or score < best[0]:
                best = (score, root, parent_of)
        if best is None:
            raise CapacityError("the members' switches are not connected to a common switch")
        return best[1], best[2]

    @staticmethod
    def _tree_to(switches: nx.Graph, root: str, leaves: set) -> dict:
        """{switch: parent} for the union of shortest paths from the leaves up to root."""
        predecessors = nx.predecessor(switches, root)
        parent_of = {}
        for leaf in sorted(leaves):
            node = leaf
            while node != root and node not in parent_of:
                parent_of[node] = predecessors[node][0]
                node = parent_of[node]
        return parent_of

    def _switch_load(self) -> dict:
        load = {name: 0 for name in self.topology.switch_names}
        for plan in self.jobs.values():
            for name in plan.switches:
                load[name] += 1
        return load

    # ------------------------------------------------------------ plan construction

    def _build_plan(self, job_id, members, window, root, parent_of) -> JobPlan:
        topo = self.topology
        children: dict[str, list] = {name: [] for name in set(parent_of) | {root}}
        for host in members:
            switch, port = topo.attachment(host)
            children[switch].append((port, host, True))
        for switch, parent in parent_of.items():
            children[parent].append((topo.port_towards(parent, switch), switch, False))

        plan = JobPlan(job_id, window, root)
        for name in self._top_down(root, children):
            entries = sorted(children[name])
            if len(entries) > MAX_CONTRIBUTORS:
                raise CapacityError(f"switch {name}: job {job_id} would have {len(entries)} "
                                f"contributors, at most {MAX_CONTRIBUTORS} are supported")
            plan.switches[name] = SwitchPlan(
                switch=name,
                children=[Child(node, port, index, is_host)
                          for index, (port, node, is_host) in enumerate(entries)],
                slot_base=0, slot_count=window, mcast_group=job_id + 1)
        for name, sw in plan.switches.items():
            for child in sw.children:
                if child.is_host:
                    continue
                below = plan.switches[child.node]
                below.parent = name
                below.parent_port = topo.port_towards(child.node, name)
                below.contributor_at_parent = child.contributor
        for host in members:
            switch, port = topo.attachment(host)
            child = next(c for c in plan.switches[switch].children if c.node == host)
            plan.hosts[host] = HostPlan(host, switch, port, child.contributor)
        return plan

    @staticmethod
    def _top_down(root: str, children: dict) -> list:
        order, queue = [], [root]
        while queue:
            name = queue.pop(0)
            order.append(name)
            queue.extend(node for _, node, is_host in sorted(children[name]) if not is_host)
        return order

    def _reserve_slots(self, plan: JobPlan) -> None:
        reserved = []
        try:
            for name, sw in plan.switches.items():
                sw.slot_base = self.allocators[name].allocate(plan.job_id, plan.window)
                reserved.append(name)
        except ValueError as error:
            for name in reserved:
                self.allocators[name].release(plan.job_id)
            raise CapacityError(str(error)) from None
