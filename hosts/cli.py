"""Command-line plumbing shared by `python -m hosts worker` and `python -m hosts ring`.

Errors follow docs/design.md: one line on stderr, no traceback; exit status 2 for bad
usage or input, 1 for a run that failed or gave a wrong result.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, NoReturn

EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad arguments or input: exit status 2."""


class RunFailed(Exception):
    """The run did not complete or gave a wrong result: exit status 1."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _number(text: str, kind: type):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                         f"got {text!r}") from None


def non_negative_int(text: str) -> int:
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_int(text: str) -> int:
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def add_vector_arguments(parser, dtypes) -> None:
    """The options every allreduce command shares: the vector (--elements, --dtype, and
    --seed or --input) and where its result and report go (--output, --json)."""
    parser.add_argument("--elements", type=positive_int, required=True)
    parser.add_argument("--dtype", choices=sorted(dtypes), default="int32")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--seed", type=non_negative_int)
    source.add_argument("--input", metavar="FILE", help="1-D .npy input vector")
    parser.add_argument("--output", metavar="FILE", help="write the result as .npy")
    parser.add_argument("--json", metavar="FILE", help="write the report ('-' for stdout)")


def save_output(path: str, result) -> None:
    """Write a result vector as .npy (--output); an unwritable path is a usage error."""
    import numpy as np
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
    try:
        return main(argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RunFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
