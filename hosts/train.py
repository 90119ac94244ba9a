"""`python -m hosts train`: one rank of data-parallel training (PyTorch DDP) on the digits.

The model is a small MLP (64 inputs, --hidden ReLU units, 10 classes; --hidden 0 is softmax
regression) trained with SGD on scikit-learn's bundled digits dataset (1,797 8x8 images,
`sklearn.datasets.load_digits`, no download), pixels scaled to [0, 1].  A fixed permutation
of --seed holds out 360 images for the test; every epoch shuffles the other 1,437 with
(--seed, epoch), and step s of the epoch gives rank r the r-th slice of --batch images of
the s-th global batch of world x batch images (the last partial global batch is dropped).
The initial weights come from torch.manual_seed(--seed).  So every mode trains on the same
data shards from the same weights; only the allreduce differs (--mode):

* ina: each gradient bucket through the switches (hosts/torch_hook.py's InaHook: the worker
  engine and protocol of `hosts worker`, float32 as block floating point; Gloo for what the
  switches cannot take, said in one line);
* gloo: torch.distributed's Gloo all_reduce;
* ring: this project's ring allreduce over TCP (hosts/allreduce.py).

That is `--parallel hook` (the default): DDP's process group is Gloo in every mode
(rendezvous at --master, which also broadcasts the initial weights and serves as the
fallback).  Every hook reduces synchronously, so each step splits into computation (forward,
backward, optimizer, minus the hook) and communication (the hook).

`--parallel ddp` and `--parallel fsdp` put the whole process group on the mode instead: `ina`
is `init_process_group("cpu:ina")` (hosts/torch_backend.py: every collective through the
switches, asynchronously), `gloo` is Gloo; ring has no process group and runs only as a hook.
ddp is plain DistributedDataParallel with no hook, so bucket allreduces overlap the rest of the
backward pass; fsdp is FSDP2 (`fully_shard` on every Linear layer and the model): parameters
are allgathered before use and gradients summed into shards.  A step then splits into
computation, the main thread's CPU time (one intra-op thread per rank in every mode), and
exposed communication, the rest of its wall time; `comm_busy_s` is the time the ina worker
thread spent in collectives (overlapped or not), and `collective_bytes` the UDP payload bytes
this rank sent per collective.  `param_digest` (ddp: every step; ddp and fsdp: the final full
parameters) shows whether the ranks hold bit-identical weights.  `--model wide` is a second
model, 64-1024-1024-10 (1.1M parameters), on the same data.  Bytes per step are the host interface's counters (--ifname, Ethernet frames).  The
JSON report has, per step: loss (this rank's batch, before the update), wall seconds since
training started, compute and communication seconds, bytes sent and received, allreduces;
and the totals, the test accuracy and the hook's fallbacks.

--precision-check (softmax regression only, no momentum) also records per step what
tests/experiments/test_train_emulation.py needs to bound the loss difference between modes:
the loss in float64 at the same float32 weights, the deviation of this rank's float32
gradient from the float64 one, its norm, the norm of the allreduce's error bound (ina), and
the norms of the averaged gradient and of the updated weights.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
from sklearn.datasets import load_digits as sklearn_digits

from contracts.jobs import GROUP_TIMEOUT_S, TrainWorker
from hosts import cli, torch_hook
from hosts.allreduce import HostAllreduce
from hosts.gloo import (_first_line, interface_counters, parse_master,
                        torch_distributed)
from hosts.transport import parse_peers

TEST_IMAGES = 360
WIDE_HIDDEN = 1024


def build_parser() -> cli.OneLineParser:
    """The options are contracts.jobs.TrainWorker's fields (the launchers write them too)."""
    return TrainWorker.parser()


def check_arguments(args) -> None:
    cli.check_rank(args.rank, args.world)
    if args.slowdown < 1:
        raise cli.UsageError(f"--slowdown {args.slowdown:g} must be at least 1")
    if not 0 <= args.momentum < 1:
        raise cli.UsageError(f"--momentum {args.momentum:g} must be in [0, 1)")
    if args.world > 1 and args.mode == "ina":
        missing = [f"--{name.replace('_', '-')}" for name in ("job", "switch_ip", "contributor")
                   if getattr(args, name) is None]
        if missing:
            raise cli.UsageError(f"--mode ina needs {', '.join(missing)}")
    if args.parallel != "hook" and args.mode == "ring":
        raise cli.UsageError(f"--mode ring runs only as a DDP comm hook (--parallel hook), "
                             f"not with --parallel {args.parallel}")
    if args.precision_check and args.parallel != "hook":
        raise cli.UsageError("--precision-check needs --parallel hook")
    if args.world > 1 and args.mode == "ring" and not args.peers:
        raise cli.UsageError("--mode ring needs --peers")
    if args.precision_check and (args.hidden != 0 or args.momentum != 0):
        raise cli.UsageError("--precision-check needs --hidden 0 and --momentum 0 (softmax "
                             "regression by plain SGD, whose error propagation is bounded)")
    if (len(load_digits()[0]) - TEST_IMAGES) // (args.world * args.batch) < 1:
        raise cli.UsageError(f"--world {args.world} x --batch {args.batch} exceeds the "
                             f"{len(load_digits()[0]) - TEST_IMAGES} training images")


_DIGITS = None


def load_digits():
    """(images as float32 in [0, 1], shape 1797 x 64; labels int64)."""
    global _DIGITS
    if _DIGITS is None:
        data = sklearn_digits()
        _DIGITS = (np.asarray(data.data, dtype=np.float32) / 16.0,
                   np.asarray(data.target, dtype=np.int64))
    return _DIGITS


def split(seed: int):
    """(train indices, test indices): a fixed permutation of --seed."""
    images = len(load_digits()[0])
    order = np.random.default_rng(seed).permutation(images)
    return order[TEST_IMAGES:], order[:TEST_IMAGES]


def shard(train: np.ndarray, seed: int, epoch: int, step: int, rank: int, world: int,
          batch: int) -> np.ndarray:
    """The indices rank `rank` trains on at `step` of `epoch` (the module docstring)."""
    order = train[np.random.default_rng([seed, epoch]).permutation(len(train))]
    start = step * world * batch + rank * batch
    return order[start:start + batch]


def make_model(torch, hidden: int, seed: int, model: str = "mlp"):
    torch.manual_seed(seed)
    if model == "wide":
        return torch.nn.Sequential(torch.nn.Linear(64, WIDE_HIDDEN), torch.nn.ReLU(),
                                   torch.nn.Linear(WIDE_HIDDEN, WIDE_HIDDEN), torch.nn.ReLU(),
                                   torch.nn.Linear(WIDE_HIDDEN, 10))
    if hidden == 0:
        return torch.nn.Linear(64, 10)
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


def make_hook(args, say):
    """The mode's comm hook and what must be closed after training."""
    if args.mode == "ina" and args.world > 1:
        allreducer = torch_hook.InaAllreducer(
            args.job, args.contributor, args.world, args.switch_ip, args.window, args.k,
            timeout_s=args.timeout_ms / 1000, switch_port=args.switch_port, bind=args.bind)
        return torch_hook.InaHook(allreducer, say), allreducer
    if args.mode == "ring" and args.world > 1:
        member = HostAllreduce("ring", args.rank, args.world,
                               parse_peers(args.peers, args.world))
        member.connect()
        return torch_hook.RingHook(member, args.world, say), member
    if args.world == 1:
        say(f"{args.mode}: world size 1, nothing to allreduce: training locally")
    return torch_hook.GlooHook(args.world, say), None


def counters(ifname):
    if not ifname:
        return (0, 0, 0, 0)
    return interface_counters(ifname)


class PrecisionProbe:
    """--precision-check: float64 loss and gradient at the float32 weights (see the docstring)."""

    def __init__(self, torch, model):
        self.torch, self.model = torch, model
        self.model64 = torch.nn.Linear(64, 10).double()   # weights copied in before_step

    def before_step(self, x, y):
        torch = self.torch
        with torch.no_grad():
            for p64, p in zip(self.model64.parameters(), self.model.parameters()):
                p64.copy_(p.double())
        self.model64.zero_grad()
        loss64 = torch.nn.functional.cross_entropy(self.model64(x.double()), y)
        loss64.backward()
        return loss64.item()

    def after_step(self, hook, record: dict) -> None:
        torch = self.torch
        local = {}
        for params, buffer in hook.local_buckets:
            offset = 0
            for p in params:
                local[p] = buffer[offset:offset + p.numel()].view_as(p)
                offset += p.numel()
        hook.local_buckets.clear()
        deviation = sum(float(((local[p].double() - p64.grad) ** 2).sum())
                        for p, p64 in zip(self.model.parameters(), self.model64.parameters()))
        record["grad_fp_error"] = deviation ** 0.5
        record["mean_grad_norm"] = float(torch.sqrt(sum((p.grad.double() ** 2).sum()
                                                        for p in self.model.parameters())))
        record["weight_norm"] = float(torch.sqrt(sum((p.detach().double() ** 2).sum()
                                                     for p in self.model.parameters())))


def join_group(args, dist) -> None:
    """init_process_group at --master: Gloo, or the ina backend for --parallel ddp|fsdp."""
    host, port = parse_master(args.master)
    backend, options = "gloo", None
    if args.parallel != "hook" and args.mode == "ina" and args.world > 1:
        from hosts import torch_backend     # registers "ina"; only this mode needs it
        backend = "cpu:ina"
        options = torch_backend.InaOptions(
            job=args.job, switch_ip=args.switch_ip, contributor=args.contributor,
            window=args.window, k=args.k, switch_port=args.switch_port,
            timeout_ms=args.timeout_ms, bind=args.bind)
    try:
        dist.init_process_group(backend, init_method=f"tcp://{host}:{port}", rank=args.rank,
                                world_size=args.world, pg_options=options,
                                timeout=timedelta(seconds=GROUP_TIMEOUT_S))
    except (RuntimeError, ValueError) as exc:
        raise cli.RunFailed(f"train rank {args.rank}: joining the group at {args.master} "
                            f"failed: {_first_line(exc)}") from None


def wrap(args, torch, model, say):
    """(the module to train, the comm hook or None, what must be closed after training)."""
    if args.parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard   # only fsdp runs need it
        for layer in model.modules():
            if isinstance(layer, torch.nn.Linear) and layer is not model:
                fully_shard(layer)
        return fully_shard(model), None, None
    # DDP's default buckets: the mlp's gradients (19 KB with 64 hidden units) are one
    # bucket, one allreduce per step.
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if args.parallel == "ddp":
        return ddp, None, None
    hook, closable = make_hook(args, say)
    ddp.register_comm_hook(hook, torch_hook.comm_hook)
    return ddp, hook, closable


def group_stats(dist):
    """The ina process group's counters (hosts/torch_backend.py), None for Gloo."""
    group = dist.distributed_c10d._get_default_group()
    return getattr(group, "stats", None)


def parameter_digest(parameters, dist=None) -> str:
    """A digest of the parameters' bytes.  FSDP's (DTensor shards, held once each) are every
    rank's shards gathered by all_gather_object: DTensor.full_tensor() uses functional
    collectives, which torch dispatches in C++ to a registered c10d::Backend, and the ina
    group is a Python ProcessGroup (docs/results/training.md)."""
    digest = hashlib.blake2b(digest_size=8)
    for p in parameters:
        local = p.to_local() if hasattr(p, "to_local") else p
        data = local.detach().contiguous().numpy().tobytes()
        if dist is not None and hasattr(p, "to_local"):
            shards = [None] * dist.get_world_size()
            dist.all_gather_object(shards, data)
            data = b"".join(shards)
        digest.update(data)
    return digest.hexdigest()


def train(args, say) -> dict:
    torch, dist = torch_distributed()
    torch.set_num_threads(1)          # the ranks share the machine's cores
    images, labels = load_digits()
    train_idx, test_idx = split(args.seed)
    steps_per_epoch = len(train_idx) // (args.world * args.batch)
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    join_group(args, dist)
    hook, closable, module = None, None, None
    try:
        model = make_model(torch, args.hidden, args.seed, args.model)
        module, hook, closable = wrap(args, torch, model, say)
        optimizer = torch.optim.SGD(module.parameters(), lr=args.lr, momentum=args.momentum)
        probe = PrecisionProbe(torch, model) if args.precision_check else None
        if hook is not None:
            hook.keep_local = probe is not None
        stats = group_stats(dist)
        steps, started = [], None
        dist.barrier()
        started = time.monotonic()
        for epoch in range(args.epochs):
            for step in range(steps_per_epoch):
                if args.max_steps and len(steps) >= args.max_steps:
                    break
                index = shard(train_idx, args.seed, epoch, step, args.rank, args.world,
                              args.batch)
                x, y = torch.from_numpy(images[index]), torch.from_numpy(labels[index])
                record = {}
                if probe:
                    record["loss64"] = probe.before_step(x, y)
                if hook is not None:
                    steps.append(run_step(args, module, optimizer, hook, x, y, started, record))
                else:
                    steps.append(run_group_step(args, module, optimizer, stats, x, y, started,
                                                record))
                if probe:
                    probe.after_step(hook, record)
        seconds = time.monotonic() - started
        dist.barrier()
        with torch.no_grad():       # fsdp: every rank runs it (its parameters are gathered)
            predicted = module(torch.from_numpy(images[test_idx])).argmax(dim=1).numpy()
        accuracy = float((predicted == labels[test_idx]).mean())
        final_digest = parameter_digest(model.parameters(), dist)
        backend = stats.as_dict() if stats is not None else None
        allreducer = getattr(dist.distributed_c10d._get_default_group(), "allreducer", None)
        if allreducer is not None:
            backend.update(packets_sent=allreducer.packets_sent,
                           payload_bytes_sent=allreducer.bytes_sent,
                           retransmissions=allreducer.retransmissions)
    except RuntimeError as exc:
        raise cli.RunFailed(f"train rank {args.rank} ({args.mode}): {_first_line(exc)}") from None
    finally:
        if closable is not None:
            closable.close()
        module = None       # DDP's reducer goes while its process group still exists
        dist.destroy_process_group()
    report = build_report(args, hook, closable, steps, seconds, accuracy, steps_per_epoch)
    report.update({"final_param_digest": final_digest, "backend": backend,
                   "parameters": sum(p.numel() for p in model.parameters())})
    if backend and "packets_sent" in backend:
        report["ina"] = {"packets_sent": backend["packets_sent"],
                         "payload_bytes_sent": backend["payload_bytes_sent"],
                         "retransmissions": backend["retransmissions"], "k": args.k,
                         "window": args.window}
    return report


def run_step(args, ddp, optimizer, hook, x, y, started: float, record: dict) -> dict:
    before = counters(args.ifname)
    comm_before, allreduces_before = hook.stats.seconds, hook.stats.allreduces
    bound_before, norm_before = hook.stats.error_bound_sq, hook.stats.local_norm_sq
    t0 = time.monotonic()
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    optimizer.step()
    t1 = time.monotonic()
    comm = hook.stats.seconds - comm_before
    if args.slowdown > 1:            # a slower host: its computation takes longer
        time.sleep((t1 - t0 - comm) * (args.slowdown - 1))
        t1 = time.monotonic()
    after = counters(args.ifname)
    record.update({
        "loss": loss.item(), "wall": t1 - started, "seconds": t1 - t0, "comm_s": comm,
        "compute_s": t1 - t0 - comm, "rx_bytes": after[0] - before[0],
        "tx_bytes": after[2] - before[2], "allreduces": hook.stats.allreduces - allreduces_before,
        "allreduce_bound": (hook.stats.error_bound_sq - bound_before) ** 0.5,
        "local_grad_norm": (hook.stats.local_norm_sq - norm_before) ** 0.5})
    return record


def _collective_counts(stats) -> dict:
    if stats is None:
        return {}
    return {name: (c.calls, c.payload_bytes_sent) for name, c in stats.collectives.items()}


def run_group_step(args, module, optimizer, stats, x, y, started: float, record: dict) -> dict:
    """A step of --parallel ddp|fsdp: computation is the main thread's CPU time, the rest of
    the wall time is communication the computation did not hide (module docstring)."""
    before, counts_before = counters(args.ifname), _collective_counts(stats)
    busy_before = stats.busy_seconds() if stats is not None else 0.0
    t0, cpu0 = time.monotonic(), time.thread_time()
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(module(x), y)
    loss.backward()
    optimizer.step()
    compute = time.thread_time() - cpu0
    if args.slowdown > 1:            # a slower host: its computation takes longer
        time.sleep(compute * (args.slowdown - 1))
        compute *= args.slowdown
    t1 = time.monotonic()
    after, counts = counters(args.ifname), _collective_counts(stats)
    record.update({
        "loss": loss.item(), "wall": t1 - started, "seconds": t1 - t0,
        "compute_s": min(compute, t1 - t0), "comm_s": max(0.0, t1 - t0 - compute),
        "comm_busy_s": (stats.busy_seconds() - busy_before) if stats is not None else None,
        "rx_bytes": after[0] - before[0], "tx_bytes": after[2] - before[2],
        "allreduces": (counts["allreduce"][0] - counts_before["allreduce"][0]) if counts
        else None,
        "collective_bytes": {name: counts[name][1] - counts_before[name][1] for name in counts},
        "collective_calls": {name: counts[name][0] - counts_before[name][0] for name in counts}})
    if args.parallel == "ddp":
        record["param_digest"] = parameter_digest(module.parameters())
    return record


def build_report(args, hook, closable, steps, seconds, accuracy, steps_per_epoch) -> dict:
    per_step = {name: [s[name] for s in steps] for name in steps[0]} if steps else {}
    ina = {}
    if args.mode == "ina" and closable is not None:
        ina = {"packets_sent": closable.packets_sent, "payload_bytes_sent": closable.bytes_sent,
               "retransmissions": closable.retransmissions, "k": args.k, "window": args.window}
    return {
        "mode": args.mode, "parallel": args.parallel, "model": args.model, "rank": args.rank,
        "world": args.world, "epochs": args.epochs,
        "steps": len(steps), "steps_per_epoch": steps_per_epoch, "batch": args.batch,
        "hidden": args.hidden, "lr": args.lr, "momentum": args.momentum, "seed": args.seed,
        "slowdown": args.slowdown, "seconds": seconds,
        "test_accuracy": accuracy, "final_loss": steps[-1]["loss"] if steps else None,
        "allreduces": hook.stats.allreduces if hook else sum(s["allreduces"] or 0
                                                            for s in steps),
        "fallbacks": dict(hook.stats.fallbacks) if hook else {},
        "elements_reduced": hook.stats.elements if hook else None, "ina": ina,
        "per_step": per_step,
    }


def main(argv: list[str]) -> int:
    args = TrainWorker.from_argv(argv)
    check_arguments(args)
    label = f"train rank {args.rank}"
    report = train(args, lambda line: print(f"{label}: {line}", file=sys.stderr, flush=True))
    cli.write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(cli.run_cli(main, sys.argv[1:]))
