"""Each in-network design's installer, found by the design's name (contracts/designs/).

An installer is what the manager (manager.py) asks to put one job of its design on the
switches and take it off: `plan` (the job's switch state: which switches, slots, ports),
`writes` (that plan as table entries and multicast groups), `resets` (register cells to
zero before the entries are written) and `release` (its resources, once the writes are
removed).  The manager writes and removes the entries itself, the same
way for every design, and undoes a failed install.

A new design adds its installer class here, in a file of its own beside this one, and its
line in INSTALLERS; tests/contracts/test_designs.py checks every registered design has one.
"""

from __future__ import annotations

from contracts.designs import ATP, INA, SWITCHML

from .entries import job_entries
from .planner import JobPlan, Planner
from .atp import SharedPoolInstaller
from .switchml import PoolInstaller


class TreeInstaller:
    """Ours (contracts.designs.INA): a reduction tree over the switches between the job's
    hosts, a range of slots on each (planner.py), written as agg_* table entries and the
    result multicast groups (entries.py).  A restarted switch gets its jobs back under a new
    generation (recovery.py, through `planner`)."""

    def __init__(self, spec, slots_per_switch: int):
        self.planner = Planner(spec, slots_per_switch)

    def plan(self, job_id: int, member_hosts, window: int) -> JobPlan:
        return self.planner.plan(job_id, member_hosts, window)

    def writes(self, plan: JobPlan, spec) -> tuple:
        return job_entries(plan, spec)

    def resets(self, plan: JobPlan) -> list:
        """None: a cell of another generation counts as empty (p4src/agg_slot_state.p4)."""
        return []

    def release(self, job_id: int) -> None:
        self.planner.release(job_id)

    def jobs(self) -> dict:
        return dict(self.planner.jobs)


INSTALLERS = {INA.name: TreeInstaller, SWITCHML.name: PoolInstaller,
              ATP.name: SharedPoolInstaller}
