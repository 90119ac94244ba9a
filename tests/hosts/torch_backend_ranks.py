"""One rank of the `ina` backend check (run by tests/hosts/test_torch_backend.py over loopback
and by tests/experiments/test_torch_backend_emulation.py in Mininet): joins
`init_process_group("cpu:ina")`, issues every collective the backend runs on the switches
(asynchronously, all in flight at once, then waits), one that is delegated to Gloo and one
with a NaN, then a few steps of plain DDP, then an allreduce on a job whose chunk offsets are used up; writes what it got to an .npz file and the
backend's counters to a .json file beside it, for the test to check against a local
computation of every rank's inputs (`inputs`)."""

import argparse
import json
import sys
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

from hosts import torch_backend

SHAPES = {"ar_i32": 37, "ar_f32": 50, "avg_f32": 40, "ar_f16": 33, "ar_bf16": 29,
          "rs_i32": 13, "rs_f32": 21, "rs_avg_f32": 9, "ag_f32": 19, "ag_i64": 7,
          "bc_f32": 23, "bc_bf16": 11, "nan_f32": 10, "ar_f64": 6}


def inputs(rank: int, world: int, seed: int) -> dict:
    """Rank `rank`'s input tensors (reduce-scatter inputs are world x the output)."""
    rng = np.random.default_rng([seed, rank])
    scale = 10.0 ** rng.integers(-4, 3)
    out = {}
    for name, n in SHAPES.items():
        size = n * world if name.startswith("rs_") else n
        if name.endswith("i32"):
            out[name] = torch.from_numpy(rng.integers(-10**6, 10**6, size).astype(np.int32))
        elif name.endswith("i64"):
            out[name] = torch.from_numpy(rng.integers(-2**60, 2**60, size))
        else:
            values = rng.standard_normal(size) * scale
            dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                     "f64": torch.float64}[name.rsplit("_", 1)[1]]
            out[name] = torch.from_numpy(values).to(dtype)
    out["ag_f32"][:3] = torch.tensor([float("nan"), -0.0, float("inf")])  # bits, not values
    if rank == world - 1:
        out["nan_f32"][4] = float("nan")
    return out


def collectives(rank: int, world: int, seed: int) -> dict:
    x = inputs(rank, world, seed)
    results = {name: tensor.clone() for name, tensor in x.items()}
    results.update({name: torch.empty(SHAPES[name], dtype=x[name].dtype)
                    for name in x if name.startswith("rs_")})
    results.update({name: torch.empty(SHAPES[name] * world, dtype=x[name].dtype)
                    for name in x if name.startswith("ag_")})
    works = []
    for name in ("ar_i32", "ar_f32", "ar_f16", "ar_bf16", "nan_f32", "ar_f64"):
        works.append(dist.all_reduce(results[name], async_op=True))
    works.append(dist.all_reduce(results["avg_f32"], op=dist.ReduceOp.AVG, async_op=True))
    for name in ("rs_i32", "rs_f32"):
        works.append(dist.reduce_scatter_tensor(results[name], x[name], async_op=True))
    works.append(dist.reduce_scatter_tensor(results["rs_avg_f32"], x["rs_avg_f32"],
                                            op=dist.ReduceOp.AVG, async_op=True))
    for name in ("ag_f32", "ag_i64"):
        works.append(dist.all_gather_into_tensor(results[name], x[name], async_op=True))
    works.append(dist.broadcast(results["bc_f32"], src=world - 1, async_op=True))
    works.append(dist.broadcast(results["bc_bf16"], src=0, async_op=True))
    works.append(dist.barrier(async_op=True))
    for work in works:
        work.wait()
    return results


def ddp_steps(steps: int, seed: int, rank: int) -> list:
    """Plain DDP (no hook) on the default group; each rank's parameters after each step."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    rng = np.random.default_rng([seed, 99, rank])
    after = []
    for _ in range(steps):
        x = torch.from_numpy(rng.standard_normal((8, 16)).astype(np.float32))
        y = torch.from_numpy(rng.integers(0, 4, 8))
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        optimizer.step()
        after.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
    return after


def main(argv) -> int:
    p = argparse.ArgumentParser()
    for name in ("rank", "world", "job", "contributor", "k", "window", "switch-port", "seed",
                 "ddp-steps"):
        p.add_argument(f"--{name}", type=int, required=True)
    for name in ("master", "switch-ip", "bind", "out"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--timeout-ms", type=float, default=100.0)
    a = p.parse_args(argv)
    options = torch_backend.InaOptions(job=a.job, switch_ip=a.switch_ip,
                                       contributor=a.contributor, window=a.window, k=a.k,
                                       switch_port=a.switch_port, timeout_ms=a.timeout_ms,
                                       bind=a.bind)
    dist.init_process_group("cpu:ina", init_method=f"tcp://{a.master}", rank=a.rank,
                            world_size=a.world, timeout=timedelta(seconds=120),
                            pg_options=options)
    group = dist.distributed_c10d._get_default_group()
    assert isinstance(group, torch_backend.InaProcessGroup), type(group)
    try:                           # a second group may not take the job of the first
        dist.new_group(ranks=list(range(a.world)), pg_options=options)
        second_group = "created"
    except ValueError as exc:
        second_group = str(exc)
    results = collectives(a.rank, a.world, a.seed)
    params = ddp_steps(a.ddp_steps, a.seed, a.rank)
    # a job whose 32-bit chunk offsets are used up: the rest goes to Gloo, said once
    group.allreducer.chunk_base = (1 << 32) - 50
    late = inputs(a.rank, a.world, a.seed)["ar_i32"]
    dist.all_reduce(late)
    results["late_i32"] = late
    stats = {**group.stats.as_dict(), "second_group": second_group}
    dist.destroy_process_group()
    arrays = {name: (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
              for name, t in results.items()}
    np.savez(a.out, **arrays, ddp_params=np.stack(params))
    with open(a.out + ".json", "w") as handle:
        json.dump(stats, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
