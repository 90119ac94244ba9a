"""Workers that die or never start: the others stop with an error naming job, slot and chunk,
and the controller names the missing ranks from the switches' slot bitmaps.

The jobs run through the real p4src program (in-process p4switch, P4Fabric); the controller
reads the registers through the same connection interface it uses over P4Runtime
(tests/controller/test_controller_p4runtime.py reads them over gRPC).
"""

import pytest

from agg_network import LossyNetwork, P4Fabric, int_inputs, p4_engines
from controller import MissingReport, RegisterReadUnsupported, SwitchError, missing_ranks
from hosts.ina.engine import AggregationStalled


class AbsentWorker:
    """TEST DOUBLE of a worker process that never started: sends and answers nothing."""

    done = False
    stats = None

    def start(self, now):
        return []

    def on_packet(self, data, now):
        return []

    def on_timer(self, now):
        return []

    def next_deadline(self):
        return None


class CrashingWorker(AbsentWorker):
    """A real engine that dies (falls silent) once it has finished `rounds` rounds."""

    def __init__(self, engine, rounds):
        self.engine, self.rounds = engine, rounds

    def _alive(self):
        return self.engine.progress[0] < self.rounds

    def start(self, now):
        return self.engine.start(now)

    def on_packet(self, data, now):
        return self.engine.on_packet(data, now) if self._alive() else []

    def on_timer(self, now):
        return self.engine.on_timer(now) if self._alive() else []

    def next_deadline(self):
        return self.engine.next_deadline() if self._alive() else None


def run_until_stalled(topology, absent=(), crashing=(), faults=None):
    fabric = P4Fabric(topology, job_id=7, window=4)
    inputs = int_inputs(len(fabric.hosts), 200, seed=3)
    engines = p4_engines(fabric, inputs, window=4, max_retries=4)
    for rank in absent:
        engines[rank] = AbsentWorker()
    for rank in crashing:
        engines[rank] = CrashingWorker(engines[rank], rounds=6)
    with pytest.raises(AggregationStalled) as stalled:
        LossyNetwork(engines, fabric, seed=2, **(faults or {})).run()
    return fabric, str(stalled.value)


@pytest.mark.parametrize("topology, absent, crashing, expected", [
    ("star:4", [2], [], "job 7: rank 2 missing (h3)"),
    ("tree:3,2", [], [2, 5], "job 7: ranks 2, 5 missing (h3, h6)"),
    ("tree:3,2", [7], [], "job 7: rank 7 missing (h8)"),
    # both hosts of the second leaf: the spine waits for a leaf that holds no round at all
    ("leafspine:2,1,2", [2, 3], [], "job 7: ranks 2, 3 missing (h3, h4)"),
    ("leafspine:2,1,2", [], [0], "job 7: rank 0 missing (h1)"),
])
def test_the_controller_names_the_missing_ranks(topology, absent, crashing, expected):
    fabric, error = run_until_stalled(topology, absent, crashing)
    assert error.startswith("job 7: no result from the switch for slot ")
    assert "(chunk " in error and "a worker of the job may have died or never started" in error
    report = fabric.manager.missing_ranks(7)
    assert report.to_text() == expected
    assert report.stuck and all(r.chunk_offset % 8 == 0 for r in report.stuck)
    # the same through the module function, and the job's slots can be released afterwards
    assert missing_ranks(fabric.plan, fabric.manager.connections).missing_ranks == \
        report.missing_ranks
    fabric.manager.stop_job(7)
    assert fabric.manager.jobs() == {}


def test_missing_ranks_with_loss_and_late_packets():
    fabric, _ = run_until_stalled("tree:3,2", absent=[6], faults=dict(
        loss=0.1, duplicate=0.1, late=0.2, reorder=True))
    assert fabric.manager.missing_ranks(7).missing_ranks == [6]


def test_a_job_whose_workers_are_all_absent_has_no_stuck_slot():
    fabric = P4Fabric("star:2", job_id=7, window=2)
    report = fabric.manager.missing_ranks(7)
    assert report == MissingReport(7, [], [], [])
    assert report.to_text() == \
        "job 7: no rank missing (no slot is waiting for a contribution)"


def test_bmv2_without_register_reads_is_reported_as_unsupported():
    fabric = P4Fabric("star:2", job_id=7, window=2)

    class Bmv2Like:
        """TEST DOUBLE: a connection whose register Read fails as bmv2's does."""

        def read_register_cells(self, name):
            raise SwitchError("switch s1: Read failed: UNIMPLEMENTED: Register reads are not "
                              "supported yet")

    with pytest.raises(RegisterReadUnsupported, match="switch s1 cannot read registers over "
                                                      "P4Runtime"):
        missing_ranks(fabric.plan, {"s1": Bmv2Like()})


def test_missing_ranks_of_a_job_that_is_not_running_is_a_plan_error():
    fabric = P4Fabric("star:2", job_id=7, window=2)
    from controller import PlanError
    with pytest.raises(PlanError, match="job 8 is not running"):
        fabric.manager.missing_ranks(8)


def test_worker_processes_stop_with_an_error_when_a_rank_never_starts(tmp_path):
    """Ranks 0 and 1 of a 3-worker job run as processes over loopback UDP through p4src;
    rank 2 never starts.  Both exit 1 after their retries with one line naming job, slot and
    chunk; the controller then names rank 2."""
    import os

    from agg_network import UdpSwitchBridge, run_workers, worker_command
    from contracts.wire import worker_port
    job = 5000 + os.getpid() % 20000
    fabric = P4Fabric("star:3", job_id=job, window=4)
    bridge = UdpSwitchBridge(fabric, 3, worker_port(job))
    bridge.start()
    try:
        outcomes = run_workers([worker_command(job, rank, 3, bridge.address, "--elements", "100",
                                               "--seed", "1", "--max-retries", "3",
                                               "--contributor", str(fabric.contributor(rank)),
                                               k=8)
                                for rank in (0, 1)])
    finally:
        bridge.stop()
    for status, stderr in outcomes:
        lines = [line for line in stderr.splitlines() if " rounds (" not in line]
        assert status == 1 and len(lines) == 1, stderr
        assert lines[0].startswith(f"error: job {job}: no result from the switch for slot ")
        assert "(chunk " in lines[0]
    assert fabric.manager.missing_ranks(job).to_text() == f"job {job}: rank 2 missing (h3)"
