"""The best host algorithm as ina's baseline (experiments/baseline.py), simulate over several
sizes with every host mode (`--modes ina,hosts`, --elements E1,E2), and the simulator's
matching of a schedule's streams into messages (simulation/programs.py host_programs: ps's whole-vector
sends against the root's chunked receives)."""

import json
import os
import subprocess
import sys

import pytest

from experiments import baseline
from experiments.aggregate import summarize_runs, wire_bound_s
from jobs.results import Run
from experiments.simulated import simulate
from simulation.programs import host_programs
from simulation.run import Request
from hosts.algorithms.base import Recv, Send
from hosts.schedules import schedule

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_of(mode, elements, seconds, correct=True):
    return Run(mode=mode, topo="star:4", switch="simgrid", job=1, workers=4,
               elements=elements, dtype="int32", window=32 if mode == "ina" else None,
               seconds=seconds, melem_per_s=None, gbit_per_s=None, correct=correct,
               max_abs_err=0.0, bytes_per_host=None, bytes_received_per_host=None,
               packets_per_host=None, retransmissions=0, bw_mbit=10.0, k=64)


def test_the_fastest_correct_host_mode_at_each_point_is_the_baseline():
    runs = [run_of("ina", 100, 1.0), run_of("ring", 100, 6.0), run_of("butterfly", 100, 2.0),
            run_of("binomial-tree", 100, 1.5, correct=False),      # wrong: not a baseline
            run_of("ina", 10_000, 4.0), run_of("ring", 10_000, 6.0),
            run_of("butterfly", 10_000, 12.0),
            run_of("ring", 777, 1.0)]                               # no ina: no row
    rows = baseline.best_host_rows(summarize_runs(runs))
    assert [(r["elements"], r["best_mode"], r["best_s"], r["speedup"], r["ring_s"],
             r["ring_speedup"]) for r in rows] == [(100, "butterfly", 2.0, 2.0, 6.0, 6.0),
                                                   (10_000, "ring", 6.0, 1.5, 6.0, 1.5)]
    assert rows[0]["host_modes"] == ["butterfly", "ring"]
    table = baseline.markdown(rows).splitlines()
    # what the links alone allow: each mode's wire bound over ina's (star:4: no fabric bound)
    ina_bound = wire_bound_s("ina", 100, 4, 10.0, 64, "int32", 32)
    allowed = {mode: wire_bound_s(mode, 100, 4, 10.0) / ina_bound
               for mode in ("butterfly", "ring")}
    assert (rows[0]["best_allowed"], rows[0]["ring_allowed"]) == (allowed["butterfly"],
                                                                  allowed["ring"])
    assert table[2] == (f"| star:4 | 4 | 100 | 10 | 1 | butterfly | 2 | 2.00× | "
                        f"{allowed['butterfly']:.2f}× | 6 | 6.00× | {allowed['ring']:.2f}× |")


def test_a_tie_goes_to_the_first_listed_mode_and_no_ring_is_shown_as_such():
    rows = baseline.best_host_rows(summarize_runs(
        [run_of("ina", 100, 1.0), run_of("rabenseifner-nearest", 100, 3.0),
         run_of("rabenseifner", 100, 3.0)]))
    assert rows[0]["best_mode"] == "rabenseifner" and rows[0]["ring_speedup"] is None
    assert baseline.markdown(rows).splitlines()[2].endswith("| 3.00× | "
                                                           f"{rows[0]['best_allowed']:.2f}× | "
                                                           "- | - | - |")


def test_ps_streams_are_cut_into_matching_messages():
    # 3 ranks, 40,000 elements, chunks of 16,384: a worker sends its vector in one piece
    # and rank 0 receives it in three chunks; the simulator cuts the send to match
    assert schedule("ps", 1, 3, 40_000, 16_384)[0] == Send(0, 0, 40_000)
    programs = host_programs("ps", 3, 40_000, 16_384)
    assert programs[1] == [Send(0, 0, 16_384), Send(0, 16_384, 32_768),
                           Send(0, 32_768, 40_000), Recv(0, 0, 40_000, False)]
    assert programs[0] == schedule("ps", 0, 3, 40_000, 16_384)
    # schedules already cut alike stay the same objects' values
    assert host_programs("ring", 3, 40_000, 16_384) == [
        schedule("ring", r, 3, 40_000, 16_384) for r in range(3)]


@pytest.mark.parametrize("engine", ["cpp", "python"])
def test_ps_beyond_one_chunk_runs_at_its_incast_bound(engine):
    # 40,000 int32 = 160,000 bytes, 2 workers' vectors into rank 0's link and two back out
    run, _ = simulate(Request("star:3", "ps", 3, 40_000, 10.0, engine=engine))
    frames = -(-16_384 * 4 // 1448) * 2 + -(-(40_000 - 32_768) * 4 // 1448)
    wire = 160_000 + frames * 66
    assert run.correct and run.bytes_per_host == pytest.approx(4 * 160_000 / 3)
    assert run.seconds == pytest.approx(2 * wire * 8 / 10e6 * 2, rel=0.01)


def test_simulate_reports_the_best_host_mode_per_size(tmp_path):
    out = tmp_path / "sim"
    finished = subprocess.run(
        [sys.executable, "-m", "experiments", "simulate", "--topo", "star:4", "--workers",
         "4", "--modes", "ina,hosts", "--elements", "64,64000", "--bw", "10", "--k", "64",
         "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    document = json.loads((out / "results.json").read_text())
    assert len(document["runs"]) == 2 * 8          # ina and 7 host algorithms, 2 sizes
    rows = json.loads((out / "baseline.json").read_text())["rows"]
    assert [r["elements"] for r in rows] == [64, 64000]
    for row in rows:
        times = {run["mode"]: run["seconds"] for run in document["runs"]
                 if run["elements"] == row["elements"] and run["mode"] != "ina"}
        assert row["best_s"] == min(times.values()) and times[row["best_mode"]] == row["best_s"]
        assert row["speedup"] == pytest.approx(row["best_s"] / row["ina_s"])
    # a vector of 256 bytes: the fewest steps win (butterfly's 2 whole-vector exchanges,
    # not the ring's 6 steps of a frame each); at 64,000 int32 one of the algorithms that
    # send 2(p-1)/p vectors
    assert rows[0]["best_mode"] == "butterfly"
    assert rows[1]["best_mode"] in ("ring", "rabenseifner", "rabenseifner-nearest")
    assert "fastest host mode" in finished.stdout
    # the figure of ina against the fastest host mode across the sizes
    drawn = subprocess.run([sys.executable, "-m", "experiments", "scaling-figure", "--by-size",
                            str(out), "--out", str(tmp_path / "by-size.png")], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "by-size.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_figure_by_size_needs_ina_and_a_host_mode(tmp_path, capsys):
    from experiments import __main__ as experiments_command
    out = tmp_path / "ring-only"
    assert experiments_command.run(["simulate", "--topo", "star:2", "--workers", "2",
                                    "--modes", "ring", "--elements", "64", "--bw", "10",
                                    "--out", str(out)]) == 0
    capsys.readouterr()
    status = experiments_command.run(["scaling-figure", "--by-size", str(out),
                                      "--out", str(tmp_path / "x.png")])
    stderr = capsys.readouterr().err
    assert status == 2 and stderr.count("\n") == 1 and "no size with ina" in stderr


# ---- processing costs (cpp_engine.Costs, simulate --host-us/--switch-us/--processing) ----------
COST_S = 100e-6          # 100 µs per frame: far above the links' times at 100 Gbit/s


def test_a_switch_cost_serializes_the_aggregation_packets():
    # star:2, 10 packets of K=64 per worker and 10 closing ones: the switch handles
    # 2 x 20 packets one after another, 100 µs each
    base, _ = simulate(Request("star:2", "ina", 2, 640, 100_000.0, k=64))
    run, detail = simulate(Request("star:2", "ina", 2, 640, 100_000.0, k=64, switch_us=100))
    assert run.correct and detail["switch_us"] == 100
    assert run.seconds == pytest.approx(40 * COST_S + base.seconds, rel=1e-3)
    assert run.bytes_per_host == base.bytes_per_host


def test_a_host_cost_is_paid_per_frame_sent():
    # ina: each worker sends 20 packets, the first 10 at once (the window), so 20 x 100 µs
    run, _ = simulate(Request("star:2", "ina", 2, 640, 100_000.0, k=64, host_us=100))
    assert run.correct and run.seconds == pytest.approx(20 * COST_S, rel=1e-2)
    # the ring on 2 ranks: two messages of 7,240 int32 (20 TCP frames each) per rank
    base, _ = simulate(Request("star:2", "ring", 2, 14_480, 100_000.0))
    run, _ = simulate(Request("star:2", "ring", 2, 14_480, 100_000.0, host_us=100))
    assert run.seconds == pytest.approx(40 * COST_S + base.seconds, rel=1e-3)


def test_a_switch_forwards_tcp_frames_through_its_cpu():
    # the same ring: each step's two messages (40 frames) cross the switch's CPU
    base, _ = simulate(Request("star:2", "ring", 2, 14_480, 100_000.0))
    run, _ = simulate(Request("star:2", "ring", 2, 14_480, 100_000.0, switch_us=100))
    wire_frames = 2 * 2 * (14_480 * 2 + 20 * 66) / 1514     # in 1514-byte frame units
    assert run.seconds == pytest.approx(wire_frames * COST_S, rel=1e-2)
    assert run.seconds > base.seconds * 10


def test_costs_are_refused_on_the_python_engine(tmp_path, capsys):
    from experiments import __main__ as experiments_command
    status = experiments_command.run(["simulate", "--topo", "star:2", "--workers", "2",
                                      "--elements", "64", "--bw", "10", "--engine", "python",
                                      "--processing", "emulated", "--out", str(tmp_path)])
    stderr = capsys.readouterr().err
    assert status == 2 and stderr.count("\n") == 1 and "C++ actors only" in stderr
