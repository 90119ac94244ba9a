"""ATP's installer (contracts.designs.ATP, p4src/atp/atp.p4).

A job's tree is the planner's (planner.py) over its hosts, at most two levels: the switches
its workers hang off (level 0, each a rack) and, when there are several, the switch above
them (level 1), which must have only those racks below it.  The aggregators are not the
job's: every ATP job on a switch shares its pool (the program's ATP_AGGREGATORS), so
nothing is allocated and the planner's slot ranges are not written.  Each switch gets an
atp_jobs entry (its level, fan-in, whether it is the top, its parent port and index there,
the multicast group and the job's parameter server: the first member's host, at UDP
24000 + job), atp_members entries for its
children (workers by index, racks by index) and its parent, and the result addresses every
design shares (agg_result_addresses; a child switch at ATP's port).  The job's parameter
server runs on its first host (jobs/modes.py AtpMode).
"""

from __future__ import annotations

from contracts.designs import ATP
from contracts.wire import ATP_MAX_MEMBERS, ATP_UDP_PORT, atp_server_port

from .entries import (EGRESS_PORT_FIELD, INGRESS_PORT_FIELD, JOB_ID_FIELD,
                      RESULT_ADDRESSES_TABLE, MulticastGroup, TableEntry, ip_to_int,
                      mac_to_int, result_address)
from .planner import CapacityError, JobPlan, Planner, ShapeRefusal

JOBS_TABLE = "atp_jobs"
MEMBERS_TABLE = "atp_members"
POOL_REGISTER = "atp_tag"              # its size is the program's ATP_AGGREGATORS


class SharedPoolInstaller:
    """ATP: entries on the job's one or two levels of switches; aggregators shared."""

    def __init__(self, spec, slots_per_switch: int):
        # every slot of every switch: nothing of a job's is reserved (its window is only
        # the fragments each worker keeps in flight)
        self.planner = Planner(spec, (1 << 16) - 1)
        self.aggregators = 2 * slots_per_switch       # AGG_CELLS, until the program says

    def fit_to_program(self, helper) -> None:
        """Learn the pool's size from the program's P4Info (its atp_tag register)."""
        self.aggregators = helper.register(POOL_REGISTER).size

    def plan(self, job_id: int, member_hosts, window: int) -> JobPlan:
        plan = self.planner.plan(job_id, member_hosts, window)
        refusal = self._refusal(plan)
        if refusal:
            self.planner.release(job_id)
            raise refusal
        plan.aggregators = self.aggregators
        return plan

    @staticmethod
    def _refusal(plan: JobPlan):
        root = plan.switches[plan.root]
        below = [plan.switches[c.node] for c in root.children if not c.is_host]
        if below and (any(c.is_host for c in root.children)
                      or any(not c.is_host for sw in below for c in sw.children)):
            return ShapeRefusal(f"{ATP.name} aggregates at two levels (racks, and the switch "
                                f"above them); job {plan.job_id}'s tree has more")
        for sw in plan.switches.values():
            if sw.fan_in > ATP_MAX_MEMBERS:
                return CapacityError(f"switch {sw.switch}: job {plan.job_id} would have "
                                     f"{sw.fan_in} members, {ATP.name}'s bitmaps hold "
                                     f"{ATP_MAX_MEMBERS}")
        return None

    def writes(self, plan: JobPlan, spec) -> tuple:
        entries, groups = [], []
        job = plan.job_id
        server = spec.host(next(iter(plan.hosts)))       # on the first member's host
        for name, sw in plan.switches.items():
            level = 0 if all(c.is_host for c in sw.children) else 1
            entries.append(TableEntry(name, JOBS_TABLE, {JOB_ID_FIELD: job}, "atp_job", {
                "generation": plan.generation, "level": level, "fan_in": sw.fan_in,
                "is_top": int(sw.is_root), "parent_port": sw.parent_port or 0,
                "index_at_parent": sw.contributor_at_parent or 0,
                "mcast_group": sw.mcast_group, "ps_mac": mac_to_int(server.mac),
                "ps_ip": ip_to_int(server.ip), "ps_port": atp_server_port(job),
                "ps_here": int(any(c.node == server.name for c in sw.children))}))
            if not sw.is_root:
                entries.append(TableEntry(name, MEMBERS_TABLE,
                                          {JOB_ID_FIELD: job, INGRESS_PORT_FIELD: sw.parent_port},
                                          "atp_parent"))
            for child in sw.children:
                entries.append(TableEntry(name, MEMBERS_TABLE,
                                          {JOB_ID_FIELD: job, INGRESS_PORT_FIELD: child.port},
                                          "atp_child", {"index": child.contributor}))
                entries.append(TableEntry(name, RESULT_ADDRESSES_TABLE,
                                          {JOB_ID_FIELD: job, EGRESS_PORT_FIELD: child.port},
                                          "result_to",
                                          result_address(plan, spec, child, ATP_UDP_PORT)))
            groups.append(MulticastGroup(name, sw.mcast_group,
                                         tuple((child.port, 1) for child in sw.children)))
        return entries, groups

    def resets(self, plan: JobPlan) -> list:
        """None: a tag of another installation is another fragment (p4src/atp/atp.p4)."""
        return []

    def release(self, job_id: int) -> None:
        self.planner.release(job_id)

    def jobs(self) -> dict:
        return dict(self.planner.jobs)


def racks_of(plan: JobPlan) -> tuple:
    """(workers per rack in rack order, {host: (rack, index)}) of an ATP plan."""
    root = plan.switches[plan.root]
    racks = ([plan.switches[c.node] for c in root.children]
             if not all(c.is_host for c in root.children) else [root])
    places = {}
    for rack, sw in enumerate(racks):
        for child in sw.children:
            places[child.node] = (rack, child.contributor)
    return tuple(sw.fan_in for sw in racks), places
