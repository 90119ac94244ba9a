"""`python -m hosts train` over loopback, no root: two ranks with in-network aggregation
through the real p4src program (in-process p4switch behind a UDP bridge) and two with
Gloo, softmax regression from the same weights on the same shards.  Their first 20 losses
agree within the bound that jobs/train_precision.py derives from the protocol's
block floating point (and the float32 arithmetic both runs share); bad input gives one
line and exit 2."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from agg_network import P4Fabric, REPO, UdpSwitchBridge
from contracts.wire import worker_port
from jobs import train_precision

STEPS = 20
COMMON = ["--epochs", "1", "--max-steps", str(STEPS), "--batch", "16", "--hidden", "0",
          "--momentum", "0", "--lr", "0.1", "--seed", "3", "--precision-check"]


def train_ranks(tmp_path, mode, port, extra_per_rank):
    processes = [subprocess.Popen(
        [sys.executable, "-m", "hosts", "train", "--mode", mode, "--rank", str(rank),
         "--world", "2", "--master", f"127.0.0.1:{port}", *COMMON, *extra_per_rank(rank),
         "--json", str(tmp_path / f"{mode}{rank}.json")],
        cwd=REPO, stderr=subprocess.PIPE, text=True) for rank in range(2)]
    for process in processes:
        assert process.wait(timeout=300) == 0, process.stderr.read()
    return [json.loads((tmp_path / f"{mode}{rank}.json").read_text()) for rank in range(2)]


@pytest.mark.slow
def test_ina_and_gloo_losses_agree_within_the_derived_bound(tmp_path):
    job = 8000 + os.getpid() % 20000
    fabric = P4Fabric("star:2", job_id=job, window=8, k=64)
    bridge = UdpSwitchBridge(fabric, 2, worker_port(job))
    bridge.start()
    port = 29000 + os.getpid() % 500 * 2
    try:
        ina = train_ranks(tmp_path, "ina", port, lambda rank: [
            "--job", str(job), "--switch-ip", bridge.address[0],
            "--switch-port", str(bridge.address[1]), "--contributor",
            str(fabric.contributor(rank)), "--bind", f"127.0.0.{10 + rank}",
            "--window", "8", "--k", str(fabric.k), "--timeout-ms", "200"])
    finally:
        bridge.stop()
    gloo = train_ranks(tmp_path, "gloo", port + 1, lambda rank: [])
    for reports in (ina, gloo):
        assert [r["steps"] for r in reports] == [STEPS, STEPS]
        assert all(r["allreduces"] == STEPS and r["fallbacks"] == {} for r in reports)
    assert ina[0]["ina"]["packets_sent"] > 0
    from hosts.train import load_digits, split       # the images the runs trained on
    images = load_digits()[0][split(3)[0]]
    bound = train_precision.loss_bounds(("ina", ina), ("gloo", gloo), 0.1, images)
    loss64 = [train_precision.rank_losses(r, "loss64") for r in (ina, gloo)]
    loss32 = [train_precision.rank_losses(r, "loss") for r in (ina, gloo)]
    float32_gap = [np.mean([np.abs(np.subtract(r["per_step"]["loss"], r["per_step"]["loss64"]))
                            for r in run], axis=0) for run in (ina, gloo)]
    assert loss64[0][0] == loss64[1][0]                   # the same weights at step 0
    assert np.all(np.abs(loss64[0] - loss64[1]) <= bound)
    assert np.all(np.abs(loss32[0] - loss32[1]) <= bound + float32_gap[0] + float32_gap[1])
    # the bound says something: far below the loss and its change over the 20 steps
    assert bound[-1] < 1e-3 * loss64[1][-1] and loss64[1][-1] < loss64[1][0] - 0.1


def test_bad_input_is_one_line():
    for argv, message in [
            (["--mode", "ina", "--rank", "0", "--world", "2", "--master", "1.2.3.4:5"],
             "--mode ina needs --job, --switch-ip, --contributor"),
            (["--mode", "gloo", "--rank", "2", "--world", "2", "--master", "1.2.3.4:5"],
             "--rank 2 must be below --world 2"),
            (["--mode", "gloo", "--rank", "0", "--world", "2", "--master", "x",
              "--precision-check"], "--precision-check needs --hidden 0 and --momentum 0"),
            (["--mode", "gloo", "--rank", "0", "--world", "64", "--master", "1.2.3.4:5",
              "--batch", "32"], "exceeds the 1437 training images"),
            (["--mode", "nope"], "invalid choice")]:
        result = subprocess.run([sys.executable, "-m", "hosts", "train", *argv], cwd=REPO,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
