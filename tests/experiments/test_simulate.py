"""The SimGrid simulation (experiments/simulate.py, simulated.py; simulation/run.py, ina.py,
host_algorithms.py):
small runs against closed-form link-rate times and byte counts, the switch rules of
docs/protocol.md on single packets, loss recovery, and one-line errors for bad input.

Closed forms used below, with B the link rate in bytes/s, K values per packet and
F = 4K + 58 the frame of one aggregation packet (docs/protocol.md):
* ina on one switch (star:p): C = ceil(E/K) packets per worker and a closing round per slot
  used (min(W, C) more: hosts/ina/engine.py), each crossing the host's link up and its result
  down, store and forward at the switch: (C + min(W, C) + 1) F / B; every worker sends
  (C + min(W, C)) (16 + 4K) payload bytes.
* ring: 2(p-1) steps of E/p elements in TCP segments of 1448 bytes (1514-byte frames).
"""

import json
import math
import os
import subprocess
import sys

import pytest

from experiments.simulated import simulate
from simulation.ina import Packet, Shape, SimWorker, SwitchCells, expected_sum
from simulation.run import Request, SimulationError, choose_train
from controller.planner import Planner
from experiments import __main__ as experiments_command
from experiments.calibrate import comparison_rows, format_rows
from experiments.aggregate import formula_bytes_per_host, wire_bound_s
from jobs.results import load_runs
from hosts.algorithms import ALGORITHMS
from topologies.spec import parse_topology

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def frame_time(k: int, mbit: float) -> float:
    return (4 * k + 58) * 8 / (mbit * 1e6)


def test_ina_one_switch_matches_the_store_and_forward_link_time():
    run, detail = simulate(Request("star:4", "ina", 4, 256 * 100, 10.0, k=256))  # W = 32
    assert run.correct and run.retransmissions == 0
    assert run.seconds == pytest.approx((100 + 32 + 1) * frame_time(256, 10.0), rel=1e-6)
    assert run.bytes_per_host == 132 * (16 + 4 * 256)
    assert run.wire_bytes_per_host == 132 * (58 + 4 * 256)
    assert run.packets_per_host == 132
    assert detail["train"] == 1 and detail["switch_events"]["completed"] == 132
    assert detail["switch_events"]["added"] == 4 * 132
    assert detail["closings_unanswered"] == 0


def test_a_vector_shorter_than_the_window_closes_each_slot_it_used():
    # 5 chunks, W = 32: slots 0-4 run rounds 0-4, then their closing rounds 32-36
    shape = Shape(64 * 5, 64, 32)
    assert shape.rounds == 10 and shape.span == 37
    assert [q for q in range(40) if shape.has_round(q)] == [0, 1, 2, 3, 4, 32, 33, 34, 35, 36]
    assert [shape.slot_of(q) for q in (4, 36)] == [(4, 0), (4, 1)]
    run, detail = simulate(Request("star:2", "ina", 2, 64 * 5, 10.0, k=64))
    assert run.correct and run.packets_per_host == 10
    assert detail["switch_events"]["completed"] == 10


def test_ina_two_levels_adds_a_store_and_forward_per_hop():
    # leafspine:2,1,4: host -> leaf -> spine -> leaf -> host, 4 hops for the first packet,
    # then one packet time each: (C + W + 3) F / B
    run, detail = simulate(Request("leafspine:2,1,4", "ina", 8, 64 * 50, 1.0, k=64))
    assert run.correct
    assert run.seconds == pytest.approx((50 + 32 + 3) * frame_time(64, 1.0), rel=1e-6)
    assert detail["tree_switches"] == 3 and detail["switch_events"]["sent_up"] == 2 * 82


def test_ina_window_of_one_pays_the_round_trip_per_packet():
    # 20 rounds and the closing one
    run, _ = simulate(Request("star:2", "ina", 2, 64 * 20, 10.0, k=64, window=1))
    assert run.seconds == pytest.approx(21 * 2 * frame_time(64, 10.0), rel=1e-6)


def test_ring_matches_its_bound_and_formula_bytes():
    p, elements = 4, 1448 * 100          # segments of 36,200 elements
    run, _ = simulate(Request("star:4", "ring", p, elements, 10.0))
    segment_bytes = elements // p * 4
    assert run.correct
    assert run.bytes_per_host == 2 * (p - 1) * segment_bytes
    # segments go in chunks of 16,384 elements, each chunk in 1448-byte TCP segments
    chunk_bytes = [16384 * 4, 16384 * 4, segment_bytes - 2 * 16384 * 4]
    wire = 2 * (p - 1) * sum(b + math.ceil(b / 1448) * 66 for b in chunk_bytes)
    assert run.wire_bytes_per_host == wire
    bound = wire * 8 / 10e6
    assert bound * (1 - 1e-9) <= run.seconds <= bound * 1.05


def test_butterfly_over_one_spine_shares_the_uplink():
    # leafspine:2,1,4, p = 8: steps 1 and 2 stay in a leaf; in step 3 the four ranks of a
    # leaf exchange with the other leaf through its one uplink: 4 vectors share it
    elements = 1448 * 10
    run, _ = simulate(Request("leafspine:2,1,4", "butterfly", 8, elements, 10.0))
    vector = elements * 4 + math.ceil(elements * 4 / 1448) * 66
    assert run.bytes_per_host == 3 * elements * 4
    assert run.seconds == pytest.approx((1 + 1 + 4) * vector * 8 / 10e6, rel=1e-3)


def test_loss_is_recovered_with_exact_sums():
    run, detail = simulate(Request("leafspine:2,1,4", "ina", 8, 64 * 200, 10.0, k=64,
                                   loss_pct=3.0, train=1, seed=5))
    assert detail["frames_lost"] > 0 and run.retransmissions > 0
    assert run.correct, run.errors
    # every retransmission is one more payload; 200 rounds and 32 closing ones
    assert run.bytes_per_host == pytest.approx((232 + run.retransmissions / 8) * (16 + 256))


def test_a_worker_that_gets_no_answer_gives_up():
    worker = SimWorker(0, 2, Shape(64, 64, 1), timeout_s=0.01, max_retries=2)
    assert worker.start(0.0) == [0]
    assert worker.on_timer(0.011) == [0]
    assert worker.on_timer(0.05) == [0]
    with pytest.raises(RuntimeError, match="no result from the switch for slot 0"):
        worker.on_timer(1.0)


def test_switch_rules_on_single_packets():
    spec = parse_topology("leafspine:2,1,2")
    plan = Planner(spec).plan(1, ["h1", "h2", "h3", "h4"], 2)
    leaf_name = plan.hosts["h1"].switch
    leaf = SwitchCells(leaf_name, plan.switches[leaf_name])

    def contribution(contributor, q, value, slot=0, version=0):
        return Packet("contribution", slot, version, q, value, contributor, "x")
    assert leaf.receive(contribution(0, 0, 5)) == []
    assert leaf.receive(contribution(0, 0, 5)) == []                   # duplicate
    (parent, up), = leaf.receive(contribution(1, 0, 7))                 # complete: up
    assert parent == plan.switches[leaf_name].parent and up.value == 12
    (parent, again), = leaf.receive(contribution(1, 0, 7))              # retransmission
    assert again.value == 12 and leaf.events["partial_resent"] == 1
    down = leaf.receive(Packet("result", 0, 0, 0, 30, 0, parent))
    assert sorted(node for node, _ in down) == ["h1", "h2"]
    assert all(p.value == 30 and p.kind == "result" for _, p in down)
    (node, answer), = leaf.receive(contribution(1, 0, 7))               # answered alone
    assert node == "h2" and answer.value == 30
    assert leaf.receive(contribution(0, 4, 1)) == []                    # new round 4
    assert leaf.receive(contribution(1, 0, 7)) == []                    # stale now
    assert leaf.events["stale_contribution"] == 1
    assert leaf.receive(Packet("result", 0, 0, 0, 30, 0, parent)) == []  # stale result
    assert leaf.events["stale_result"] == 1


def test_results_are_checked_against_the_sum():
    worker = SimWorker(0, 3, Shape(128, 64, 2), timeout_s=1.0)
    assert worker.start(0.0) == [0, 1]
    assert worker.on_result(Packet("result", 0, 0, 0, expected_sum(3, 0)), 0.1) == [2]
    assert worker.on_result(Packet("result", 1, 0, 1, 0), 0.2) == [3]    # wrong sum
    assert worker.on_result(Packet("result", 0, 1, 2, expected_sum(3, 2)), 0.3) == []
    assert not worker.done                                               # closing round 3 out
    assert worker.on_result(Packet("result", 1, 1, 3, expected_sum(3, 3)), 0.4) == []
    assert worker.done and worker.stats.wrong_results == 1


def test_an_unanswered_closing_round_is_given_up_without_error():
    worker = SimWorker(0, 2, Shape(64, 64, 1), timeout_s=0.01, max_retries=1)
    assert worker.start(0.0) == [0]
    assert worker.on_result(Packet("result", 0, 0, 0, expected_sum(2, 0)), 0.005) == [1]
    assert worker.on_timer(0.02) == [1]                                  # closing, resent
    assert worker.on_timer(1.0) == [] and worker.done
    assert worker.stats.closings_unanswered == 1 and worker.stats.finished == 1.0
    assert worker.stats.error is None and worker.stats.wrong_results == 0


def test_without_closing_rounds_a_worker_runs_the_real_rounds_only():
    worker = SimWorker(0, 2, Shape(128, 64, 2, closing=False), timeout_s=1.0)
    assert worker.start(0.0) == [0, 1]
    assert worker.on_result(Packet("result", 0, 0, 0, expected_sum(2, 0)), 0.1) == []
    assert worker.on_result(Packet("result", 1, 0, 1, expected_sum(2, 1)), 0.1) == []
    assert worker.done


def test_packet_level_unless_a_train_is_asked_for():
    assert choose_train(Request("fattree:24", "ina", 3456, 1_000_000, 100000.0)) == 1
    assert choose_train(Request("star:4", "ina", 4, 1000, 10.0, train=4)) == 4


def test_trains_keep_link_bound_times():
    # at 10 Mbit/s the link bounds the rate: a train of 4 packets adds one train time of
    # store and forward at the switch, (C + W + 4) F / B instead of (C + W + 1) F / B
    run, _ = simulate(Request("star:4", "ina", 4, 256 * 100, 10.0, k=256, train=4))
    assert run.seconds == pytest.approx((100 + 32 + 4) * frame_time(256, 10.0), rel=1e-6)


def test_train_keeps_bytes_and_sums():
    run, detail = simulate(Request("star:4", "ina", 4, 64 * 64, 10.0, k=64, train=8))
    assert detail["train"] == 8 and run.correct
    assert run.bytes_per_host == (64 + 32) * (16 + 256)    # 4 slots close with trains of 8


def test_too_many_workers_is_an_error():
    with pytest.raises(SimulationError, match="fewer than 5 workers"):
        simulate(Request("star:4", "ina", 5, 100, 10.0))


def command(*argv):
    return subprocess.run([sys.executable, "-m", "experiments", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv, message", [
    (["--topo", "fattree:3", "--workers", "4"], "K must be even"),
    (["--topo", "star:4", "--workers", "8"], "star:4 has 4 hosts"),
    (["--topo", "star:4", "--workers", "4", "--modes", "gloo"], "gloo is not simulated"),
    (["--topo", "star:4", "--workers", "4", "--k", "100"], "--k 100"),
    (["--topo", "star:4", "--workers", "4", "--modes", "ina,ring", "--loss", "1"],
     "ina only"),
    (["--topo", "star:4", "--workers", "4", "--loss", "100"], "below 100"),
    (["--topo", "star:4", "--workers", "0"], "must be >= 1"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    # in this process, through the command line's own entry (run_command's exit statuses)
    status = experiments_command.run(["simulate", *argv, "--elements", "100", "--bw", "10",
                                      "--out", str(tmp_path)])
    stderr = capsys.readouterr().err
    assert status == 2
    assert stderr.count("\n") == 1 and message in stderr
    assert not (tmp_path / "results.json").exists()


def test_command_writes_results_that_plot_and_table_read(tmp_path):
    out = tmp_path / "sim"
    finished = command("simulate", "--topo", "star:4", "--workers", "4", "--modes",
                       "ina,ring", "--elements", "25600", "--bw", "10", "--k", "256",
                       "--out", str(out))
    assert finished.returncode == 0, finished.stderr
    document = json.loads((out / "results.json").read_text())
    assert [run["mode"] for run in document["runs"]] == ["ina", "ring"]
    assert document["runs"][0]["switch"] == "simgrid"
    assert document["summary"][1]["ina_speedup"] > 1
    assert command("table", str(out)).returncode == 0
    plotted = command("plot", str(out), "--out", str(tmp_path / "fig"))
    assert plotted.returncode == 0, plotted.stderr
    # one worker count: time and bytes against the vector size; no speedup-vs-workers curve
    # of a single point
    assert sorted(p.name for p in (tmp_path / "fig").glob("*.png")) == [
        "bytes_per_host.png", "time_vs_elements.png"]


CALIBRATION = os.path.join(REPO, "docs", "results", "simulation", "calibrate")


def test_calibration_rows_from_the_committed_runs():
    # docs/results/simulation/calibrate: compare (3 runs per mode) and simulate on
    # leafspine:2,1,4 at 10 Mbit/s, K=256, 1,000,000 int32 (docs/scaling.md)
    emulated = load_runs(os.path.join(CALIBRATION, "emulated"))
    simulated = load_runs(os.path.join(CALIBRATION, "simulated"))
    rows = {row["mode"]: row for row in comparison_rows(emulated, simulated)}
    assert rows["ina"]["emulated_s"] == pytest.approx(3.410, abs=5e-4)   # median of 3
    # 3,907 packets and 32 closing ones of 1,082 bytes, and 3 hops of store and forward
    assert rows["ina"]["simulated_s"] == pytest.approx((3907 + 32 + 3) * 1082 * 8 / 10e6,
                                                       rel=1e-6)
    assert rows["ina"]["time_diff"] == pytest.approx(0.001, abs=5e-4)
    assert rows["ring"]["time_diff"] == pytest.approx(-0.031, abs=5e-4)
    assert rows["ring"]["bytes_diff"] == 0.0 and rows["ina"]["bytes_diff"] == 0.0
    assert "-3.1%" in format_rows(list(rows.values()))


def test_calibrate_refuses_an_unreadable_emulation(tmp_path, capsys):
    status = experiments_command.run(["calibrate", "--topo", "leafspine:2,1,4", "--bw", "10",
                                      "--emulated", str(tmp_path / "none"),
                                      "--out", str(tmp_path)])
    assert status == 2 and "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_host_algorithm_sends_its_formula_bytes(algorithm):
    # 6 workers on leafspine:2,1,4: not a power of two, so the folding ranks take part
    run, detail = simulate(Request("leafspine:2,1,4", algorithm, 6, 6000, 10.0))
    assert run.correct
    assert run.bytes_per_host == pytest.approx(formula_bytes_per_host(algorithm, 6000, 6))
    assert run.bytes_received_per_host == run.bytes_per_host
    # no faster than the busiest link's bytes allow
    assert run.seconds >= wire_bound_s(algorithm, 6000, 6, 10.0) * (1 - 1e-9)


def test_scaling_figure_footer_names_command_time_and_commit(tmp_path):
    from experiments.scaling_figure import footer
    point = tmp_path / "p8"
    point.mkdir()
    text = footer([str(point), "--out", "fig.png"])
    command, drawn, commit = text.split("  |  ")
    assert command == "python -m experiments scaling-figure p8 --out fig.png"
    assert drawn.startswith("drawn 20") and commit.startswith("git ")


def test_results_are_written_after_each_run_with_its_peak_memory(tmp_path):
    # the second request fails (5 workers on 4 hosts): the first run is already on disk,
    # with the peak resident sizes of its processes in meta.simulation
    from contracts.cli import RunFailed
    from experiments.simulated import run_requests
    todo = [Request("star:4", "ina", 4, 256 * 10, 10.0, k=256),
            Request("star:4", "ina", 5, 256 * 10, 10.0, k=256)]
    with pytest.raises(RunFailed, match="fewer than 5 workers"):
        run_requests(todo, str(tmp_path), {})
    document = json.loads((tmp_path / "results.json").read_text())
    assert [(run["mode"], run["workers"]) for run in document["runs"]] == [("ina", 4)]
    [detail] = document["meta"]["simulation"]
    peak = detail["peak_rss_mb"]
    assert peak["python"] > 1 and peak["simcore"] > 1       # the C++ engine ran as a child
    assert peak["total"] == pytest.approx(peak["python"] + peak["simcore"], abs=0.11)
