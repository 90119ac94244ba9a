"""Command-line plumbing shared by the `python -m hosts` commands (their options are the
worker specs of contracts/jobs.py): the input vector, the result and report files.

Errors follow contracts/cli.py: one line on stderr, no traceback; exit status 2 for bad
usage or input, 1 for a run that failed or gave a wrong result.
"""

from __future__ import annotations

import json
import sys
from typing import Callable

import numpy as np

# The scaffolding every command shares; hosts' commands reach it as cli.UsageError etc.
from contracts.cli import (OneLineParser, RunFailed, UsageError,  # noqa: F401
                           run_command)
from hosts import vectors


def load_vector(args, dtype: np.dtype) -> np.ndarray:
    """The rank's input vector: --input's file, or the one --seed generates for the rank."""
    if args.input is not None:
        try:
            return vectors.load_input(args.input, args.elements, dtype)
        except vectors.InputError as exc:
            raise UsageError(str(exc)) from None
    return vectors.generate(args.seed, args.rank, args.world, args.elements, dtype)


def save_output(path: str, result) -> None:
    """Write a result vector as .npy (--output); an unwritable path is a usage error."""
    try:
        np.save(path, result)
    except OSError as exc:
        raise UsageError(f"cannot write output {path}: {exc.strerror}") from None


def check_verified(label: str, verification) -> None:
    """Fail the run (exit 1, one line) when the verified sum is wrong; None: not verified."""
    if verification is not None and not verification.correct:
        raise RunFailed(f"{label}: result differs from the expected sum "
                        f"(max abs error {verification.max_abs_err:g})")


def check_rank(rank: int, world: int) -> None:
    if rank >= world:
        raise UsageError(f"--rank {rank} must be below --world {world}")


def write_json(path: str | None, report: dict) -> None:
    """Write the report to `path` ("-" for stdout); nothing when path is None."""
    if path is None:
        return
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write report {path}: {exc.strerror}") from None


def run_cli(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """Run `main`, turning the known failures into one-line errors and exit statuses."""
    return run_command(lambda: main(argv))


_announced: set = set()


def announce_fallback(faster: str, why: str | None, instead: str) -> None:
    """One line on stderr, once per process, when a faster implementation that was not turned
    off cannot be used (a slower run must never pass for a normal one)."""
    if why is None or why.startswith("disabled by") or faster in _announced:
        return
    _announced.add(faster)
    print(f"hosts: {faster} is unavailable ({why}); running {instead}", file=sys.stderr,
          flush=True)
