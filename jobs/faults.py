"""Fault injection for compare and sweep: `--kill-switch NAME@SECONDS[,NAME@SECONDS...]`.

`parse_kills("s1@1.0,s2@2.5")` gives [Kill("s1", 1.0), Kill("s2", 2.5)] (ordered by time) or
raises argparse.ArgumentTypeError with one line; `check_switches(kills, spec)` refuses a name
that is not a switch of the topology.  During every run, a `SwitchKiller` thread sends SIGKILL
to each named switch process that many seconds after the workers were released; the network's
supervisor restarts it and the controller reprograms it (controller/recovery.py), as for a
switch that crashed on its own.  A kill that falls while the same switch is still down from an
earlier kill waits until its new process is up, so "s1@1,s1@1.2" kills two processes.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import threading
import time
from dataclasses import dataclass

RESTART_WAIT_S = 30.0        # how long a kill waits for the switch's previous restart


@dataclass(frozen=True)
class Kill:
    switch: str
    seconds: float           # after the run's workers were released

    def __str__(self) -> str:
        return f"{self.switch}@{self.seconds:g}"


def parse_kills(text: str) -> tuple:
    """The argparse type of --kill-switch."""
    kills = []
    for item in (part.strip() for part in text.split(",")):
        name, at, seconds = item.partition("@")
        if not item or not at or not name.strip():
            raise argparse.ArgumentTypeError(f"expected NAME@SECONDS[,NAME@SECONDS...], got "
                                             f"{item or text!r}")
        try:
            value = float(seconds)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(f"{item!r}: the time must be a number of seconds "
                                             ">= 0")
        kills.append(Kill(name.strip(), value))
    return tuple(sorted(kills, key=lambda k: k.seconds))


def check_switches(kills, spec) -> None:
    """ValueError (one line) for a kill naming no switch of the topology."""
    names = [s.name for s in spec.switches]
    for kill in kills:
        if kill.switch not in names:
            raise ValueError(f"--kill-switch {kill}: no switch {kill.switch!r} in the topology "
                             f"(switches: {', '.join(names)})")


class SwitchKiller:
    """Kills switch processes of `fabric` at their times after `started` (time.monotonic());
    `stop()` ends it (kills not yet due are not made), waits until every killed switch has
    been restarted and reprogrammed (so that the run's jobs are stopped on live switches) and
    returns [{"switch", "at_s", "pid"}] of the kills made.  With no kills it starts no
    thread."""

    def __init__(self, fabric, kills, started: float, say=lambda message: None):
        self.fabric, self.kills, self.started, self.say = fabric, tuple(kills), started, say
        self.done: list = []
        self._events_before = len(fabric.restart_events()) if self.kills else 0
        self._stop = threading.Event()
        self._thread = None
        if self.kills:
            self._thread = threading.Thread(target=self._run, name="switch-killer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        killed: dict = {}            # switch -> pid killed last
        for kill in self.kills:
            if self._stop.wait(max(0.0, self.started + kill.seconds - time.monotonic())):
                return
            pid = self._live_pid(kill.switch, killed.get(kill.switch))
            if pid is None:
                self.say(f"--kill-switch {kill}: {kill.switch} did not come back from its "
                         "previous kill; not killed again")
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed[kill.switch] = pid
            at = time.monotonic() - self.started
            self.done.append({"switch": kill.switch, "at_s": round(at, 3), "pid": pid})
            self.say(f"killed switch {kill.switch} (pid {pid}) at {at:.2f} s")

    def _live_pid(self, name: str, previous):
        """The pid of the switch's running process, once it is not `previous` any more."""
        deadline = time.monotonic() + RESTART_WAIT_S
        while not self._stop.is_set() and time.monotonic() < deadline:
            process = self.fabric.network.switch(name).process
            if process is not None and process.pid != previous and process.poll() is None:
                return process.pid
            time.sleep(0.05)
        return None

    def stop(self) -> list:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        deadline = time.monotonic() + RESTART_WAIT_S
        while (self.done and time.monotonic() < deadline and
               len(self.fabric.restart_events()) < self._events_before + len(self.done)):
            time.sleep(0.05)
        return list(self.done)
