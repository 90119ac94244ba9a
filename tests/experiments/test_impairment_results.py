"""The link impairment counters in compare's results: a run's share (after minus before,
summed over switches), the experiment's totals per switch and overall in results.json, and
a Run's counters surviving a write/load round trip."""

import json

from jobs import results
from jobs.runner import counter_difference, impairment_totals


class FakeNetwork:
    """Stands in for topologies.net.Network: only its impairment counters are read."""

    def __init__(self, per_switch):
        self.per_switch = per_switch

    def impairment_counters(self, written_after=None):
        return self.per_switch


def counters(dropped, duplicated=0, reordered=0, delayed=0):
    return {"dropped": dropped, "duplicated": duplicated, "reordered": reordered,
            "delayed": delayed}


def test_run_share_is_after_minus_before_over_switches():
    before = {"s1": counters(3, 1), "s2": counters(0, 0, 2)}
    after = {"s1": counters(10, 4, 1), "s2": counters(5, 0, 6, 7)}
    assert counter_difference(after, before) == counters(12, 3, 5, 7)
    assert counter_difference({}, {}) == {}


def test_totals_per_switch_and_overall():
    network = FakeNetwork({"s1": counters(1, 2, 3, 4), "s2": counters(10, 20, 30, 40)})
    assert impairment_totals(network) == {
        "switches": {"s1": counters(1, 2, 3, 4), "s2": counters(10, 20, 30, 40)},
        "total": counters(11, 22, 33, 44)}
    assert impairment_totals(FakeNetwork({})) == {}


def test_results_json_keeps_impairments(tmp_path):
    run = results.summarize("ina", "star:2", "builtin", 1, 100, "int32", 32, [
        results.WorkerOutcome("h1", 0, 0, {"rank": 0, "seconds": 1.0, "correct": True,
                                           "max_abs_err": 0, "retransmissions": 4})],
        impairments=counters(5, 1))
    totals = {"switches": {"s1": counters(6, 1)}, "total": counters(6, 1)}
    results.write_results(str(tmp_path), [run], {"topo": "star:2"}, impairments=totals)
    (loaded,) = results.load_runs(str(tmp_path))
    assert loaded.impairments == counters(5, 1) and loaded.retransmissions == 4
    assert json.loads((tmp_path / "results.json").read_text())["impairments"] == totals
