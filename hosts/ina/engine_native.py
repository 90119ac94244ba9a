"""The worker's aggregation engine in C (hosts/ina/engine_native.c), with the same interface as
hosts/ina/engine.py's AggregationEngine, which stays the reference.

Why: a Python worker spends about 20 us of CPU per aggregation round (docs/design.md, "What a
run's time means"), and four workers plus a switch on two cores made the machine, not the
links, the limit of every unshaped or 100 Mbit/s run.  `NativeEngine.run_socket` runs the
whole data loop (recvmmsg, results into the sums, next contributions, sendmmsg, timers,
ppoll) in C and returns to Python only every `budget` seconds, for the progress line.

The same decisions as the reference, packet for packet: tests/hosts/test_engine_native.py
drives both engines with the same packets and clock and compares every packet, counter and
sum.  The schedule objects (values, sums, block exponents) are shared: C reads and writes
their NumPy arrays, so `result()` and the float error bound are the schedule's own.

The rules it shares with the simulator's C++ actors (which rounds exist, slot, version, chunk
offset, the retransmission timer, backoff, retry limit) are in protocol_rules.h beside it,
held to the Python references by tests/hosts/test_protocol_rules.py.

The library is built on first use with nativebuild (cached by the sources' hash); without a C
compiler, or with HOSTS_FASTIO=0, `available()` is False and `make_engine` returns the
Python engine; HOSTS_ENGINE=python asks for the Python engine (A/B measurements).
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

import nativebuild
from hosts import cli
from hosts.ina import fastio
from hosts.ina.engine import (AggregationEngine, AggregationStalled, BlockFloatSchedule,
                          EngineConfig, EngineStats, Int32Schedule, RetransmissionTimer,
                          RoundPlan)
from hosts.ina.protocol import ProtocolError

SOURCE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine_native.c")
# The protocol's rules shared with the simulator's C++ actors (simulation/simcore.cpp)
RULES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol_rules.h")
# Deadlines and round-trip estimates must round exactly as Python's floats do.
FLAGS = ("-ffp-contract=off", "-fno-fast-math")
_KINDS = {Int32Schedule: 0, BlockFloatSchedule: 1}
_DONE, _BUDGET = 1, 0
_STALLED, _PROTOCOL, _RANGE, _NOMEM = -100000, -100001, -100002, -100003
_COUNTERS = ("packets_sent", "bytes_sent", "retransmissions", "redone_rounds",
             "results_accepted", "packets_ignored", "overflow", "closings_unanswered",
             "packets_received", "bytes_received", "packets_foreign", "rounds_done",
             "rounds_total")

ENGINE_ENVIRONMENT = "HOSTS_ENGINE"     # "python": the reference engine, for A/B measurements
_loaded: dict = {}


def _declare(lib) -> None:
    p, i, u32, u64, i64, d = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64,
                              ctypes.c_int64, ctypes.c_double)
    signatures = {
        "ne_create": (p, [i, u32, u32, u32, u32, d, d, i, u64, i64, i64, i64, i, i, i,
                          p, p, p, p, p, p, p, p, p]),
        "ne_free": (None, [p]),
        "ne_outgoing": (ctypes.POINTER(ctypes.c_void_p), [p]),
        "ne_outgoing_lengths": (ctypes.POINTER(ctypes.c_uint32), [p]),
        "ne_counters": (None, [p, p]),
        "ne_get_timer": (None, [p, p]),
        "ne_set_timer": (None, [p, p]),
        "ne_error": (None, [p, p, p]),
        "ne_slot_state": (None, [p, u32, p, p]),
        "ne_start": (i, [p, d]),
        "ne_on_packet": (i, [p, ctypes.c_char_p, u32, d]),
        "ne_on_timer": (i, [p, d]),
        "ne_next_deadline": (i, [p, p]),
        "ne_run": (i, [p, i, u32, ctypes.c_uint16, i, i, d, i]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes


def load(extra_flags: tuple = ()):
    """The library, or None (then `unavailable_reason()` says why).  `extra_flags` build a
    variant, e.g. nativebuild.SANITIZER_FLAGS for a process with those runtimes preloaded."""
    if extra_flags in _loaded:
        return _loaded[extra_flags]
    lib, why = None, None
    if os.environ.get(fastio.ENVIRONMENT, "1") == "0":
        why = f"disabled by {fastio.ENVIRONMENT}=0"
    else:
        try:
            sources = {}
            # the engine uses fio_receive and includes the rules; all three key the cache
            for path in (SOURCE_PATH, RULES_PATH, fastio.SOURCE_PATH):
                with open(path) as f:
                    sources[os.path.basename(path)] = f.read()
            lib = ctypes.CDLL(nativebuild.build_shared("hosts-engine", sources,
                                                       extra_flags=FLAGS + tuple(extra_flags)))
            _declare(lib)
        except Exception as exc:   # no compiler, compile error, unloadable object
            lib, why = None, f"{type(exc).__name__}: {exc}"
    _loaded[extra_flags], _loaded["why"] = lib, why
    return lib


def available() -> bool:
    return load() is not None


def unavailable_reason() -> str | None:
    load()
    return _loaded.get("why")


def make_engine(schedule, config: EngineConfig, native: bool | None = None):
    """The C engine when `native` (default: unless HOSTS_ENGINE=python) and its library
    loads, else the Python reference."""
    if native is None:
        native = os.environ.get(ENGINE_ENVIRONMENT, "c") != "python"
    if native and available():
        return NativeEngine(schedule, config)
    if native:
        cli.announce_fallback("the C engine", unavailable_reason(), "the Python engine")
    return AggregationEngine(schedule, config)


PAGE_BYTES = 4096


def _touch_pages(array: np.ndarray) -> None:
    """Write every page of `array` without changing it, so that its page faults (the kernel
    zeroing fresh memory: 0.1-0.8 us per round when the data loop took them) happen now,
    before the start barrier, and not in the loop that stores the results."""
    flat = array.reshape(-1).view(np.uint8)
    flat[::PAGE_BYTES] |= 0


def _address(array: np.ndarray | None):
    return None if array is None else array.ctypes.data


class NativeEngine:
    """AggregationEngine's interface over the C engine, plus `run_socket` (the data loop)."""

    kind = "c"

    def __init__(self, schedule, config: EngineConfig, lib=None):
        self.lib = lib or load()
        if self.lib is None:
            raise RuntimeError(f"the C engine is unavailable: {unavailable_reason()}")
        self.schedule, self.config = schedule, config
        self.plan = RoundPlan(schedule, config)
        self._packet_len = 16 + 4 * schedule.k
        self._versions = np.array(self.plan.version_base, dtype=np.uint8)
        kind = _KINDS[type(schedule)]
        if kind == 0:
            arrays = (schedule._wire, None, None, None, schedule._sums.values)
            blocks, shift = schedule.round_count, 0
        else:
            arrays = (None, schedule._blocks, schedule._local_exponents, schedule._agreed,
                      schedule._sums.values)
            blocks, shift = schedule.block_count, schedule._shift
        # per round flags, owner, keep (hosts/ina/ina_collectives.py); None for allreduce
        arrays += tuple(self.plan.flags) if self.plan.flags is not None else (None,) * 3
        for array in arrays:        # C walks them as flat, contiguous rows
            assert array is None or array.flags.c_contiguous
        self._arrays = arrays       # kept alive as long as the engine
        _touch_pages(schedule._sums.values)
        self._engine = self.lib.ne_create(
            kind, config.job_id, config.contributor, config.window, schedule.k,
            config.timeout_s, config.max_timeout_s, config.max_retries, config.chunk_base,
            blocks, schedule.round_count, self.plan.rounds_total, shift,
            int(config.closing_rounds), int(config.redo_previous),
            _address(self._versions), *map(_address, arrays))
        if not self._engine:
            raise MemoryError("the C engine could not allocate its state")
        self._outgoing = self.lib.ne_outgoing(self._engine)
        self._outgoing_lengths = self.lib.ne_outgoing_lengths(self._engine)
        self._counters = (ctypes.c_uint64 * len(_COUNTERS))()
        self._deadline = ctypes.c_double()

    def __del__(self):
        engine, self._engine = getattr(self, "_engine", None), None
        if engine:
            self.lib.ne_free(engine)

    # ---- AggregationEngine's interface ------------------------------------------------------
    def counters(self) -> dict:
        self.lib.ne_counters(self._engine, self._counters)
        return dict(zip(_COUNTERS, self._counters))

    @property
    def stats(self) -> EngineStats:
        counts = self.counters()
        return EngineStats(**{name: counts[name] for name in (
            "packets_sent", "bytes_sent", "retransmissions", "redone_rounds",
            "results_accepted", "packets_ignored", "closings_unanswered")},
            overflow=bool(counts["overflow"]))

    @property
    def done(self) -> bool:
        counts = self.counters()
        return counts["rounds_done"] == counts["rounds_total"]

    @property
    def progress(self) -> tuple[int, int]:
        counts = self.counters()
        return counts["rounds_done"], counts["rounds_total"]

    @property
    def timer(self) -> RetransmissionTimer:
        """A copy of the retransmission timer's state; assign one to set it."""
        values = (ctypes.c_double * 4)()
        self.lib.ne_get_timer(self._engine, values)
        timer = RetransmissionTimer(self.config.timeout_s, self.config.max_timeout_s)
        timer.srtt = values[1] if values[0] else None
        timer.rttvar, timer._timeout = values[2], values[3]
        return timer

    @timer.setter
    def timer(self, timer: RetransmissionTimer) -> None:
        values = (ctypes.c_double * 4)(timer.srtt is not None, timer.srtt or 0.0,
                                       timer.rttvar, timer.timeout)
        self.lib.ne_set_timer(self._engine, values)

    def result(self) -> np.ndarray:
        if not self.done:
            raise RuntimeError("aggregation is not complete")
        return self.schedule.result()

    def next_versions(self) -> tuple:
        return self.plan.next_versions()

    def start(self, now: float) -> list[bytes]:
        return self._packets(self.lib.ne_start(self._engine, now))

    def on_packet(self, data, now: float) -> list[bytes]:
        data = bytes(data)
        return self._packets(self.lib.ne_on_packet(self._engine, data, len(data), now))

    def on_timer(self, now: float) -> list[bytes]:
        return self._packets(self.lib.ne_on_timer(self._engine, now))

    def next_deadline(self) -> float | None:
        if self.lib.ne_next_deadline(self._engine, ctypes.byref(self._deadline)):
            return self._deadline.value
        return None

    # ---- the data loop ---------------------------------------------------------------------
    def run_socket(self, fd: int, switch_ip_key: int, switch_port: int, batch: int,
                   slot_size: int, budget: float, start: bool) -> bool:
        """Run the UDP loop on `fd` for at most `budget` seconds; True when done.  Results
        come only from the switch's (ip, port); others count as packets_foreign.  Raises
        AggregationStalled, ProtocolError or ValueError as the Python engine would, and
        OSError (with `.sending`) when a socket call fails."""
        status = self.lib.ne_run(self._engine, fd, switch_ip_key, switch_port, batch,
                                 slot_size, budget, int(start))
        if status == _DONE:
            return True
        if status == _BUDGET:
            return False
        self._raise(status)

    # ---- internals -------------------------------------------------------------------------
    def _packets(self, status: int) -> list[bytes]:
        if status < 0:
            self._raise(status)
        return [ctypes.string_at(self._outgoing[i], self._outgoing_lengths[i])
                for i in range(status)]

    def _raise(self, status: int):
        detail, now = (ctypes.c_int64 * 5)(), ctypes.c_double()
        self.lib.ne_error(self._engine, detail, ctypes.byref(now))
        slot, round_, exponent, errno, sending = detail
        if status == _STALLED:
            state, first_sent = (ctypes.c_int64 * 4)(), ctypes.c_double()
            self.lib.ne_slot_state(self._engine, slot, state, ctypes.byref(first_sent))
            _, version, chunk_offset, retries = state
            raise AggregationStalled(self.plan.stall_message(
                slot, chunk_offset, version, retries, now.value - first_sent.value))
        if status == _PROTOCOL:
            k, local = self.schedule.k, self.schedule._local_exponents[round_]
            raise ProtocolError(f"switch returned exponent {exponent} for chunk offset "
                                f"{round_ * k}, below this worker's {local} (must be the max)")
        if status == _RANGE:
            raise ValueError("a value exceeds its block's agreed exponent "
                             "(the agreed exponent must be the max over workers)")
        if status == _NOMEM:
            raise MemoryError("the C engine ran out of memory")
        error = OSError(-status, os.strerror(-status))
        error.sending = bool(sending)
        raise error
