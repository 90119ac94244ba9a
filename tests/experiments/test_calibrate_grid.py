"""`experiments calibrate --grid` (experiments/calibrate_grid.py): the grid's points, the rows
and their verdicts from given runs, and the whole command with the emulation replaced by a
stand-in (the simulator's own runs, 2% slower: real emulation is in the emulation tier), so
the table, grid.json and the exit status are checked without Mininet."""

import dataclasses
import json

import pytest

from experiments import calibrate, calibrate_grid
from experiments.calibrate_grid import GridPoint, grid_points, grid_rows, point_modes, verdict
from jobs.results import Run, load_runs, write_results
from experiments.simulated import run_requests
from simulation.run import Request


def test_the_grid_is_the_issues():
    points = grid_points()
    assert len(points) == 20            # (2 + 2 + 1 topologies) x 2 rates x 2 losses
    assert {(p.topo, p.workers) for p in points} == {
        ("star:4", 4), ("leafspine:2,1,2", 4), ("star:8", 8), ("leafspine:2,1,4", 8),
        ("fattree:4", 16)}
    assert grid_points(workers=16, bw_mbit=10.0) == [GridPoint("fattree:4", 16, 10.0, 0.0),
                                                     GridPoint("fattree:4", 16, 10.0, 1.0)]
    assert point_modes(GridPoint("star:4", 4, 10.0, 0.0)) == [
        "ina", "ring", "rabenseifner", "double-binary-tree"]
    assert point_modes(GridPoint("star:4", 4, 10.0, 1.0)) == ["ina"]


def run_of(mode, seconds, bytes_per_host, cpu=None):
    return Run(mode=mode, topo="star:4", switch="builtin", job=1, workers=4, elements=100_000,
               dtype="int32", window=32 if mode == "ina" else None, seconds=seconds,
               melem_per_s=None, gbit_per_s=None, correct=True, max_abs_err=0.0,
               bytes_per_host=bytes_per_host, bytes_received_per_host=bytes_per_host,
               packets_per_host=None, retransmissions=0, bw_mbit=10.0, k=64,
               worker_cpu_seconds=cpu, switch_cpu_seconds=cpu)


def test_rows_hold_link_bound_points_to_the_bar_and_list_the_others():
    point = GridPoint("star:4", 4, 10.0, 0.0)
    ring_bound = 2 * 3 / 4 * 400_000 * 8 / 10e6 * 1514 / 1448       # 0.2509 s
    emulated = [run_of("ring", ring_bound * 1.03, 600_000, cpu=0.1),
                run_of("ina", 1.0, 400_000, cpu=0.2)]                # ina far off its bound
    simulated = [run_of("ring", ring_bound, 600_000), run_of("ina", 0.35, 406_000)]
    rows = {r["mode"]: r for r in grid_rows(point, emulated, simulated)}
    ring, ina = rows["ring"], rows["ina"]
    assert ring["link_bound"] and ring["in_bar"] and ring["within"]
    assert ring["time_diff"] == pytest.approx(1 / 1.03 - 1)
    assert ring["cpu_load"] == pytest.approx(0.2 / (ring_bound * 1.03 * calibrate_grid.os.cpu_count()))
    assert not ina["link_bound"] and not ina["in_bar"] and ina["within"] is None
    assert ina["bytes_diff"] == pytest.approx(0.015)
    assert verdict(list(rows.values()))
    assert "not link-bound (left out)" in calibrate_grid.format_grid(list(rows.values()))
    # a link-bound row 1.5% off in bytes is outside the bar
    emulated[0] = run_of("ring", ring_bound, 609_000)
    assert not verdict(grid_rows(point, emulated, simulated))
    # nothing link-bound: nothing shown within the bar, so no pass
    assert not verdict([ina])


def stand_in_emulation(args, out_dir, modes):
    """The simulator's runs at the point, 2% slower, as `calibrate`'s emulate would return
    the emulator's (the same shape: results.json in out_dir)."""
    todo = [Request(args.topo, mode, args.workers, args.elements, args.bw, k=args.k,
                    window=args.window, loss_pct=args.loss) for mode in modes]
    runs = run_requests(todo, out_dir, {"command": ["stand-in"]})
    slower = [dataclasses.replace(r, seconds=r.seconds * 1.02, worker_cpu_seconds=0.1,
                                  switch_cpu_seconds=0.1) for r in runs]
    write_results(out_dir, slower, {"command": ["stand-in"]})   # what --reuse-emulated reads
    return slower


def test_the_command_writes_the_grid_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(calibrate, "emulate", stand_in_emulation)
    status = calibrate.main(["--grid", "--topo", "star:4", "--bw", "10", "--elements",
                             "25600", "--k", "256", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    document = json.loads((tmp_path / "grid.json").read_text())
    rows = document["rows"]
    assert [(r["loss_pct"], r["mode"]) for r in rows] == [
        (0.0, "ina"), (0.0, "ring"), (0.0, "rabenseifner"), (0.0, "double-binary-tree"),
        (1.0, "ina")]
    assert all(r["time_diff"] == pytest.approx(1 / 1.02 - 1) for r in rows)
    assert all(r["bytes_diff"] == 0 for r in rows[:4])
    assert document["meta"]["cores"] and document["meta"]["git_commit"]
    assert out.count("\n") == len(rows) + 1
    assert load_runs(str(tmp_path / "star-4-p4-10mbit-loss1" / "simulated"))[0].mode == "ina"


def test_bad_grid_narrowing_is_one_line(tmp_path, capsys):
    from experiments import __main__ as experiments_command
    assert experiments_command.run(["calibrate", "--grid", "--workers", "5",
                                    "--out", str(tmp_path)]) == 1
    assert "no grid point" in capsys.readouterr().err
    assert experiments_command.run(["calibrate", "--topo", "star:4"]) == 2
    assert "--topo and --bw are required" in capsys.readouterr().err


def test_a_run_more_than_the_bar_over_its_bound_is_not_link_bound():
    """star:4 at 100 Mbit/s, ina: the emulation 1.09 x its bound, the link model at it; the
    9% are the emulator's own, so the row is listed, not held to the bar."""
    point = GridPoint("star:4", 4, 10.0, 0.0)
    ring_bound = 2 * 3 / 4 * 400_000 * 8 / 10e6 * 1514 / 1448
    for factor, link_bound in ((1.04, True), (1.09, False)):
        emulated = [run_of("ring", ring_bound * factor, 600_000, cpu=0.1)]
        (row,) = grid_rows(point, emulated, [run_of("ring", ring_bound, 600_000)])
        assert row["link_bound"] is link_bound
        assert row["in_bar"] is link_bound


def test_reuse_emulated_takes_a_points_earlier_emulation(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(calibrate, "emulate", stand_in_emulation)
    argv = ["--grid", "--topo", "star:4", "--bw", "10", "--loss", "0", "--elements", "25600",
            "--k", "256", "--out", str(tmp_path)]
    assert calibrate.main(argv) == 0
    first = json.loads((tmp_path / "grid.json").read_text())

    def no_emulation(args, out_dir, modes):
        raise AssertionError(f"emulated again: {out_dir}")
    monkeypatch.setattr(calibrate, "emulate", no_emulation)
    assert calibrate.main(argv + ["--reuse-emulated"]) == 0
    again = json.loads((tmp_path / "grid.json").read_text())
    assert again["rows"] == first["rows"]
    assert again["meta"]["reused_emulations"] == ["star-4-p4-10mbit-loss0"]
    # another vector: the earlier emulation does not fit, so the point is emulated
    with pytest.raises(AssertionError, match="emulated again"):
        calibrate.main(argv[:-6] + ["--elements", "51200", "--k", "256", "--out", str(tmp_path),
                                    "--reuse-emulated"])
