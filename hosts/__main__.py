"""Entry point: `python -m hosts worker|switchml|atp|allreduce|ring|gloo|train ...` (see
hosts/ina/worker.py, hosts/switchml.py, hosts/atp/worker.py, hosts/allreduce.py,
hosts/ring.py, hosts/gloo.py and hosts/train.py)."""

from __future__ import annotations

import os
import sys

from contracts.cli import dispatch
from hosts import allreduce, cli, gloo, ring, switchml
from hosts.atp import worker as atp_worker
from hosts.ina import worker


def train_main(argv: list[str]) -> int:
    # torch and scikit-learn take about a second to import: only `hosts train` loads them
    from hosts import train
    return train.main(argv)


COMMANDS = {"worker": worker.main, "switchml": switchml.main, "atp": atp_worker.main,
            "allreduce": allreduce.main, "ring": ring.main, "gloo": gloo.main,
            "train": train_main}


# One line per command for `python -m hosts --help`; each command's own --help has its
# options and their defaults.
SUMMARIES = {"worker": "one rank of an in-network allreduce (or --collective) over UDP",
             "switchml": "one rank of a SwitchML allreduce over UDP (one switch)",
             "atp": "one rank of an ATP allreduce over UDP (--serve: its parameter server)",
             "allreduce": "one rank of a host-only allreduce over TCP (--algorithm)",
             "ring": "one rank of the ring allreduce (allreduce --algorithm ring)",
             "gloo": "one rank of torch.distributed's Gloo all_reduce",
             "train": "one rank of PyTorch DDP training on the digits dataset"}


def main(argv: list) -> int:
    return dispatch("python -m hosts", COMMANDS, SUMMARIES, argv)


# Commands that run torch.distributed: once their work is done and their report written,
# torch's Gloo threads can still abort the interpreter's own teardown ("terminate called
# without an active exception", exit 134), so they leave without it.
TORCH_COMMANDS = ("train", "gloo")


if __name__ == "__main__":
    status = cli.run_cli(main, sys.argv[1:])
    if sys.argv[1:2] and sys.argv[1] in TORCH_COMMANDS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)
