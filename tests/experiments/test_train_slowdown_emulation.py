"""`experiments train --host-slowdown HOST=F` end to end: the slowed rank's computation takes
F times as long, every step waits for it, and the scale factor falls accordingly.  The
baseline is measured in the same test (same machine, same minute): a run without slowdown."""

import json
import os
import sys

import pytest

from test_compare_emulation import run_in_private_network

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

FACTOR = 20


def train(tmp_path, name, *extra):
    out = tmp_path / name
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "train", "--topo", "star:2", "--modes",
         "ina", "--workers", "1,2", "--epochs", "1", "--max-steps", "30", "--batch", "32", "--hidden", "64",
         "--seed", "3", "--switch", "builtin", "--out", str(out), "--run-timeout", "600",
         *extra],
        tmp_path / f"{name}-netns", timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = json.loads((out / "results.json").read_text())["runs"]
    return {run["mode"]: run for run in runs if run["workers"] == 2}


def test_a_slowed_host_slows_every_step_and_the_scale_factor(tmp_path):
    (tmp_path / "base-netns").mkdir()
    (tmp_path / "slow-netns").mkdir()
    base = train(tmp_path, "base")
    slow = train(tmp_path, "slow", "--host-slowdown", f"h2={FACTOR}")
    ranks = {r["host"]: r for r in slow["ina"]["per_rank"]}
    assert (ranks["h1"]["slowdown"], ranks["h2"]["slowdown"]) == (1.0, FACTOR)
    # h2 computes FACTOR times as long as it would (its own time, then a sleep); h1 not at all
    assert ranks["h2"]["compute"] > FACTOR / 4 * ranks["h1"]["compute"]
    # every step waits for h2: the step takes at least its computation
    assert slow["ina"]["seconds_per_step"]["total"] >= ranks["h2"]["compute"]
    # and the throughput over the single worker falls (expected: about 1 / FACTOR of compute)
    assert base["ina"]["scale_factor"] is not None
    assert slow["ina"]["scale_factor"] < 0.7 * base["ina"]["scale_factor"]
