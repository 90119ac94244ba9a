"""Entry point: `python -m hosts worker|allreduce|ring|gloo|train ...` (see hosts/worker.py,
hosts/allreduce.py, hosts/ring.py, hosts/gloo.py and hosts/train.py)."""

from __future__ import annotations

import sys

from hosts import allreduce, cli, gloo, ring, worker



def train_main(argv: list[str]) -> int:
    # torch and scikit-learn take about a second to import: only `hosts train` loads them
    from hosts import train
    return train.main(argv)


COMMANDS = {"worker": worker.main, "allreduce": allreduce.main, "ring": ring.main,
            "gloo": gloo.main, "train": train_main}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        given = repr(argv[0]) if argv else "nothing"
        raise cli.UsageError(f"python -m hosts: expected a command ({'|'.join(COMMANDS)}), "
                             f"got {given}")
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(cli.run_cli(main, sys.argv[1:]))
