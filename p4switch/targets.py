"""The p4switch targets: which back ends can run a v1model program, and `Switch()`, the
factory that picks one.

TARGETS lists them:
- "c": the pipeline compiled to C, backend/c/binding.py (NativeSwitch, a subclass of the
  reference that keeps its control-plane objects);
- "python": the reference, runtime/switch.py; it runs everything the front end accepts;
- "xdp": the pipeline compiled to eBPF and run in the kernel, backend/xdp/binding.py
  (XdpSwitch; `run --backend xdp` attaches it to the ports' devices), for the programs it
  takes (backend/xdp/emit.py says which); only when asked for by name, never by "auto";
- "bmv2": real p4c-bm2-ss and simple_switch (p4switch/bmv2/), a process of its own that only
  `python -m p4switch stf --backend bmv2` drives; `Switch()` does not build it.

`Switch(program, backend=..., **options)` (the options are the reference's: cpu_port, log,
clock, seed) returns the switch of `choose_backend(program, backend)`:
- "python": the Python back end.
- "c": the C back end, or BackendError saying why not (no compiler, a construct the C back
  end refuses); "xdp" likewise.
- "auto" or None: $P4SWITCH_BACKEND if set, else DEFAULT; with "auto", the C back end
  wherever it can run the program, else the Python one, with a one-line notice on stderr
  (once per reason) that says why; the reason is also in `last_reason`, which a device's
  status file records.

The choice lives here, above runtime/ and backend/, so that runtime/ imports nothing from
backend/ (tests/layering checks it).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .backend.errors import BackendError
from .runtime.switch import Switch as ReferenceSwitch


@dataclass(frozen=True)
class Target:
    name: str
    summary: str
    in_process: bool          # a Switch object in this process (False: a separate program)


TARGETS = (
    Target("c", "generated C", True),
    Target("python", "the reference, in Python", True),
    Target("xdp", "eBPF in the kernel (XDP)", True),
    Target("bmv2", "real p4c-bm2-ss and simple_switch", False),
)
# What `Switch(backend=...)`, `run --backend` and `bench --backend` accept.
BACKENDS = ("auto",) + tuple(t.name for t in TARGETS if t.in_process)
# What `stf --backend` accepts: the STF runner drives bmv2 too.
STF_BACKENDS = BACKENDS + tuple(t.name for t in TARGETS if not t.in_process)
DEFAULT = "auto"


def Switch(program, *args, backend: str | None = None, **kwargs):  # noqa: N802 (a factory)
    """A v1model switch for `program` on the back end `choose_backend` picks:
    `process_packet(port, data) -> [(egress_port, bytes), ...]` and the control-plane
    methods of runtime/switch.py."""
    chosen = choose_backend(program, backend, log=kwargs.get("log"))
    if chosen == "c":
        # ctypes and the C build load only when the C back end runs.
        from .backend.c.binding import NativeSwitch
        return NativeSwitch(program, *args, **kwargs)
    if chosen == "xdp":
        from .backend.xdp.binding import XdpSwitch
        return XdpSwitch(program, *args, **kwargs)
    return ReferenceSwitch(program, *args, **kwargs)


_notified: set = set()


def _notice(message: str) -> None:
    if message not in _notified:
        _notified.add(message)
        print(f"p4switch: {message}", file=sys.stderr, flush=True)


def c_refusal(program, log=None) -> str | None:
    """Why the C back end cannot run `program` here, or None when it can."""
    # The C emitter and compiler finder load only when a program may run on C.
    from .backend.c import build
    from .backend.c.emit import Unsupported
    if build.compiler() is None:
        return "no C compiler found (install gcc)"
    waiting = _not_yet_in_c(program)
    if waiting is not None:
        return waiting
    try:
        from .backend.c.binding import c_source
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
    if requested == "xdp":
        from .backend.xdp.binding import xdp_refusal
        why = xdp_refusal(program)
        if why is not None:
            raise BackendError(None, f"the xdp back end cannot run {program.name}: {why}")
        return "xdp"
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
