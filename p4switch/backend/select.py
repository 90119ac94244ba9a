"""Which back end runs a program: the Python reference or the native (C) one.

`choose_backend(program, requested)`:
- "python": the Python back end.
- "c": the C back end, or BackendError saying why not (no compiler, a construct the C back
  end refuses).
- "auto" or None: $P4SWITCH_BACKEND if set, else DEFAULT; with "auto", the C back end
  wherever it can run the program, else the Python one, with a one-line notice on stderr
  (once per reason) that says why; the reason is also in `last_reason`.
"""
from __future__ import annotations

import os
import sys

from ..frontend.errors import CompileError

BACKENDS = ("auto", "c", "python")
DEFAULT = "auto"


class BackendError(CompileError):
    """The requested back end cannot run this program here."""


_notified: set = set()


def _notice(message: str) -> None:
    if message not in _notified:
        _notified.add(message)
        print(f"p4switch: {message}", file=sys.stderr, flush=True)


def c_refusal(program, log=None) -> str | None:
    """Why the C back end cannot run `program` here, or None when it can."""
    from .c import build
    from .c.emit import Unsupported
    if build.compiler() is None:
        return "no C compiler found (install gcc)"
    waiting = _not_yet_in_c(program)
    if waiting is not None:
        return waiting
    try:
        from .c.binding import c_source
        c_source(program)
    except Unsupported as e:
        return str(e)
    return None


def _not_yet_in_c(program) -> str | None:
    """Constructs the Python back end runs and the C emitter does not know yet, where it
    would fail without saying so: none at present (header fields of struct type and
    registers of a struct type, issue 12, are written by the C emitter too)."""
    return None


def choose_backend(program, requested: str | None, log=None) -> str:
    requested = requested or os.environ.get("P4SWITCH_BACKEND") or DEFAULT
    if requested not in BACKENDS:
        raise BackendError(None, f"unknown back end {requested!r} (choose from "
                                 f"{', '.join(BACKENDS)})")
    if requested == "python" or program is None:
        return "python"
    why = c_refusal(program, log)
    if requested == "c":
        if why is not None:
            raise BackendError(None, f"the c back end cannot run {program.name}: {why}")
        return "c"
    global last_reason
    last_reason = why
    if why is not None:
        _notice(f"running {program.name} on the python back end: {why}")
        return "python"
    return "c"


last_reason: str | None = None
