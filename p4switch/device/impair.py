"""Link impairments on the switch's own ports, in the manner of tc netem: random loss,
duplication, reordering, and delay with jitter, per port and direction (rx: frames arriving
from the wire before the pipeline sees them; tx: frames the pipeline emits before they go on
the wire). docs/impairments.md describes the model; in short, each frame on a port direction:

1. it is dropped with probability `loss`;
2. otherwise it is duplicated with probability `dup` (the copy right behind it);
3. each copy gets a delay of `delay` +- uniform `jitter` ms (clipped at 0);
4. a copy beyond `limit` copies in flight (delayed or held) is dropped;
5. a copy overtakes the copy being held back, if any (the held one leaves right behind it);
   otherwise it is held back with probability `reorder`, until the next copy passes or its
   hold time (10 ms, or its delay if longer) is over.

Each decision draws from its own seeded random stream per port direction, so the k-th frame's
loss decision depends only on the seed, the device id, the port, the direction and k. Frames
wait in one timer heap that the device's receive loop services (no thread sleeps); what is
still in flight at shutdown is discarded and counted.
"""
import functools
import heapq
import itertools
import json
import math
import os
import random
import secrets
import threading
import time
from dataclasses import dataclass, fields
from typing import Callable

DIRECTIONS = ("rx", "tx")
_DIRECTION_WORDS = {"rx": ("rx",), "tx": ("tx",), "both": ("rx", "tx")}
DEFAULT_LIMIT = 1000                  # netem's default queue limit
MIN_HOLD_S = 0.010                    # how long a reordered frame waits for one to overtake it
COUNTERS = ("frames", "dropped", "duplicated", "reordered", "delayed", "overflowed",
            "discarded")
SYNTAX = "PORT:rx|tx|both:KEY=VALUE[,KEY=VALUE...]"


class ImpairmentError(ValueError):
    """An --impair specification that cannot be used."""


@dataclass(frozen=True)
class Impairment:
    """What to do to the frames of one port direction (percentages and milliseconds)."""
    loss: float = 0.0
    dup: float = 0.0
    reorder: float = 0.0
    delay: float = 0.0
    jitter: float = 0.0
    limit: int = DEFAULT_LIMIT
    seed: int | None = None

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _number(key: str, text: str, suffix: str) -> float:
    if suffix and text.endswith(suffix):
        text = text[:-len(suffix)]
    try:
        value = float(text)
    except ValueError:
        raise ImpairmentError(f"{key}={text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ImpairmentError(f"{key} must be a finite number >= 0, got {text}")
    return value


def _percent(key: str, text: str) -> float:
    value = _number(key, text, "%")
    if value > 100:
        raise ImpairmentError(f"{key} is a percentage (0..100), got {text}")
    return value


def _milliseconds(key: str, text: str) -> float:
    return _number(key, text, "ms")


def _integer(key: str, text: str, minimum: int) -> int:
    if not text.isdigit() or int(text) < minimum:
        raise ImpairmentError(f"{key} must be an integer >= {minimum}, got {text!r}")
    return int(text)


_KEYS = {
    "loss": _percent, "dup": _percent, "reorder": _percent,
    "delay": _milliseconds, "jitter": _milliseconds,
    "limit": lambda key, text: _integer(key, text, 1),
    "seed": lambda key, text: _integer(key, text, 0),
}


def parse_impairment(text: str) -> tuple[int, tuple[str, ...], Impairment]:
    """(port, directions, Impairment) from `PORT:DIRECTION:KEY=VALUE,...`."""
    parts = text.split(":", 2)
    if len(parts) != 3:
        raise ImpairmentError(f"--impair {text!r} is not {SYNTAX}")
    port, direction, settings = parts
    try:
        if not port.isdigit():
            raise ImpairmentError(f"port {port!r} is not a number")
        if direction not in _DIRECTION_WORDS:
            raise ImpairmentError(f"direction {direction!r} is not rx, tx or both")
        values = {}
        for item in settings.split(","):
            key, sep, value = item.partition("=")
            if not sep:
                raise ImpairmentError(f"{item!r} is not KEY=VALUE")
            if key not in _KEYS:
                raise ImpairmentError(f"unknown key {key!r} (known: {', '.join(_KEYS)})")
            if key in values:
                raise ImpairmentError(f"{key} is given twice")
            values[key] = _KEYS[key](key, value)
    except ImpairmentError as e:
        raise ImpairmentError(f"--impair {text!r}: {e}") from None
    return int(port), _DIRECTION_WORDS[direction], Impairment(**values)


def parse_impairments(specs: list[str], ports) -> dict[tuple[int, str], Impairment]:
    """{(port, direction): Impairment} from repeated --impair options; ports must exist and
    each port direction may be impaired once."""
    result = {}
    for text in specs:
        port, directions, impairment = parse_impairment(text)
        if port not in ports:
            raise ImpairmentError(f"--impair {text!r}: port {port} is not given with -i")
        for direction in directions:
            if (port, direction) in result:
                raise ImpairmentError(f"--impair {text!r}: port {port} {direction} is "
                                      "already impaired")
            result[port, direction] = impairment
    return result


class TimerHeap:
    """Actions due at monotonic times, run by the receive loop; other threads that add an
    earlier action wake the loop through an eventfd."""

    def __init__(self):
        self._heap: list = []
        self._order = itertools.count()      # equal times leave in the order they were added
        self._lock = threading.Lock()
        self.wakeup_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    def push(self, when: float, action: Callable[[], None]) -> None:
        with self._lock:
            heapq.heappush(self._heap, (when, next(self._order), action))
            earliest = self._heap[0][2] is action
        if earliest:
            os.eventfd_write(self.wakeup_fd, 1)

    def clear_wakeup(self) -> None:
        try:
            os.eventfd_read(self.wakeup_fd)
        except BlockingIOError:
            pass

    def timeout_ms(self, now: float, cap_ms: int) -> int:
        """Milliseconds until the next action (rounded up, so nothing leaves early)."""
        with self._lock:
            if not self._heap:
                return cap_ms
            wait = self._heap[0][0] - now
        return max(0, min(cap_ms, math.ceil(wait * 1000)))

    def run_due(self, now: float) -> None:
        while True:
            with self._lock:
                if not self._heap or self._heap[0][0] > now:
                    return
                _, _, action = heapq.heappop(self._heap)
            action()

    def clear(self) -> None:
        with self._lock:
            self._heap.clear()

    def close(self) -> None:
        os.close(self.wakeup_fd)


class _Held:
    """A frame held back for reordering."""

    def __init__(self, frame: bytes, departure: float):
        self.frame, self.departure = frame, departure


class LinkImpairment:
    """The impairment of one port direction: decisions, frames in flight, counters.

    `offer(frame)` may be called from any thread (tx frames come from gRPC PacketOut too);
    frames leave through `deliver(frame)`, never while this object's lock is held."""

    def __init__(self, port: int, direction: str, impairment: Impairment, seed: int,
                 timers: TimerHeap, deliver: Callable[[bytes], None], trace=None,
                 device_id: int = 0):
        self.port, self.direction, self.impairment, self.seed = port, direction, impairment, seed
        self.counters = dict.fromkeys(COUNTERS, 0)
        self._timers, self._deliver, self._trace = timers, deliver, trace
        # the device id keeps switches given the same seed from making the same decisions
        self._streams = {kind: random.Random(f"{seed}/{device_id}/{port}/{direction}/{kind}")
                         for kind in ("loss", "dup", "reorder", "jitter")}
        self._loss, self._dup = impairment.loss / 100, impairment.dup / 100
        self._reorder = impairment.reorder / 100
        self._delay_s, self._jitter_s = impairment.delay / 1000, impairment.jitter / 1000
        self._timed = impairment.delay > 0 or impairment.jitter > 0
        self._hold_s = max(MIN_HOLD_S, self._delay_s)
        self._held: _Held | None = None
        self._in_flight = 0
        self._lock = threading.Lock()

    def offer(self, frame: bytes) -> None:
        """Impair one frame; it (or its copies) leave now or later through `deliver`."""
        now = time.monotonic()
        with self._lock:
            leaving = self._decide(frame, now)
        for copy in leaving:
            self._deliver(copy)

    def _note(self, message: str) -> None:
        if self._trace is not None:
            self._trace(f"impairment port {self.port} {self.direction}: {message}")

    def _decide(self, frame: bytes, now: float) -> list[bytes]:
        """Frames to deliver right away; the others are held or on the timer heap."""
        counters = self.counters
        counters["frames"] += 1
        # Every stream is drawn for every frame, so one decision never shifts another's.
        lost = self._streams["loss"].random() < self._loss
        duplicated = self._streams["dup"].random() < self._dup
        if lost:
            counters["dropped"] += 1
            self._note(f"dropped {len(frame)} bytes (loss)")
            return []
        leaving = []
        self._pass(frame, now, leaving)
        if duplicated:
            counters["duplicated"] += 1
            self._note(f"duplicated {len(frame)} bytes")
            self._pass(frame, now, leaving)
        return leaving

    def _draw_delay(self) -> float:
        jitter = self._streams["jitter"].uniform(-self._jitter_s, self._jitter_s) \
            if self._jitter_s else 0.0
        return max(0.0, self._delay_s + jitter)

    def _pass(self, frame: bytes, now: float, leaving: list) -> None:
        """One copy through the reorder and delay stages."""
        hold = self._streams["reorder"].random() < self._reorder
        delay = self._draw_delay()
        if self._in_flight >= self.impairment.limit:
            self.counters["overflowed"] += 1
            self._note(f"dropped {len(frame)} bytes (limit of {self.impairment.limit} "
                       "frames in flight)")
            return
        if delay > 0:
            self.counters["delayed"] += 1
        departure = now + delay
        if self._held is not None:      # this copy overtakes the held one
            held, self._held = self._held, None
            self._in_flight -= 1
            self.counters["reordered"] += 1
            self._note(f"{len(held.frame)} bytes held back leave after {len(frame)} bytes "
                       "(reordered)")
            self._send(frame, departure, now, leaving)
            self._send(held.frame, departure, now, leaving)
            return
        if hold:
            self._held = _Held(frame, departure)
            self._in_flight += 1
            self._timers.push(now + max(self._hold_s, delay),
                              functools.partial(self._hold_over, self._held))
            self._note(f"held {len(frame)} bytes back for reordering")
            return
        self._send(frame, departure, now, leaving)

    def _send(self, frame: bytes, departure: float, now: float, leaving: list) -> None:
        if not self._timed:
            leaving.append(frame)
            return
        if departure > now:
            self._note(f"delayed {len(frame)} bytes by {(departure - now) * 1000:.3f} ms")
        self._in_flight += 1
        self._timers.push(departure, functools.partial(self._depart, frame))

    def _depart(self, frame: bytes) -> None:
        with self._lock:
            self._in_flight -= 1
        self._deliver(frame)

    def _hold_over(self, held: _Held) -> None:
        """Nothing overtook `held` in its hold time: it leaves in its own turn."""
        with self._lock:
            if self._held is not held:
                return
            self._held = None
            self._in_flight -= 1
            leaving = []
            now = time.monotonic()
            self._send(held.frame, max(now, held.departure), now, leaving)
        for frame in leaving:
            self._deliver(frame)

    def discard_in_flight(self) -> int:
        """Forget the frames still held or delayed (at shutdown); returns how many."""
        with self._lock:
            discarded, self._in_flight, self._held = self._in_flight, 0, None
            self.counters["discarded"] += discarded
        return discarded

    def snapshot(self) -> dict:
        with self._lock:
            return {"config": {**self.impairment.as_dict(), "seed": self.seed},
                    **self.counters}


class Impairments:
    """All impaired port directions of a device, their timer heap and the stats file."""

    STATS_INTERVAL_S = 1.0

    def __init__(self, specs: dict[tuple[int, str], Impairment],
                 deliver: Callable[[int, str], Callable[[bytes], None]],
                 trace=None, stats_path: str | None = None, device_id: int = 0):
        """deliver(port, direction) -> the function that takes that direction's frames."""
        self.timers = TimerHeap()
        default_seed = secrets.randbits(32)      # for specs without seed=; in the stats file
        self.links = {
            key: LinkImpairment(key[0], key[1], impairment,
                                default_seed if impairment.seed is None else impairment.seed,
                                self.timers, deliver(*key), trace, device_id)
            for key, impairment in sorted(specs.items())}
        self._trace = trace
        self._stats_path = stats_path
        if trace is not None:
            for (port, direction), link in self.links.items():
                settings = ", ".join(f"{k}={v}" for k, v in link.snapshot()["config"].items())
                trace(f"impairment port {port} {direction}: {settings}")
        self._next_stats = 0.0

    def link(self, port: int, direction: str) -> LinkImpairment | None:
        return self.links.get((port, direction))

    def timeout_ms(self, cap_ms: int) -> int:
        return self.timers.timeout_ms(time.monotonic(), cap_ms)

    def service(self) -> None:
        """Send what is due; rewrite the stats file once a second."""
        now = time.monotonic()
        self.timers.run_due(now)
        if self._stats_path is not None and now >= self._next_stats:
            self._next_stats = now + self.STATS_INTERVAL_S
            self.write_stats(final=False)

    def snapshot(self, final: bool) -> dict:
        ports: dict = {}
        for (port, direction), link in self.links.items():
            ports.setdefault(str(port), {})[direction] = link.snapshot()
        return {"final": final, "time": time.time(), "ports": ports}

    def write_stats(self, final: bool) -> None:
        """Replace the stats file atomically, so readers never see half of it."""
        temporary = f"{self._stats_path}.tmp"
        with open(temporary, "w") as f:
            json.dump(self.snapshot(final), f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(temporary, self._stats_path)

    def summary_lines(self) -> list[str]:
        """One line per port: what the impairment did in each direction."""
        by_port: dict[int, list[str]] = {}
        for (port, direction), link in self.links.items():
            counts = ", ".join(f"{link.counters[name]} {name}" for name in COUNTERS)
            by_port.setdefault(port, []).append(f"{direction}: {counts}")
        return [f"impairment port {port}: {'; '.join(parts)}"
                for port, parts in sorted(by_port.items())]

    def stop(self) -> list[str]:
        """Discard what is in flight, write the final stats; returns the summary lines."""
        self.timers.clear()
        for link in self.links.values():
            link.discard_in_flight()
        if self._stats_path is not None:
            self.write_stats(final=True)
        lines = self.summary_lines()
        if self._trace is not None:
            for line in lines:
                self._trace(line)
        self.timers.close()
        return lines
