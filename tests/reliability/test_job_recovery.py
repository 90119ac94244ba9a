"""Job-level recovery through the real program (in-process p4switch, virtual time): a switch
of a job's tree restarts with empty registers in the middle of a multicast -- some workers
(or a leaf's subtree) got a round's result, the others never will from the old process --
and the controller's recovery (controller/recovery.reinstall) re-installs it and moves the job
to a new generation on the whole tree.  The workers' re-sent previous rounds (hosts/ina/engine.py,
REDO_AFTER) and the superseding rule (p4src/agg_slot_state.p4) let every job complete
exactly: any switch of the tree, one switch twice, two switches at once, int32 and float32.
With the re-sending switched off, the same cut multicast stalls the job (the test can fail).
"""

import numpy as np
import pytest

from agg_network import LossyNetwork, P4Fabric, float_inputs, int_inputs, p4_engines
from controller.recovery import reinstall
from hosts.ina import engine as engine_module
from hosts.ina.engine import AggregationStalled
from p4src_harness import SwitchApiConnection, program

ELEMENTS, WINDOW = 400, 3


class RestartingFabric(P4Fabric):
    """P4Fabric whose switches restart: `kills` = [(receive call, [switch, ...])]; at the first
    call at or after that count whose packet produced results for two or more workers, only
    the first half of those results is delivered and each listed switch is replaced by a fresh
    one (registers, tables and groups empty; frames between switches lost) and recovered."""

    def __init__(self, topology, kills, **kwargs):
        super().__init__(topology, job_id=7, window=WINDOW, **kwargs)
        self.kills = list(kills)
        self.calls = 0
        self.restarts = []
        self.generations = [self.plan.generation]

    def receive(self, rank, payload):
        self.calls += 1
        delivered = super().receive(rank, payload)
        if self.kills and self.kills[0][0] == "last":
            due = len(delivered) >= 2 and self._last_real_round(delivered[0][1])
        else:
            due = self.kills and self.calls >= self.kills[0][0] and len(delivered) >= 2
        if due:
            _, victims = self.kills.pop(0)
            for victim in victims:
                self.restart(victim)
            return delivered[:len(delivered) // 2]
        return delivered

    def _last_real_round(self, result: bytes) -> bool:
        """A result of some slot's last round of the int32 vector (chunk offsets of the last
        window of chunks)."""
        chunks = -(-ELEMENTS // self.k)
        offset = int.from_bytes(result[8:12], "big")
        return (chunks - WINDOW) * self.k <= offset < chunks * self.k

    def restart(self, name):
        from p4switch import Switch
        compiled = program(self.k, self.manager.planner.allocators[name].capacity)
        fresh = Switch(compiled)
        self.switches[name] = fresh
        self.held_back = []
        connection = SwitchApiConnection(fresh, compiled.p4info)
        self.manager.connections[name] = connection
        reinstall(self.manager, name, connection)
        self.restarts.append(name)
        self.generations.append(self.plan.generation)


def run(topology, kills, dtype="int32", loss=0.0, seed=3, closing_rounds=True):
    fabric = RestartingFabric(topology, kills)
    make = int_inputs if dtype == "int32" else float_inputs
    inputs = make(len(fabric.hosts), ELEMENTS, seed=seed)
    engines = p4_engines(fabric, inputs, window=WINDOW, max_retries=40,
                         closing_rounds=closing_rounds)
    LossyNetwork(engines, fabric, seed=seed, loss=loss, reorder=loss > 0).run()
    return fabric, engines, inputs


def assert_exact(engines, inputs, dtype):
    results = [e.result() for e in engines]
    if dtype == "int32":
        expected = np.sum(inputs, axis=0, dtype=np.int64)
        for r in results:
            assert r.astype(np.int64).tolist() == expected.tolist()
    else:
        reference = np.sum([x.astype(np.float64) for x in inputs], axis=0)
        for r, e in zip(results, engines):
            assert np.array_equal(r, results[0])
            assert np.all(np.abs(r.astype(np.float64) - reference) <= e.schedule.error_bound())


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("topology, kills", [
    ("star:4", [(60, ["s1"])]),
    ("leafspine:2,1,2", [(60, ["s1"])]),                      # a leaf
    ("leafspine:2,1,2", [(60, ["s3"])]),                      # the spine (root)
    ("leafspine:2,1,2", [(40, ["s1"]), (120, ["s1"])]),       # one switch twice
    ("leafspine:2,1,2", [(60, ["s1", "s3"])]),                # two switches at once
    ("tree:3,2", [(60, ["s2"]), (140, ["s1"])]),              # middle, then root
])
def test_a_job_completes_exactly_whatever_switch_restarts(topology, kills, dtype):
    fabric, engines, inputs = run(topology, kills, dtype)
    expected = [name for _, names in kills for name in names]
    assert fabric.restarts == expected, "a restart did not happen mid-job"
    # one new generation per restart, never an old one again
    assert len(set(fabric.generations)) == len(expected) + 1
    assert all(e.done for e in engines)
    assert_exact(engines, inputs, dtype)
    # the cut multicast left workers behind: the others re-sent rounds they had results for
    assert sum(e.stats.redone_rounds for e in engines) > 0


def test_recovery_with_loss_on_the_links():
    fabric, engines, inputs = run("leafspine:2,1,2", [(50, ["s3"]), (150, ["s2"])], loss=0.1)
    assert fabric.restarts == ["s3", "s2"]
    assert_exact(engines, inputs, "int32")


def test_without_re_sent_rounds_the_cut_multicast_stalls(monkeypatch):
    monkeypatch.setattr(engine_module, "REDO_AFTER", 10 ** 9)
    with pytest.raises(AggregationStalled, match="no result from the switch"):
        run("star:4", [(60, ["s1"])])


@pytest.mark.parametrize("topology, victim", [("star:4", "s1"), ("leafspine:2,1,2", "s1"),
                                              ("leafspine:2,1,2", "s3")])
def test_a_restart_that_cuts_a_last_rounds_multicast_short_still_completes(topology, victim):
    """The workers that got a slot's last result run its closing round, whose re-sent previous
    round lets the restarted tree give the others that result (hosts/ina/engine.py)."""
    fabric, engines, inputs = run(topology, [("last", [victim])])
    assert fabric.restarts == [victim]
    assert all(e.done for e in engines)
    assert_exact(engines, inputs, "int32")
    assert sum(e.stats.redone_rounds for e in engines) > 0


def test_without_closing_rounds_a_cut_last_multicast_stalls():
    with pytest.raises(AggregationStalled, match="no result from the switch"):
        run("star:4", [("last", ["s1"])], closing_rounds=False)
