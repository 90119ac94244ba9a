"""Command-line conventions every `python -m ...` of ina-emu follows (docs/design.md, Errors):
an error is one line on stderr and no traceback; exit status 2 for bad usage or input, 1 for
a run or setup that failed, 130 when interrupted; SIGTERM unwinds like Ctrl-C, so `with` and
`finally` blocks tear down what the command started.  Standard library only."""

from __future__ import annotations

import argparse
import contextlib
import copy
import signal
import sys
import threading
from typing import Callable, NoReturn

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# Defaults the experiment command lines share (their --help shows them; the docs quote them).
# K's default: contracts.jobs.default_k for compare, sweep and the lab (per switch kind),
# contracts.wire.DEFAULT_K (the program's own AGG_K) for the other commands and the workers.
DEFAULT_MODES = "ina,ring"     # compare, sweep, linkrate, calibrate, simulate: ina vs the ring


class UsageError(Exception):
    """Bad arguments or input: exit status 2."""


class RunFailed(Exception):
    """The run or its setup failed, or gave a wrong result: exit status 1."""


def shown_default(action: argparse.Action):
    """The text --help gives as an option's default, or None where there is none worth
    showing: required options, flags, and defaults of None, nothing or SUPPRESS."""
    default = action.default
    if (action.required or default is None or default is argparse.SUPPRESS
            or isinstance(default, bool) or action.nargs == 0
            or (isinstance(default, (list, tuple, str)) and len(default) == 0)):
        return None
    if isinstance(default, (list, tuple)):
        return ",".join(str(item) for item in default)
    return str(default)


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """--help lists every option's default, "(default: X)", unless its help already says it."""

    def add_argument(self, action):
        default = shown_default(action)
        text = action.help or ""
        if (default is not None and action.help is not argparse.SUPPRESS
                and "default" not in text.lower()):
            action = copy.copy(action)
            suffix = "(default: " + default.replace("%", "%%") + ")"
            action.help = f"{text} {suffix}" if text else suffix
        super().add_argument(action)


def commands_help(prog: str, summaries: dict) -> str:
    """`python -m PACKAGE --help` of a package of commands: usage and a line per command
    ({name: summary}, in order); each command's own --help lists its options."""
    width = max(len(name) for name in summaries) + 5
    lines = [f"usage: {prog} {{{'|'.join(summaries)}}} ...", "",
             f"commands (`{prog} COMMAND --help` lists its options and their defaults):"]
    lines += [f"  {name:<{width}} {summary}" for name, summary in summaries.items()]
    return "\n".join(lines)


def dispatch(prog: str, commands: dict, summaries: dict, argv: list) -> int:
    """`python -m PACKAGE COMMAND ...`: --help lists the commands (`commands_help`), a
    missing or unknown command is a one-line UsageError, else commands[COMMAND](the rest)."""
    if argv[:1] in (["-h"], ["--help"]):
        print(commands_help(prog, {name: summaries[name] for name in commands}))
        return 0
    if not argv or argv[0] not in commands:
        given = repr(argv[0]) if argv else "nothing"
        raise UsageError(f"{prog}: expected a command ({'|'.join(commands)}), got {given}")
    return commands[argv[0]](argv[1:])


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line and exit status 2 (no usage dump), and
    --help shows the defaults (DefaultsHelpFormatter)."""

    prog_in_errors = True

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}" if self.prog_in_errors else message)


class PlainMessageParser(OneLineParser):
    """OneLineParser for a command that puts its own prefix on every error line (p4switch
    writes `p4switch: error: ...` as p4c and bmv2 do)."""

    prog_in_errors = False


def _number(text: str, kind: type):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                         f"got {text!r}") from None


def positive_int(text: str) -> int:
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float)
    if not value > 0:       # also refuses nan
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def comma_list(kind: Callable = str, *, choices=None, minimum=None, sort: bool = False,
               expand: dict = None, bad: str = "expected a comma list, got {text!r}",
               unknown: str = None, empty: str = None,
               error: type = argparse.ArgumentTypeError) -> Callable[[str], list]:
    """A parser (usable as an argparse `type=`) of one comma list, the form every list option
    here takes: items stripped, blanks skipped, each made `kind`, names in `expand` replaced by
    their tuples, repeats dropped (first kept; `sort`: ascending).  Errors raise `error` with a
    one-line text: `bad` when an item is not a `kind`, `unknown` when one is outside `choices`
    or under `minimum`, `empty` when none is left (both default to `bad`).  The texts are
    formats of {text} (the option's value) and {first} (the first refused item, else text)."""
    unknown = unknown or bad
    empty = empty or unknown

    def parse(text: str) -> list:
        parts = [part.strip() for part in (text or "").split(",") if part.strip()]
        try:
            values = [kind(part) for part in parts]
        except (ValueError, argparse.ArgumentTypeError):
            raise error(bad.format(text=text, first=text)) from None
        if expand:
            values = [item for value in values for item in expand.get(value, (value,))]
        values = sorted(set(values)) if sort else list(dict.fromkeys(values))
        refused = [value for value in values
                   if (choices is not None and value not in choices)
                   or (minimum is not None and value < minimum)]
        if refused:
            raise error(unknown.format(text=text, first=refused[0]))
        if not values:
            raise error(empty.format(text=text, first=text))
        return values
    return parse


def one_line(error: BaseException) -> str:
    """An exception as one line of at most 300 characters (its type if it has no text)."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def interrupt_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C, so `finally`/`with` blocks run (networks, processes)."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


_DEFERRING: list = []        # non-empty while the main thread holds interrupts back


@contextlib.contextmanager
def interrupts_deferred():
    """Ctrl-C and SIGTERM wait until the block is done, then interrupt as before: a teardown
    that a second Ctrl-C cut short left a network's veths behind (the next start refused
    them).  Only the main thread can hold signals back; elsewhere the block runs as is."""
    if threading.current_thread() is not threading.main_thread() or _DEFERRING:
        yield            # nested (Network.stop inside Fabric.stop): the outer block holds them
        return
    caught: list = []
    previous = {number: signal.signal(number, lambda signum, frame: caught.append(signum))
                for number in (signal.SIGINT, signal.SIGTERM)}
    _DEFERRING.append(True)
    try:
        yield
    finally:
        _DEFERRING.pop()
        for number, handler in previous.items():
            signal.signal(number, handler)
        if caught and sys.exc_info()[0] is None:
            raise KeyboardInterrupt


def run_command(body: Callable[[], int], failures: tuple = (), label: str = "error",
                usage: tuple = ()) -> int:
    """Run a command's body the way every command line here does: SIGTERM acts as Ctrl-C, and
    errors end it with one line `LABEL: message` and the exit status: 2 for UsageError (and
    the `usage` classes), 1 for RunFailed (and the `failures` classes), 130 when interrupted."""
    interrupt_on_sigterm()
    try:
        return body()
    except (UsageError, *usage) as error:
        print(f"{label}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (RunFailed, *failures) as error:
        print(f"{label}: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{label}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
