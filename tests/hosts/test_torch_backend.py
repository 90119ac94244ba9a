"""hosts/torch_backend.py over loopback, no root: two ranks join `init_process_group("cpu:ina")`
against the real p4src program (in-process p4switch behind a UDP bridge, tests/hosts/
agg_network.py) and run allreduce (int32, float32, float16, bfloat16; SUM and AVG),
reduce_scatter_tensor, all_gather_into_tensor, broadcast and barrier, all in flight at once;
every result is checked against a local computation of both ranks' inputs: exact for int32 and
for the copies (bit for bit, NaN and -0.0 included), within the documented bound for floats.
A NaN goes to Gloo on every rank, float64 is delegated, and so does everything once the job's
chunk offsets are used up, each said once; plain DDP on the
backend leaves bit-identical parameters on both ranks after every step."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from agg_network import P4Fabric, REPO, UdpSwitchBridge
from contracts.wire import worker_port
import torch_backend_ranks as ranks

from hosts import torch_backend
from hosts.ina import quantize

WORLD, SEED, DDP_STEPS = 2, 7, 3


def run_ranks(tmp_path, job, switch_address, contributors, extra_env=None):
    port = 29500 + os.getpid() % 400
    env = {**os.environ, "PYTHONPATH": REPO, **(extra_env or {})}
    processes = [subprocess.Popen(
        [sys.executable, os.path.join(REPO, "tests", "hosts", "torch_backend_ranks.py"),
         "--rank", str(rank), "--world", str(WORLD), "--master", f"127.0.0.1:{port}",
         "--job", str(job), "--contributor", str(contributors[rank]), "--k", "8",
         "--window", "4", "--switch-ip", switch_address[0],
         "--switch-port", str(switch_address[1]), "--bind", f"127.0.0.{10 + rank}",
         "--seed", str(SEED), "--ddp-steps", str(DDP_STEPS), "--timeout-ms", "50",
         "--out", str(tmp_path / f"rank{rank}.npz")],
        cwd=REPO, env=env, stderr=subprocess.PIPE, text=True) for rank in range(WORLD)]
    errors = [(p.wait(timeout=300), p.stderr.read()) for p in processes]
    assert all(code == 0 for code, _ in errors), errors
    return ([dict(np.load(tmp_path / f"rank{rank}.npz")) for rank in range(WORLD)],
            [json.loads((tmp_path / f"rank{rank}.npz.json").read_text())
             for rank in range(WORLD)],
            [stderr for _, stderr in errors])


def float_bound(inputs, result, k, dtype, average=False):
    """Per element, hosts/torch_backend.py's bound on |result - exact sum (or mean)|: the
    block floating point bound of each block of k (its agreed exponent: the largest over the
    ranks) and the rounding of the result (float32, then `dtype`; AVG's division once more)."""
    world = len(inputs)
    exponents = np.max([quantize.block_exponents(np.resize(
        np.pad(x, (0, -len(x) % k)), (-(-len(x) // k), k))) for x in inputs], axis=0)
    block = np.repeat(quantize.block_error_bound(exponents, world), k)[:len(inputs[0])]
    return torch_backend.float_error_bound(dtype, block / (world if average else 1), result,
                                           average)


def check_results(results, world):
    x = [{name: t.numpy() if t.dtype != torch.bfloat16 else t.float().numpy()
          for name, t in ranks.inputs(r, world, SEED).items()} for r in range(world)]
    exact = {name: np.sum([x[r][name].astype(np.float64) for r in range(world)], axis=0)
             for name in x[0] if not name.startswith(("ag_", "bc_"))}
    for rank, got in enumerate(results):
        # int32: exact
        assert got["ar_i32"].tolist() == exact["ar_i32"].astype(np.int64).tolist()
        assert got["late_i32"].tolist() == exact["ar_i32"].astype(np.int64).tolist()
        n = ranks.SHAPES["rs_i32"]
        assert got["rs_i32"].tolist() == exact["rs_i32"][rank * n:(rank + 1) * n].tolist()
        # floats: within the bound, and the bound is tight enough to mean something
        for name, dtype in (("ar_f32", torch.float32), ("ar_f16", torch.float16),
                            ("avg_f32", torch.float32)):
            value = got[name].astype(np.float64)
            average = name.startswith("avg")
            want = exact[name] / (world if average else 1)
            bound = float_bound([x[r][name].astype(np.float32) for r in range(world)], value,
                                8, dtype, average)
            assert np.all(np.abs(value - want) <= bound), name
            assert np.max(bound) < 1e-2 * np.max(np.abs(want)), name
        bf16 = torch.from_numpy(got["ar_bf16"]).view(torch.bfloat16).float().numpy()
        bound = float_bound([x[r]["ar_bf16"].astype(np.float32) for r in range(world)],
                            bf16, 8, torch.bfloat16)
        assert np.all(np.abs(bf16 - exact["ar_bf16"]) <= bound)
        for name, average in (("rs_f32", False), ("rs_avg_f32", True)):
            n = ranks.SHAPES[name]
            shard = slice(rank * n, (rank + 1) * n)
            want = exact[name][shard] / (world if average else 1)
            bound = float_bound([x[r][name][shard].astype(np.float32) for r in range(world)],
                                got[name], 8, torch.float32, average)
            assert np.all(np.abs(got[name] - want) <= bound), name
        # copies: bit for bit
        for name in ("ag_f32", "ag_i64"):
            want = np.concatenate([x[r][name] for r in range(world)])
            assert got[name].tobytes() == want.tobytes(), name
        assert got["bc_f32"].tobytes() == x[world - 1]["bc_f32"].tobytes()
        bc = ranks.inputs(0, world, SEED)["bc_bf16"].view(torch.int16).numpy()
        assert got["bc_bf16"].tobytes() == bc.tobytes()
        # the NaN went to Gloo on every rank: NaN where a rank had it, the sum elsewhere
        nan_sum = exact["nan_f32"]
        assert np.isnan(got["nan_f32"][4]) and np.isnan(nan_sum[4])
        finite = ~np.isnan(nan_sum)
        assert np.allclose(got["nan_f32"][finite], nan_sum[finite], rtol=1e-6, atol=0)
        assert np.allclose(got["ar_f64"], exact["ar_f64"], rtol=1e-12, atol=0)


@pytest.mark.slow
def test_two_ranks_init_process_group_ina_over_loopback(tmp_path):
    job = 9000 + os.getpid() % 20000
    fabric = P4Fabric("star:2", job_id=job, window=4)
    bridge = UdpSwitchBridge(fabric, WORLD, worker_port(job), drop_every=13)
    bridge.start()
    try:
        results, stats, stderr = run_ranks(tmp_path, job, bridge.address,
                                           [fabric.contributor(r) for r in range(WORLD)])
    finally:
        bridge.stop()
    check_results(results, WORLD)
    # DDP: bit-identical parameters on both ranks after every step, and they moved
    assert results[0]["ddp_params"].tobytes() == results[1]["ddp_params"].tobytes()
    assert not np.array_equal(results[0]["ddp_params"][0], results[0]["ddp_params"][-1])
    for rank_stats, err in zip(stats, stderr):
        assert "job " in rank_stats["second_group"] and \
            "already serves another process group" in rank_stats["second_group"]
        collectives = rank_stats["collectives"]
        # 6 allreduces issued, ar_f64 delegated; DDP: 1 broadcast, its buckets' allreduces
        assert collectives["allreduce"]["calls"] >= 6 + DDP_STEPS
        assert collectives["reduce_scatter"]["calls"] == 3
        assert collectives["allgather"]["calls"] == 2
        assert collectives["broadcast"]["calls"] >= 3
        assert collectives["barrier"]["calls"] == 1
        assert all(c["packets_sent"] > 0 for c in collectives.values())
        assert rank_stats["delegated"]["allreduce"] == 1
        lines = [line for line in err.splitlines() if line.startswith("ina: ")]
        assert sum("allreduce goes to Gloo" in line for line in lines) == 1, err
        assert sum("NaN or infinity" in line for line in lines) == 1, err
        assert sum("used up its 32-bit chunk offsets" in line for line in lines) == 1, err
        assert collectives["allreduce"]["fallbacks"] == 2       # the NaN and the offsets
    assert bridge.received > 0


def test_options_from_the_environment():
    options = torch_backend.InaOptions(job=3, switch_ip="10.0.0.1", contributor=2, k=32)
    assert torch_backend.InaOptions.from_environment(options.environment()) == options
    with pytest.raises(ValueError, match="no INA_SWITCH_IP, INA_CONTRIBUTOR"):
        torch_backend.InaOptions.from_environment({"INA_JOB": "1"})
    with pytest.raises(ValueError, match="INA_K='x' is not an integer"):
        torch_backend.InaOptions.from_environment({**options.environment(), "INA_K": "x"})


def test_one_rank_group_refusals_and_announcements(tmp_path, capsys, monkeypatch):
    """A group of one rank computes locally (no socket); what the switches cannot do is said
    once per operation or refused in one line; without pg_options the INA_* variables are
    read, and their absence is one line."""
    import torch.distributed as dist
    for name in torch_backend.InaOptions.ENVIRONMENT.values():
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="no pg_options and no INA_JOB, INA_SWITCH_IP"):
        dist.init_process_group("cpu:ina", init_method=f"file://{tmp_path}/a", rank=0,
                                world_size=1)
    monkeypatch.setenv("INA_JOB", "5")
    monkeypatch.setenv("INA_SWITCH_IP", "127.0.0.1")
    monkeypatch.setenv("INA_CONTRIBUTOR", "0")
    dist.init_process_group("cpu:ina", init_method=f"file://{tmp_path}/b", rank=0,
                            world_size=1)
    try:
        group = dist.distributed_c10d._get_default_group()
        assert group.options == torch_backend.InaOptions(job=5, switch_ip="127.0.0.1",
                                                         contributor=0)
        assert group.getBackendName() == "ina" and group.allreducer is None
        with pytest.raises(ValueError, match="AVG of int32 is not an integer"):
            dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.AVG)
        for _ in range(2):
            dist.all_reduce(torch.ones(3, dtype=torch.float64))
            dist.all_reduce(torch.ones(3), op=dist.ReduceOp.MAX)
        out = torch.empty(4, dtype=torch.int64)
        dist.all_gather_into_tensor(out, torch.arange(4))
        assert out.tolist() == [0, 1, 2, 3]
        half = torch.tensor([1.5, -2.0], dtype=torch.float16)
        dist.all_reduce(half, op=dist.ReduceOp.AVG)
        assert half.tolist() == [1.5, -2.0]
    finally:
        dist.destroy_process_group()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ina:")]
    assert lines == ["ina: allreduce goes to Gloo (the switches add int32 and float32 "
                     "(float16, bfloat16 converted); not torch.float64)"]
