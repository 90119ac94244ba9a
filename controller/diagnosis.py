"""Which workers a stuck job is waiting for: slot bitmaps read over P4Runtime -> ranks.

A worker only knows that its slot got no result; the switches know who has contributed.
`missing_ranks(plan, connections)` reads, on every switch of the job's tree, the slot state
of the job's cells (docs/protocol.md, "Slots and versions": owner, round_offset, seen,
count) and reports every round that is collecting, the children missing from it, and the
member hosts behind them.  Rank r is the r-th host of the member list given to start_job
(JobPlan.hosts keeps that order).

A missing child switch means: if it holds the same round, complete, its partial is on the
way (nobody below is missing for this round; a retransmission will bring it); if it holds
the round still collecting, its own missing children are reported from its own cell; if it
does not hold that round at all, nobody below it has contributed and all hosts below it
are missing.  The state is a snapshot: take it once workers have reported a stall, when live
workers have long sent what they can.  The registers are read through the connection: over
P4Runtime on p4switch, over bmv2's Thrift API on bmv2 (a connection given its Thrift port:
controller/bmv2_registers.py).  A connection to bmv2 without one gets P4Runtime's
UNIMPLEMENTED, and RegisterReadUnsupported says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .client import SwitchError

SLOT_REGISTERS = ("owner", "round_offset", "seen", "count")
REGISTER_PREFIX = "slot_state."


class RegisterReadUnsupported(SwitchError):
    """The switch cannot read registers over P4Runtime (bmv2 without its Thrift port), so
    ranks cannot be named."""


@dataclass(frozen=True)
class StuckRound:
    """A slot version that is collecting a round and the children it still waits for."""

    switch: str
    slot: int                    # relative to the job (the workers' slot field)
    version: int
    chunk_offset: int
    missing_children: tuple      # node names (hosts or child switches) not in the bitmap
    missing_hosts: tuple         # member hosts behind them that have not contributed


@dataclass
class MissingReport:
    job_id: int
    stuck: list = field(default_factory=list)           # [StuckRound]
    missing_hosts: list = field(default_factory=list)   # member order
    missing_ranks: list = field(default_factory=list)   # ascending

    def to_text(self) -> str:
        """"job 3: ranks 2, 5 missing (h3, h6)", or why no rank can be named."""
        if self.missing_ranks:
            s = "s" if len(self.missing_ranks) > 1 else ""
            ranks = ", ".join(str(r) for r in self.missing_ranks)
            return (f"job {self.job_id}: rank{s} {ranks} missing "
                    f"({', '.join(self.missing_hosts)})")
        if self.stuck:
            return (f"job {self.job_id}: no rank missing; {len(self.stuck)} round(s) wait for "
                    "a partial aggregate between switches")
        return f"job {self.job_id}: no rank missing (no slot is waiting for a contribution)"


def missing_ranks(plan, connections: dict) -> MissingReport:
    """Read the job's slot state on every switch of `plan` and name the missing ranks."""
    states = {name: _read_slot_state(connections[name], sw, name)
              for name, sw in plan.switches.items()}
    ranks = {host: rank for rank, host in enumerate(plan.hosts)}
    report = MissingReport(plan.job_id)
    missing = set()
    for name, sw in plan.switches.items():
        for (slot, version), cell in sorted(states[name].items()):
            if cell["owner"] != plan.generation or cell["count"] == 0:
                continue
            absent = [c for c in sw.children if not cell["seen"] >> c.contributor & 1]
            hosts = []
            for child in absent:
                if child.is_host:
                    hosts.append(child.node)
                elif not _holds_round(states[child.node].get((slot, version)), plan.generation,
                                      cell["round_offset"]):
                    hosts.extend(_hosts_below(plan, child.node))
            report.stuck.append(StuckRound(name, slot, version, cell["round_offset"],
                                           tuple(c.node for c in absent), tuple(hosts)))
            missing.update(hosts)
    report.missing_hosts = [h for h in plan.hosts if h in missing]
    report.missing_ranks = sorted(ranks[h] for h in missing)
    return report


def _holds_round(cell, generation: int, offset: int) -> bool:
    return cell is not None and cell["owner"] == generation and cell["round_offset"] == offset


def _hosts_below(plan, switch: str) -> list:
    hosts = []
    for child in plan.switches[switch].children:
        hosts.extend([child.node] if child.is_host else _hosts_below(plan, child.node))
    return hosts


def _read_slot_state(conn, sw, name: str) -> dict:
    """{(slot, version): {register: value}} for the job's cells on one switch."""
    first = 2 * sw.slot_base
    wanted = range(first, first + 2 * sw.slot_count)
    values = {}
    for register in SLOT_REGISTERS:
        try:
            cells = conn.read_register_cells(REGISTER_PREFIX + register)
        except SwitchError as error:
            if "UNIMPLEMENTED" in str(error):
                raise RegisterReadUnsupported(
                    f"switch {name} cannot read registers over P4Runtime (bmv2's "
                    "simple_switch_grpc does not implement them; its Thrift port does): "
                    "missing ranks cannot be named; the workers' errors give job, slot and "
                    "chunk") from None
            raise
        values[register] = cells
    return {((cell - first) // 2, cell % 2): {r: values[r].get(cell, 0) for r in SLOT_REGISTERS}
            for cell in wanted}
