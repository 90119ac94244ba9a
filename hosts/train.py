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

DDP's process group is Gloo in every mode (rendezvous at --master, which also broadcasts the
initial weights and serves as the fallback).  Every hook reduces synchronously, so each step
splits into computation (forward, backward, optimizer, minus the hook) and communication (the
hook).  Bytes per step are the host interface's counters (--ifname, Ethernet frames).  The
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

import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
from sklearn.datasets import load_digits as sklearn_digits

from contracts.wire import DEFAULT_K, DEFAULT_WINDOW
from hosts import cli, torch_hook
from hosts.allreduce import HostAllreduce
from hosts.gloo import (_first_line, add_group_arguments, interface_counters, parse_master,
                        torch_distributed)
from hosts.transport import parse_peers

TEST_IMAGES = 360
MODES = ("ina", "gloo", "ring")
CONNECT_TIMEOUT_S = 60.0


def build_parser() -> cli.OneLineParser:
    p = cli.OneLineParser(prog="python -m hosts train",
                          description="One rank of DDP training on the digits dataset.")
    p.add_argument("--mode", choices=MODES, required=True)
    add_group_arguments(p)
    p.add_argument("--epochs", type=cli.positive_int, default=20)
    p.add_argument("--max-steps", type=cli.positive_int, help="stop after this many steps")
    p.add_argument("--batch", type=cli.positive_int, default=32, help="images per rank per step")
    p.add_argument("--hidden", type=cli.non_negative_int, default=64,
                   help="hidden units (0: softmax regression)")
    p.add_argument("--lr", type=cli.positive_float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=cli.non_negative_int, default=1)
    p.add_argument("--slowdown", type=float, default=1.0,
                   help="make this rank's computation this many times slower (>= 1)")
    # ina
    p.add_argument("--job", type=cli.non_negative_int)
    p.add_argument("--switch-ip")
    p.add_argument("--switch-port", type=cli.positive_int, default=9100)
    p.add_argument("--contributor", type=cli.non_negative_int)
    p.add_argument("--window", type=cli.positive_int, default=DEFAULT_WINDOW)
    p.add_argument("--k", type=cli.positive_int, default=DEFAULT_K)
    p.add_argument("--timeout-ms", type=cli.positive_float, default=100.0)
    p.add_argument("--bind", default="0.0.0.0", help="UDP address of the ina socket")
    # ring
    p.add_argument("--peers", help="ring: host:port per rank (comma list)")
    p.add_argument("--precision-check", action="store_true")
    p.add_argument("--json", metavar="FILE")
    return p


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


def make_model(torch, hidden: int, seed: int):
    torch.manual_seed(seed)
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


def train(args, say) -> dict:
    torch, dist = torch_distributed()
    images, labels = load_digits()
    train_idx, test_idx = split(args.seed)
    steps_per_epoch = len(train_idx) // (args.world * args.batch)
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    host, port = parse_master(args.master)
    try:
        dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=args.rank,
                                world_size=args.world,
                                timeout=timedelta(seconds=CONNECT_TIMEOUT_S))
    except (RuntimeError, ValueError) as exc:
        raise cli.RunFailed(f"train rank {args.rank}: joining the group at {args.master} "
                            f"failed: {_first_line(exc)}") from None
    hook, closable, ddp = None, None, None
    try:
        model = make_model(torch, args.hidden, args.seed)
        # DDP's default buckets: this model's gradients (19 KB with 64 hidden units) are one
        # bucket, one allreduce per step.
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        hook, closable = make_hook(args, say)
        ddp.register_comm_hook(hook, torch_hook.comm_hook)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
        probe = PrecisionProbe(torch, model) if args.precision_check else None
        hook.keep_local = probe is not None
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
                steps.append(run_step(args, ddp, optimizer, hook, x, y, started, record))
                if probe:
                    probe.after_step(hook, record)
        seconds = time.monotonic() - started
        dist.barrier()
        with torch.no_grad():
            predicted = model(torch.from_numpy(images[test_idx])).argmax(dim=1).numpy()
        accuracy = float((predicted == labels[test_idx]).mean())
    except RuntimeError as exc:
        raise cli.RunFailed(f"train rank {args.rank} ({args.mode}): {_first_line(exc)}") from None
    finally:
        if closable is not None:
            closable.close()
        ddp = None       # DDP's reducer goes while its process group still exists
        dist.destroy_process_group()
    return build_report(args, hook, closable, steps, seconds, accuracy, steps_per_epoch)


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


def build_report(args, hook, closable, steps, seconds, accuracy, steps_per_epoch) -> dict:
    per_step = {name: [s[name] for s in steps] for name in steps[0]} if steps else {}
    ina = {}
    if args.mode == "ina" and closable is not None:
        ina = {"packets_sent": closable.packets_sent, "payload_bytes_sent": closable.bytes_sent,
               "retransmissions": closable.retransmissions, "k": args.k, "window": args.window}
    return {
        "mode": args.mode, "rank": args.rank, "world": args.world, "epochs": args.epochs,
        "steps": len(steps), "steps_per_epoch": steps_per_epoch, "batch": args.batch,
        "hidden": args.hidden, "lr": args.lr, "momentum": args.momentum, "seed": args.seed,
        "slowdown": args.slowdown, "seconds": seconds,
        "test_accuracy": accuracy, "final_loss": steps[-1]["loss"] if steps else None,
        "allreduces": hook.stats.allreduces, "fallbacks": dict(hook.stats.fallbacks),
        "elements_reduced": hook.stats.elements, "ina": ina, "per_step": per_step,
    }


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    check_arguments(args)
    label = f"train rank {args.rank}"
    report = train(args, lambda line: print(f"{label}: {line}", file=sys.stderr, flush=True))
    cli.write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(cli.run_cli(main, sys.argv[1:]))
