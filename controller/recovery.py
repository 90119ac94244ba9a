"""Reprogram a switch whose process was restarted, and what that means for running jobs.

`recover_switch(manager, name)` is the recovery hook topologies' switch supervisor calls
after it restarted a switch process (topologies/supervisor.py, fabric/running.py): the
new process has no pipeline, no entries and fresh (zero) registers.  It

1. opens a new P4Runtime session to the switch (new stream and primary arbitration, same
   device id, address, election id and, on bmv2, Thrift port for its registers) and puts it in `manager.connections` (the dict the
   manager and topologies' Fabric share) in place of the dead one, which it closes;
2. pushes the manager's pipeline (or, without one, adopts the switch's P4Info);
3. writes the switch's /32 routes (its ECMP members, groups and ipv4_routes entries: the
   manager's own, AggregationManager.routes_on) and, for every job the manager has
   installed, the job's multicast group and table entries on that switch — derived from the
   job's plan by the very function the manager installs with (its design's installer's
   `writes`; ours: entries.job_entries).

A job of another design gets its entries back the same way, with its switch state as the
restart left it (zero); only ours has a protocol that completes across it (below), so a
design without one (`Design.survives_restart` False: SwitchML) is refused a run with
switch restarts before the network starts (contracts/designs/base.py).

New generation: every job whose tree has the restarted switch moves to a new generation
(`Planner.renew_generation`): the restarted switch gets the job's entries with it, and every
other switch of the tree has its `agg_jobs` entry modified to it, so that on every switch of
the tree every slot cell of the old generation counts as empty and no partial state from
before the restart can count (a leaf holding a round's result for workers that already have
it would otherwise never send that round up again).  A switch of the tree that cannot be
written at that moment (down itself) is skipped: its own recovery installs the plan's then
generation.  `missing_ranks` compares owners with the plan's generation and stays right.

What happens to a job that was running (docs/protocol.md's round rules; a worker sends a
slot's next round only after it has the result of the current one, and retransmits the
current one until then):

Since the new generation and the workers' re-sending of a slot's previous round
(hosts/ina/engine.py, REDO_AFTER; docs/protocol.md, "Switch restarts") a running job completes
exactly, also when the restart cut the multicast of a slot's last round short (the workers
that got it wait in the slot's closing round): a worker that already has a round's
result sends that round again with its stalled retransmissions, so the round the others miss is collected in the new generation from every
contribution, and a re-sent round nobody needs is superseded by the next one
(p4src/agg_slot_state.p4).  The two outcomes below were those before that change; the first
still describes a restart no worker noticed, the second can no longer happen while the
manager lives.

* Exact completion.  For every slot, if no worker below the restarted switch had received
  the result of the round it holds, all of them retransmit it and the restarted switch
  rebuilds the round from scratch.  A non-root switch then sends its partial up again; the
  parent either still collects that round (the partial is a duplicate if it had it — the
  parent's sum is unchanged) or has completed it and answers with the stored result
  (`partial_resent`/`result_resent`), which the restarted switch stores and multicasts.  A
  restarted root gets every child's contribution again (workers retransmit; child switches
  resend their completed partials up).  The job completes with the exact sums.
* Clear failure.  If the restarted switch had delivered the result of a round to some of
  the workers (or child switches) below it but not to others — it died between the copies
  of a multicast, or a non-root died between receiving its parent's result and passing it
  on — the ones that got it have moved on and never send that round again, so the
  restarted switch collects it from the others and waits for them forever.  The round can
  never complete with a subset: the contributor bitmap admits each contributor once and a
  round completes only at the full fan-in, so no wrong sum is ever produced.  The workers
  that wait for that slot exhaust their retransmissions and exit 1 with "job J: no result
  from the switch for slot S (chunk C) ..."; a worker whose remaining rounds all completed
  before the stall may still finish with its exact result.  The job as a whole failed.

Either way there is no wrong sum and no hang longer than the workers' retransmission budget
(their --max-retries and --max-timeout-ms) after the restart; a switch that comes back
more slowly than that budget fails the job the same way.  `describe_job_outcome` gives the
line jobs/runner.py prints for a job that ran while switches restarted.

A recovery holds `manager.lock`, which start_job and stop_job hold too, so a job started or
stopped from another thread is installed on the restarted switch exactly once.
"""

from __future__ import annotations

from .client import SwitchConnection
from .entries import JOBS_TABLE, job_entries
from .manager import install_routes


class RecoveryError(RuntimeError):
    """A restarted switch could not be reprogrammed (one line naming the switch)."""


def recover_switch(manager, name: str, timeout: float = 10.0) -> SwitchConnection:
    """Reconnect to the restarted switch `name` and re-install everything the manager had
    on it (see the module docstring); returns the new connection."""
    if name not in manager.connections:
        raise RecoveryError(f"switch {name}: not managed by this controller")
    with manager.lock:      # no job starts or stops half-way through the re-install
        return _reinstall(manager, name, timeout)


def _reinstall(manager, name: str, timeout: float) -> SwitchConnection:
    try:
        connection = reconnect(manager.connections[name], timeout)
        manager.connections[name] = connection     # later installs and reads use it
        reinstall(manager, name, connection)
    except RecoveryError:
        raise
    except Exception as e:      # gRPC/P4Runtime errors alike: one line naming the switch
        text = " ".join(str(e).split())
        raise RecoveryError(text if name in text else f"switch {name}: {text}") from None
    return connection


def reinstall(manager, name: str, connection) -> None:
    """Program the fresh switch `name` through `connection` (already manager.connections[name])
    and move the jobs on it to a new generation (module docstring); errors propagate."""
    if manager.pipeline is not None:
        connection.set_pipeline(manager.pipeline)
    else:
        connection.fetch_p4info()
    install_routes(connection, manager.routes_on(name))
    # our jobs on it move to a new generation; another design's are written as they were
    renewed = [job_id for job_id, plan in sorted(manager.planner.jobs.items())
               if name in plan.switches]
    for job_id in renewed:
        manager.planner.renew_generation(job_id)
    for job_id in sorted(manager.jobs()):
        entries, groups = switch_job_entries(manager, job_id, name)
        for group in groups:
            connection.insert_multicast_group(group)
        # the job's agg_jobs entry last: until it is in, the switch ignores the job's
        # packets (unknown_job) rather than take one it cannot yet answer or address
        connection.insert_entries(sorted(entries, key=lambda e: e.table == JOBS_TABLE))
    for job_id in renewed:
        renew_on_tree(manager, job_id, skip=name)


def renew_on_tree(manager, job_id: int, skip: str) -> list:
    """Write job `job_id`'s (new) generation into the agg_jobs entry of every switch of its
    tree but `skip`; a switch that cannot be written (down, its recovery to come) is left to
    its own recovery.  Returns the switches written."""
    plan = manager.planner.jobs[job_id]
    entries, _ = job_entries(plan, manager.spec)
    written = []
    for entry in entries:
        if entry.table != JOBS_TABLE or entry.switch == skip:
            continue
        try:
            manager.connections[entry.switch].modify_entries([entry])
            written.append(entry.switch)
        except Exception:      # that switch is restarting: its recovery installs the plan
            continue
    return written


def reconnect(old: SwitchConnection, timeout: float) -> SwitchConnection:
    """A new primary session with the switch `old` talked to; `old` is closed."""
    election_id = (old.election_id.high << 64) | old.election_id.low
    fresh = SwitchConnection(old.name, old.address, old.device_id, election_id,
                             thrift_port=old.thrift_port)
    fresh.connect(timeout)
    old.close()
    return fresh


def switch_job_entries(manager, job_id: int, name: str) -> tuple[list, list]:
    """(table entries, multicast groups) of job `job_id` on switch `name` ([] if the job's
    tree does not use it), as the installer of the job's design writes them."""
    plan = manager.jobs()[job_id]
    entries, groups = manager.installer_of(job_id).writes(plan, manager.spec)
    return ([e for e in entries if e.switch == name], [g for g in groups if g.switch == name])


def restarts_during(events: list, started: float, finished: float, switches) -> list:
    """The restart events (topologies.supervisor.RestartEvent) of `switches` noticed between
    `started` and `finished` (time.monotonic())."""
    switches = set(switches)
    return [e for e in events if e.switch in switches and started <= e.died_at <= finished]


def describe_job_outcome(job_id: int, events: list, failure: str | None) -> str:
    """One line for a job that ran while switches restarted (failure: the first failed
    worker's error line, "error: " prefix optional; None if every worker was correct), e.g.
    "switch s1 restarted during job 3; job failed: job 3: no result from the switch for slot
    5 (chunk 37) ..." or "switch s1 restarted during job 3; job completed exactly"."""
    names = ", ".join(dict.fromkeys(e.switch for e in events))
    label = "switch" if len({e.switch for e in events}) == 1 else "switches"
    not_recovered = [e for e in events if not e.ok]
    verb = "restarted" if all(e.restarted_at is not None for e in events) else "died"
    head = f"{label} {names} {verb} during job {job_id}"
    if not_recovered:
        head += f" ({'; '.join(e.describe() for e in not_recovered)})"
    if failure:
        reason = failure[len("error: "):] if failure.startswith("error: ") else failure
        return f"{head}; job failed: {reason}"
    return f"{head}; job completed exactly"
