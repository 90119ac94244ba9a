"""hosts/gloo.py, the gloo mode's worker: three ranks on loopback give the exact int32 sum
and the float32 sum within the ring's bound (torch is pinned in requirements.txt, so this
always runs); a Python without torch gets one line, exit 1."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from hosts import cli, gloo, vectors

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
@pytest.mark.parametrize("dtype,port", [("int32", 29631), ("float32", 29632)])
def test_three_ranks_on_loopback(tmp_path, dtype, port):
    ranks = [subprocess.Popen(
        [sys.executable, "-m", "hosts", "gloo", "--rank", str(r), "--world", "3",
         "--master", f"127.0.0.1:{port + os.getpid() % 200 * 2}", "--ifname", "lo",
         "--elements", "5000", "--dtype", dtype, "--seed", "4",
         "--json", str(tmp_path / f"r{r}.json"), "--output", str(tmp_path / f"r{r}.npy")],
        cwd=REPO, stderr=subprocess.PIPE, text=True) for r in range(3)]
    for process in ranks:
        assert process.wait(timeout=120) == 0, process.stderr.read()
    expected = sum(vectors.generate(4, r, 3, 5000, vectors.DTYPES[dtype]).astype(np.float64)
                   for r in range(3))
    for r in range(3):
        report = json.loads((tmp_path / f"r{r}.json").read_text())
        assert (report["rank"], report["world"], report["correct"]) == (r, 3, True)
        assert report["bytes_sent"] > 0 and report["packets_sent"] > 0
        assert 0 < report["cpu_seconds"] < 60 and 0 < report["seconds"] < 60
        result = np.load(tmp_path / f"r{r}.npy")
        assert result.dtype == vectors.DTYPES[dtype]
        if dtype == "int32":
            assert np.array_equal(result.astype(np.float64), expected)
            assert report["max_abs_err"] == 0
        else:
            assert np.allclose(result, expected, atol=1e-5)


def test_without_torch_one_line_exit_1(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)     # import torch raises ImportError
    code = cli.run_cli(gloo.main, ["--rank", "0", "--world", "2", "--master", "10.0.0.1:1",
                                   "--elements", "10", "--seed", "1"])
    assert code == 1
    assert capsys.readouterr().err == f"error: {gloo.TORCH_MISSING}\n"


def test_bad_master_is_a_usage_error():
    with pytest.raises(cli.UsageError, match="--master 'nohost' is not IP:PORT"):
        gloo.parse_master("nohost")


class _OtherRanks:
    """torch.distributed's all_reduce(MAX) against the other ranks' tensors."""

    class ReduceOp:
        MAX = "max"

    def __init__(self, torch, others):
        self.torch, self.others = torch, others

    def all_reduce(self, tensor, op):
        assert op == self.ReduceOp.MAX
        for other in self.others:
            tensor.copy_(self.torch.maximum(tensor, other))


def _contribution(torch, clock_id, instant=float("-inf")):
    import hashlib
    clock = float(int(hashlib.sha256(clock_id.encode()).hexdigest()[:12], 16))
    return torch.tensor([clock, -clock, instant], dtype=torch.float64)


@pytest.mark.parametrize("others_clock", ["same", "another machine's"])
def test_the_group_starts_at_rank_0_s_instant_only_on_one_clock(others_clock):
    """Every mode's clock starts at a common instant where all ranks read one clock; ranks on
    several machines start theirs as they leave dist.barrier(), as the file barrier's do."""
    import time

    import torch
    from hosts import barrier
    here = barrier.clock_id()
    clock = here if others_clock == "same" else "another-boot-id"
    instant = time.monotonic() + 0.5
    others = [_contribution(torch, clock, instant), _contribution(torch, clock)]
    got = gloo.common_start(torch, _OtherRanks(torch, others), rank=2, world=3)
    assert got == (instant if others_clock == "same" else None)
    # rank 0 proposes the instant: its lead ahead of now
    before = time.monotonic()
    got = gloo.common_start(torch, _OtherRanks(torch, [_contribution(torch, here)]), 0, 2)
    assert before + barrier.start_lead_s(2) <= got <= time.monotonic() + barrier.start_lead_s(2)
