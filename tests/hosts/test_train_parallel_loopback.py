"""`python -m hosts train --parallel ddp|fsdp --mode ina` over loopback, no root: two ranks on
`init_process_group("cpu:ina")` (hosts/torch_backend.py) against the real p4src program
(in-process p4switch behind a UDP bridge).  Plain DDP leaves bit-identical parameters on both
ranks after every step, and a rerun with the same seed, or the synchronous comm hook, gives the
same losses to the last bit;
FSDP2 moves its parameters by allgather and its gradients by reduce-scatter through the
switches and trains as DDP does; combinations that cannot run say so in one line."""

import json
import os
import subprocess
import sys

import pytest

from agg_network import P4Fabric, REPO, UdpSwitchBridge
from contracts.wire import worker_port

STEPS = 6


def train_through_switch(tmp_path, parallel, tag, port, extra=()):
    job = 8500 + (os.getpid() + port) % 20000
    fabric = P4Fabric("star:2", job_id=job, window=8, k=64)
    bridge = UdpSwitchBridge(fabric, 2, worker_port(job), drop_every=40)
    bridge.start()
    try:
        processes = [subprocess.Popen(
            [sys.executable, "-m", "hosts", "train", "--mode", "ina", "--parallel", parallel,
             "--rank", str(rank), "--world", "2", "--master", f"127.0.0.1:{port}",
             "--epochs", "1", "--max-steps", str(STEPS), "--batch", "16", "--seed", "4",
             "--job", str(job), "--switch-ip", bridge.address[0],
             "--switch-port", str(bridge.address[1]), "--contributor",
             str(fabric.contributor(rank)), "--bind", f"127.0.0.{10 + rank}", "--window", "8",
             "--k", "64", "--timeout-ms", "100", *extra,
             "--json", str(tmp_path / f"{tag}{rank}.json")],
            cwd=REPO, stderr=subprocess.PIPE, text=True) for rank in range(2)]
        for process in processes:
            assert process.wait(timeout=300) == 0, process.stderr.read()
    finally:
        bridge.stop()
    return [json.loads((tmp_path / f"{tag}{rank}.json").read_text()) for rank in range(2)]


@pytest.mark.slow
def test_ddp_on_the_backend_is_bit_identical_across_ranks_and_reruns(tmp_path):
    port = 29600 + os.getpid() % 300
    first = train_through_switch(tmp_path, "ddp", "a", port)
    again = train_through_switch(tmp_path, "ddp", "b", port + 1)
    for reports in (first, again):
        digests = [r["per_step"]["param_digest"] for r in reports]
        assert len(digests[0]) == STEPS and digests[0] == digests[1]
        assert len(set(digests[0])) == STEPS            # the weights moved every step
        assert reports[0]["final_param_digest"] == reports[1]["final_param_digest"]
        for r in reports:
            assert r["parallel"] == "ddp" and r["per_step"]["allreduces"] == [1] * STEPS
            assert r["backend"]["collectives"]["allreduce"]["packets_sent"] > 0
            assert all(b["allreduce"] > 0 for b in r["per_step"]["collective_bytes"])
    for rank in range(2):
        assert first[rank]["per_step"]["loss"] == again[rank]["per_step"]["loss"]
    assert first[0]["final_param_digest"] == again[0]["final_param_digest"]
    # the synchronous comm hook reduces the same bucket the same way: the same losses to the
    # last bit, so the hook's precision bound (test_train_loopback.py) holds for the backend
    hook = train_through_switch(tmp_path, "hook", "h", port + 2)
    for rank in range(2):
        assert hook[rank]["per_step"]["loss"] == first[rank]["per_step"]["loss"]
    assert hook[0]["final_param_digest"] == first[0]["final_param_digest"]


@pytest.mark.slow
def test_fsdp_on_the_backend_gathers_and_reduce_scatters_through_the_switch(tmp_path):
    port = 29950 + os.getpid() % 40 * 2
    reports = train_through_switch(tmp_path, "fsdp", "f", port)
    ddp = train_through_switch(tmp_path, "ddp", "d", port + 1)
    for r in reports:
        calls = r["per_step"]["collective_calls"]
        # two Linear layers, each its own FSDP unit: parameters gathered for the forward and
        # again for the backward, gradients reduce-scattered once
        assert [c["allgather"] for c in calls] == [4] * STEPS
        assert [c["reduce_scatter"] for c in calls] == [2] * STEPS
        assert all(c["allreduce"] == 0 for c in calls)
        by = r["per_step"]["collective_bytes"]
        # a rank's payload: its gradients, (64 x 64 + 64 + 64 x 10 + 10) float32, plus headers
        assert all(b["reduce_scatter"] >= 4 * 4810 for b in by)
        assert all(b["allgather"] > 0 for b in by)
    # the same training as DDP's: the losses differ only by the block floating point of
    # differently cut blocks (about 2**-24 relative per sum), far below their change
    for f, d in zip(reports, ddp):
        assert f["per_step"]["loss"][0] == d["per_step"]["loss"][0]
        assert all(abs(a - b) < 1e-4 for a, b in zip(f["per_step"]["loss"],
                                                      d["per_step"]["loss"]))
        assert f["per_step"]["loss"] != f["per_step"]["loss"][:1] * STEPS
    assert reports[0]["final_param_digest"] == reports[1]["final_param_digest"]


def test_combinations_that_cannot_run_are_one_line():
    for argv, message in [
            (["--mode", "ring", "--parallel", "ddp"], "--mode ring runs only as a DDP comm hook"),
            (["--mode", "gloo", "--parallel", "fsdp", "--precision-check", "--hidden", "0",
              "--momentum", "0"], "--precision-check needs --parallel hook"),
            (["--mode", "gloo", "--parallel", "zero"], "invalid choice")]:
        result = subprocess.run([sys.executable, "-m", "hosts", "train", "--rank", "0",
                                 "--world", "2", "--master", "1.2.3.4:5", *argv], cwd=REPO,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
