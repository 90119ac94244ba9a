"""Repeated runs summarized: median/spread, link-rate bounds, speedup and the Markdown table."""

import pytest

from experiments import aggregate
from jobs.results import Run


def make_run(mode, seconds, workers=4, elements=64_000, correct=True, repeat=0, bw=5.0,
             wire=None, window=32, collective="allreduce", received=None):
    return Run(mode=mode, topo="star:4", switch="builtin", job=1, workers=workers,
               elements=elements, dtype="int32", window=window if mode == "ina" else None,
               seconds=seconds if correct else None, melem_per_s=None, gbit_per_s=None,
               correct=correct, max_abs_err=0.0, bytes_per_host=None,
               bytes_received_per_host=None, packets_per_host=None, retransmissions=0,
               repeat=repeat, bw_mbit=bw, k=64, wire_bytes_per_host=wire,
               wire_bytes_received_per_host=received, collective=collective)


def test_spread_median_min_max_quartiles():
    s = aggregate.spread([4.0, 1.0, 3.0, 2.0, 10.0])
    assert (s.runs, s.median, s.minimum, s.maximum) == (5, 3.0, 1.0, 10.0)
    assert (s.q1, s.q3) == (2.0, 4.0)
    even = aggregate.spread([1.0, 2.0, 3.0, 4.0])
    assert even.median == 2.5 and (even.q1, even.q3) == (1.75, 3.25)
    assert aggregate.spread([]) is None


def test_bounds():
    # 64000 int32 elements = 256000 bytes = 2.048 Mbit; at 1 Mbit/s: 2.048 s of payload
    assert aggregate.payload_bound_s("ina", 64_000, 4, 1.0) == pytest.approx(2.048)
    assert aggregate.payload_bound_s("ring", 64_000, 4, 1.0) == pytest.approx(2.048 * 1.5)
    # ina: 1000 packets of 256 value bytes + 58 header bytes
    assert aggregate.wire_bound_s("ina", 64_000, 4, 1.0) == pytest.approx(1000 * 314 * 8 / 1e6)
    # a partial last packet still carries K values
    assert aggregate.wire_bound_s("ina", 63_999, 4, 1.0) == pytest.approx(1000 * 314 * 8 / 1e6)
    # float32: plus min(W, chunks) exponent-only rounds
    assert aggregate.wire_bound_s("ina", 64_000, 4, 1.0, dtype="float32", window=32) == \
        pytest.approx(1032 * 314 * 8 / 1e6)
    assert aggregate.wire_bound_s("ring", 64_000, 4, 1.0) == \
        pytest.approx(2.048 * 1.5 * 1514 / 1448)
    assert [aggregate.ideal_speedup(p) for p in (2, 4, 8)] == [1.0, 1.5, 1.75]


def test_summary_groups_points_and_modes():
    runs = [make_run("ina", 3.0, repeat=0, wire=300), make_run("ring", 6.0, repeat=0, wire=500),
            make_run("ina", 1.0, repeat=1, wire=100), make_run("ring", 5.0, repeat=1, wire=400),
            make_run("ina", 2.0, repeat=2, wire=200), make_run("ring", 0, repeat=2,
                                                                 correct=False),
            make_run("ina", 9.0, workers=2)]
    rows = aggregate.summarize_runs(runs)
    assert [(r["mode"], r["workers"], r["runs"], r["correct_runs"]) for r in rows] == \
        [("ina", 4, 3, 3), ("ring", 4, 3, 2), ("ina", 2, 1, 1)]
    ina, ring, single = rows
    assert (ina["median_s"], ina["min_s"], ina["max_s"]) == (2.0, 1.0, 3.0)
    assert (ring["median_s"], ring["min_s"], ring["max_s"]) == (5.5, 5.0, 6.0)
    assert ina["ina_speedup"] is None and ring["ina_speedup"] == 5.5 / 2.0
    assert single["ina_speedup"] is None and single["median_s"] == 9.0
    assert ina["wire_bytes_per_host"] == 200 and ring["wire_bytes_per_host"] == 450
    assert ina["bound_s"] == pytest.approx(1000 * 314 * 8 / 5e6)
    assert ina["of_bound"] == pytest.approx(2.0 / ina["bound_s"])


def test_summary_without_correct_runs_or_link_rate():
    (row,) = aggregate.summarize_runs([make_run("ring", 0, correct=False, bw=None)])
    assert row["median_s"] is None and row["bound_s"] is None and row["of_bound"] is None
    assert row["correct_runs"] == 0


def test_markdown_table_rows():
    runs = [make_run("ring", 6.0), make_run("ina", 2.0, wire=2_512_000),
            make_run("ina", 4.0, repeat=1, wire=2_512_000), make_run("ring", 5.0, repeat=1)]
    lines = aggregate.markdown_table(aggregate.summarize_runs(runs)).splitlines()
    assert lines[0] == ("| topology | collective | mode | workers | elements | dtype | "
                        "link Mbit/s | correct/runs | median s | min–max s | link bound s | "
                        "median/bound | fabric bound s | median/fabric bound | "
                        "formula MB sent/host | wire MB sent/host | "
                        "wire MB received/host | steps | ina speedup | links allow | paced by |")
    assert lines[1] == ("|---|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
                        "--:|--:|--:|--:|")
    # formula: ina sends the vector (256000 bytes) in one step, the ring 2(p-1)/p of it in
    # 2(p-1) steps; the links allow the bounds' ratio, 0.64/0.50
    assert lines[2] == ("| star:4 | allreduce | ina | 4 | 64000 | int32 | 5 | 2/2 | 3.00 | "
                        "2.00–4.00 | 0.50 | 5.97 | - | - | 0.256 | 2.512 | - | 1 | - | - | - |")
    assert lines[3] == ("| star:4 | allreduce | ring | 4 | 64000 | int32 | 5 | 2/2 | 5.50 | "
                        "5.00–6.00 | 0.64 | 8.56 | - | - | 0.384 | - | - | 6 | 1.83× | 1.28× "
                        "| - |")
    assert len(lines) == 4


def test_a_fabric_bound_above_the_host_link_bound_is_what_the_links_allow():
    """With a fabric bound (experiments/fabric_bound.py) larger than the host-link one, a host
    mode's "links allow" and "paced by" count it, and the summary line says both."""
    runs = [make_run("ina", 0.52), make_run("butterfly", 2.10)]
    for run in runs:
        run.machine_busy_cores, run.worker_cpu_seconds = 0.5, 0.1
    seen = []

    def fabric(point, mode):
        seen.append((point["topo"], mode))
        return 2.0 if mode == "butterfly" else None
    rows = {row["mode"]: row for row in aggregate.summarize_runs(runs, fabric)}
    butterfly = rows["butterfly"]
    assert butterfly["fabric_bound_s"] == 2.0 and butterfly["of_fabric_bound"] == 2.10 / 2.0
    assert butterfly["allowed_speedup"] == 2.0 / rows["ina"]["bound_s"]
    assert butterfly["paced_by"] == "links"       # 1.05x the fabric's bound
    assert rows["ina"]["paced_by"] == "links"     # 0.52 s against its 0.50 s
    assert ("star:4", "butterfly") in seen
    (line,) = aggregate.allowed_lines(list(rows.values()))
    allowed = 2.0 / rows["ina"]["bound_s"]
    assert line.startswith("star:4, 4 workers, 64000 int32, 5 Mbit/s: ina is 4.04× faster "
                           f"than butterfly; the links alone allow {allowed:.2f}× (butterfly "
                           "at 1.05× its bound (the fabric's; ")
    assert line.endswith("ina at 1.04× its own)")


def test_what_sets_the_pace_off_the_links_is_the_largest_cpu_user():
    from jobs import cpu
    assert cpu.paced_by(0.5, 0.9, 0.2, busy=1.8, available=2) == "cpu: switches"
    assert cpu.paced_by(0.5, 0.1, 0.7, busy=1.7, available=2) == "cpu: kernel"
    assert cpu.paced_by(0.5, 0.1, 0.2, busy=0.8, available=2) == "latency"
    assert cpu.paced_by(0.5, 0.1, 0.2, busy=0.8, available=2, retransmissions=40) == "losses"


def test_collectives_are_points_of_their_own_with_their_bounds():
    """A reduce-scatter and an allreduce of the ring at the same size are two rows, each
    with its own formula bytes ((p-1)/p·V against 2(p-1)/p·V), steps and bound."""
    runs = [make_run("ring", 3.0, collective="reduce-scatter", received=200_000),
            make_run("ring", 6.0), make_run("binomial-tree", 4.0, collective="broadcast")]
    rows = {row["collective"]: row for row in aggregate.summarize_runs(runs)}
    scatter, allreduce, broadcast = (rows["reduce-scatter"], rows["allreduce"],
                                     rows["broadcast"])
    assert scatter["formula_bytes_per_host"] == 256_000 * 3 / 4
    assert allreduce["formula_bytes_per_host"] == 256_000 * 2 * 3 / 4
    assert (scatter["steps"], allreduce["steps"], broadcast["steps"]) == (3, 6, 2)
    # binomial broadcast on 4: rank 0 sends to 2 then 1, rank 2 to 3: 3 vectors over 4 hosts
    assert broadcast["formula_bytes_per_host"] == 256_000 * 3 / 4
    assert scatter["payload_bound_s"] == pytest.approx(2.048 * 0.75 / 5)
    assert broadcast["payload_bound_s"] == pytest.approx(2.048 * 2 / 5)
    assert scatter["wire_bytes_received_per_host"] == 200_000
    assert scatter["ina_speedup"] is None


def test_cpu_bound_is_judged_by_the_cores_of_the_machine_that_ran():
    """1.8 busy cores is CPU-bound on the 2-core machine the runs recorded, not on a
    16-core one that reads their results later."""
    runs = [make_run("ring", 5.5), make_run("ring", 5.5)]
    for run in runs:
        run.machine_busy_cores, run.other_cpu_seconds, run.machine_cores = 1.8, 3.0, 2
    (row,) = aggregate.summarize_runs(runs)
    assert row["paced_by"] == "cpu: kernel"
    for run in runs:
        run.machine_cores = 16
    (row,) = aggregate.summarize_runs(runs)
    assert row["paced_by"] == "latency"
