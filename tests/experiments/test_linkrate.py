"""`python -m experiments linkrate`: one compare per back end and link rate, the summary
rows (ina against its link bound, ring/ina) and the figure; bad input is one line."""

import json
import os
import subprocess
import sys

import pytest

from experiments import linkrate

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))

from private_netns import interfaces_after, private_network_command  # noqa: E402


def test_compare_arguments_per_backend_and_rate():
    args = linkrate.build_parser().parse_args(
        ["--topo", "star:2", "--bw", "10,0", "--backends", "python", "--elements", "100",
         "--out", "/tmp/lr"])
    assert args.bw == [10.0, 0.0]
    assert linkrate.compare_argv(args, "python", 10.0)[-4:] == \
        ["--out", "/tmp/lr/python-10mbit", "--bw", "10"]
    unshaped = linkrate.compare_argv(args, "c", 0.0)
    assert "--bw" not in unshaped and unshaped[unshaped.index("--out") + 1] == "/tmp/lr/c-unshaped"
    assert unshaped[unshaped.index("--switch-backend") + 1] == "c"


def test_median_cpu_seconds_adds_workers_and_switches_per_mode():
    from types import SimpleNamespace as Run
    runs = [Run(mode="ina", worker_cpu_seconds=0.2, switch_cpu_seconds=0.3),
            Run(mode="ina", worker_cpu_seconds=0.4, switch_cpu_seconds=0.4),
            Run(mode="ina", worker_cpu_seconds=0.1, switch_cpu_seconds=None),   # not counted
            Run(mode="ring", worker_cpu_seconds=1.0, switch_cpu_seconds=1.0)]
    assert linkrate.median_cpu_seconds(runs, "ina") == pytest.approx(0.65)
    assert linkrate.median_cpu_seconds(runs, "ring") == pytest.approx(2.0)
    assert linkrate.median_cpu_seconds(runs, "ps") is None


@pytest.mark.parametrize("argv, message", [
    (["--bw", "x"], "--bw: expected comma-separated numbers"),
    (["--bw", "10", "--backends", "rust"], "--backends: expected a comma list"),
    (["--bw", "10", "--modes", "ring"], "--modes must include ina"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message):
    result = subprocess.run([sys.executable, "-m", "experiments", "linkrate", "--topo", "star:2",
                             "--elements", "10", "--out", "/tmp/lr-bad"] + argv, cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


@pytest.mark.emulation
def test_linkrate_runs_both_backends_and_draws(tmp_path):
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "experiments", "linkrate", "--topo", "star:2", "--bw", "20,0",
            "--backends", "c,python", "--elements", "20000", "--k", "64", "--out", str(out)]
    result = subprocess.run(private_network_command(argv, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=600)
    assert interfaces_after(tmp_path) == ["lo"]
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads((out / "linkrate.json").read_text())["rows"]
    assert {(r["backend"], r["bw_mbit"], r["mode"]) for r in rows} == {
        (b, bw, m) for b in ("c", "python") for bw in (20.0, None) for m in ("ina", "ring")}
    assert all(r["correct_runs"] == r["runs"] == 1 for r in rows)
    shaped_ina = [r for r in rows if r["mode"] == "ina" and r["bw_mbit"]]
    assert all(r["of_bound"] >= 0.9 for r in shaped_ina)      # nothing beats the link
    for backend in ("c", "python"):
        meta = json.loads((out / f"{backend}-20mbit" / "results.json").read_text())["meta"]
        assert meta["switch_backend"] == backend
    assert (out / "linkrate.png").stat().st_size > 10000


def test_plot_redraws_linkrate_png_from_the_committed_linkrate_json(tmp_path):
    source = os.path.join(REPO, "docs", "results", "linkrate")
    command = json.loads(open(os.path.join(source, "linkrate.json")).read())["command"]
    assert linkrate.setup_title(command) == "leafspine:2,1,4, p = 8, K = 256, E = 500,000 int32"
    result = subprocess.run([sys.executable, "-m", "experiments", "plot", source, "--out",
                             str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "linkrate.png").stat().st_size > 10000


def test_the_speedup_panel_draws_what_the_links_allow(tmp_path, monkeypatch):
    """Beside the measured ring/ina at each shaped rate, the bounds' ratio (dashed)."""
    import matplotlib.figure
    rows = [{"backend": "c", "bw_mbit": bw, "mode": mode, "of_bound": 1.0,
             "bound_s": bound, "ina_speedup": speedup}
            for bw, ina_bound, ring_bound, speedup in ((10, 1.0, 1.73, 1.80), (100, 0.1, 0.173, 1.70))
            for mode, bound, speedup in (("ina", ina_bound, None), ("ring", ring_bound, speedup))]
    drawn = {}

    def keep(figure, path, **options):
        drawn.update({line.get_label(): [round(float(y), 2) for y in line.get_ydata()]
                      for line in figure.axes[1].get_lines()})
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    linkrate.plot(rows, str(tmp_path / "linkrate.png"))
    assert drawn["c back end"] == [1.80, 1.70]
    assert drawn["c: the links allow"] == [1.73, 1.73]
