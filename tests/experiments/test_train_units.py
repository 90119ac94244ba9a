"""experiments/train.py and train_plot.py without a network: bad input is one line and exit
2, the scale factor is T_n / (n T_1) of the single-worker run, and the figures are drawn
(the straggler figure only when a host was slowed down)."""

import subprocess
import sys

import pytest

from jobs import training as train
from experiments import train_plot
from test_compare_emulation import REPO


@pytest.mark.parametrize("argv,message", [
    (["--modes", "ina,foo"], "--modes: unknown mode 'foo' (choose from ina, gloo, ring)"),
    (["--workers", "9"], "--workers 9 exceeds the 4 hosts of star:4"),
    (["--workers", "0,2"], "--workers: counts must be >= 1"),
    (["--host-slowdown", "h9=2"], "--host-slowdown: no host h9 in star:4"),
    (["--host-slowdown", "h1=0.5"], "expected HOST=FACTOR with FACTOR >= 1, got 'h1=0.5'"),
    (["--precision-check"], "--precision-check needs --hidden 0 and --momentum 0"),
    (["--precision-check", "--hidden", "0", "--momentum", "0", "--modes", "ina"],
     "--precision-check compares ina with gloo"),
    (["--epochs", "0"], "--epochs: must be >= 1"),
    (["--parallel", "ddp,zero"], "--parallel: unknown 'zero' (choose from hook, ddp, fsdp)"),
    (["--parallel", "fsdp", "--modes", "ring"], "--modes ring runs only as a DDP comm hook"),
    (["--parallel", "ddp", "--precision-check", "--hidden", "0", "--momentum", "0"],
     "--precision-check needs --parallel hook"),
    (["--model", "huge"], "invalid choice: 'huge'")])
def test_bad_input_is_one_line_exit_2(tmp_path, argv, message):
    result = subprocess.run([sys.executable, "-m", "experiments", "train", "--topo", "star:4",
                             "--out", str(tmp_path), *argv], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def run(mode, workers, samples_per_s, slowdown=1.0):
    steps = 4
    return {"mode": mode, "workers": workers, "error": None, "steps": steps, "batch": 8,
            "samples_per_s": samples_per_s, "test_accuracy": 0.5, "final_loss": 1.0,
            "allreduces": steps, "bytes_per_step": 1000.0,
            "seconds_per_step": {"total": 0.01, "compute": 0.004, "communication": 0.006},
            "per_step": {"loss": [2.0, 1.5, 1.2, 1.0], "wall": [0.01, 0.02, 0.03, 0.04]},
            "per_rank": [{"host": f"h{i + 1}", "compute": 0.004 * (slowdown if i else 1),
                          "communication": 0.006, "slowdown": slowdown if i else 1.0}
                         for i in range(workers)]}


def test_scale_factor_and_figures(tmp_path):
    runs = [run("single", 1, 1000.0), run("ina", 2, 1500.0), run("gloo", 2, 1000.0),
            run("ina", 4, 2000.0, slowdown=3.0), run("gloo", 4, 1200.0, slowdown=3.0)]
    train.add_scale_factors(runs)
    assert [r["scale_factor"] for r in runs] == [1.0, 0.75, 0.5, 0.5, 0.3]
    paths = train_plot.draw(runs, str(tmp_path), cpus=2)
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == [
        "scale_factor.png", "step_time.png", "stragglers.png", "train_loss.png"]
    assert "ina" in train.format_table(runs) and "0.75" in train.format_table(runs)


def test_no_scale_factor_without_a_single_worker_run(tmp_path):
    runs = [run("ina", 2, 1500.0), run("gloo", 4, 1000.0)]
    train.add_scale_factors(runs)
    assert [r["scale_factor"] for r in runs] == [None, None]
    assert sorted(p.rsplit("/", 1)[1] for p in train_plot.draw(runs, str(tmp_path))) == [
        "step_time.png", "train_loss.png"]


def test_titles_say_the_setup_and_footers_the_run(tmp_path):
    meta = {"command": ["python", "-m", "experiments", "train", "--topo", "star:4", "--out",
                        "/tmp/t"], "started": "2026-11-27T19:01:43+00:00",
            "git_commit": "7fa00ff", "topo": "star:4", "k": 64, "link_bw_mbit": 10.0}
    paths = train_plot.draw([run("ina", 4, 1500.0)], str(tmp_path), meta=meta)
    assert len(paths) == 2
    assert train_plot.setting(4) == "star:4, p = 4, K = 64, links 10 Mbit/s"
    meta["link_bw_mbit"] = None
    train_plot.draw([run("ina", 4, 1500.0)], str(tmp_path), meta=meta)
    assert train_plot.setting(4) == "star:4, p = 4, K = 64, links unshaped"


def test_byte_formulas_per_rank_and_step():
    """4 bytes a parameter: DP allreduces the gradients (the switches take each rank's whole
    vector once, a ring 2(N-1)/N of it); FSDP gathers the parameters twice and
    reduce-scatters the gradients once (the switches: a rank's shard per gather, its whole
    vector per sum; a ring (N-1)/N per phase)."""
    assert train.byte_formulas("ddp", "ina", 1000, 4) == {"allreduce": 4000}
    assert train.byte_formulas("hook", "gloo", 1000, 4) == {"allreduce": 6000}
    assert train.byte_formulas("fsdp", "ina", 1000, 4) == {"allgather": 2000,
                                                           "reduce_scatter": 4000}
    assert train.byte_formulas("fsdp", "gloo", 1000, 4) == {"allgather": 6000,
                                                            "reduce_scatter": 3000}
