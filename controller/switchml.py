"""SwitchML's installer (contracts.designs.SWITCHML, p4src/switchml/switchml.p4).

A job is one switch's: the planner's tree over its hosts must be a single switch (a rack),
else the job is refused in one line.  Its pool of `window` slots comes from SwitchML's own
slot allocator on that switch (the program gives each design its own registers), and is
written as switchml_jobs / switchml_workers entries, the result addresses every design
shares (agg_result_addresses) and the job's multicast group.  As SwitchML's controller
does, the pool starts clean: `resets` zeroes its cells' worker bitmaps and counts, which
the manager writes before the entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.designs import SWITCHML

from .entries import (EGRESS_PORT_FIELD, INGRESS_PORT_FIELD, JOB_ID_FIELD,
                      RESULT_ADDRESSES_TABLE, MulticastGroup, TableEntry, result_address)
from .planner import JobPlan, Planner, ShapeRefusal

JOBS_TABLE = "switchml_jobs"
WORKERS_TABLE = "switchml_workers"
POOL_REGISTERS = ("switchml_seen", "switchml_count")    # zeroed per job: SwitchML's reset


@dataclass(frozen=True)
class RegisterReset:
    """Cells first .. end - 1 of a register set to 0 on one switch."""

    switch: str
    register: str
    first: int
    end: int


class PoolInstaller:
    """SwitchML: a job's pool of slots on the one switch its hosts hang off."""

    def __init__(self, spec, slots_per_switch: int):
        self.planner = Planner(spec, slots_per_switch)

    def plan(self, job_id: int, member_hosts, window: int) -> JobPlan:
        plan = self.planner.plan(job_id, member_hosts, window)
        if len(plan.switches) > 1:
            self.planner.release(job_id)
            raise ShapeRefusal(f"{SWITCHML.name} aggregates in one switch (a single rack); "
                                f"job {job_id}'s hosts need {len(plan.switches)}")
        return plan

    def writes(self, plan: JobPlan, spec) -> tuple:
        (name, sw), = plan.switches.items()
        job = plan.job_id
        entries = [TableEntry(name, JOBS_TABLE, {JOB_ID_FIELD: job}, "switchml_job",
                              {"fan_in": sw.fan_in, "slot_base": sw.slot_base,
                               "slot_count": sw.slot_count, "mcast_group": sw.mcast_group})]
        for child in sw.children:
            entries.append(TableEntry(name, WORKERS_TABLE,
                                      {JOB_ID_FIELD: job, INGRESS_PORT_FIELD: child.port},
                                      "switchml_worker", {"wid": child.contributor}))
            entries.append(TableEntry(name, RESULT_ADDRESSES_TABLE,
                                      {JOB_ID_FIELD: job, EGRESS_PORT_FIELD: child.port},
                                      "result_to", result_address(plan, spec, child)))
        group = MulticastGroup(name, sw.mcast_group,
                               tuple((child.port, 1) for child in sw.children))
        return entries, [group]

    def resets(self, plan: JobPlan) -> list:
        """The pool's cells (two copies per slot) of every register SwitchML keeps per
        worker, back to 0."""
        (name, sw), = plan.switches.items()
        return [RegisterReset(name, register, 2 * sw.slot_base,
                              2 * (sw.slot_base + sw.slot_count))
                for register in POOL_REGISTERS]

    def release(self, job_id: int) -> None:
        self.planner.release(job_id)

    def jobs(self) -> dict:
        return dict(self.planner.jobs)
