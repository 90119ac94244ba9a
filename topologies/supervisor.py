"""Restart switch processes that die while the network runs.

A `SwitchSupervisor` thread polls every P4 switch process of a started network.  When one
has exited without being stopped, it starts it again with the same command line (same ports,
device id and gRPC address; output appended to the same file), waits for its gRPC port and
calls the recovery hook, `on_restart(switch_name)`, which reprograms it (the controller's
controller/recovery.py: pipeline, routes, the active jobs' entries).  A restarted switch
starts empty: its registers, and with them the partial sums it held, are gone.

Every restart is recorded as a `RestartEvent`; `restarts()` counts them per switch.  `stop()`
ends the thread before the network tears its switches down, so nothing is restarted while
stopping (a restart in progress is abandoned).  A switch whose restart or recovery failed
`MAX_RESTARTS` times in a row is left down.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

POLL_INTERVAL_S = 0.2
MAX_RESTARTS = 5          # consecutive failed attempts before a switch is left down
STOP_JOIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RestartEvent:
    """One death of a switch process and what the supervisor did about it."""
    switch: str
    died_at: float               # time.monotonic() when the death was noticed
    exit_code: int               # negative: killed by that signal
    restarted_at: Optional[float]    # gRPC port open again (None: restart failed)
    recovered_at: Optional[float]    # recovery hook returned (None: failed or no hook)
    error: Optional[str] = None      # why the restart or the recovery failed

    @property
    def ok(self) -> bool:
        return self.restarted_at is not None and self.error is None

    def describe(self) -> str:
        how = f"exit code {self.exit_code}" if self.exit_code >= 0 else \
            f"killed by signal {-self.exit_code}"
        if self.restarted_at is None:
            return f"switch {self.switch} died ({how}); restart failed: {self.error}"
        took = (self.recovered_at or self.restarted_at) - self.died_at
        if self.error:
            return (f"switch {self.switch} died ({how}); restarted but not recovered: "
                    f"{self.error}")
        what = "restarted and reprogrammed" if self.recovered_at else "restarted (not reprogrammed)"
        return f"switch {self.switch} died ({how}); {what} in {took:.1f} s"


class SwitchSupervisor:
    """Watches `switches` (P4ProcessSwitch nodes) from a daemon thread; see the module doc."""

    def __init__(self, switches: list, on_restart: Optional[Callable[[str], None]] = None,
                 poll_interval: float = POLL_INTERVAL_S):
        self.switches = list(switches)
        self.on_restart = on_restart
        self.poll_interval = poll_interval
        self._events: list = []
        self._failures: dict = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "SwitchSupervisor":
        self._thread = threading.Thread(target=self._run, name="switch-supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the thread (a restart in progress is abandoned); idempotent."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_JOIN_TIMEOUT_S)

    # -- what happened -----------------------------------------------------------------

    def events(self) -> list:
        """Every RestartEvent so far, oldest first."""
        with self._lock:
            return list(self._events)

    def restarts(self) -> dict:
        """{switch: number of successful restarts} (every supervised switch listed)."""
        counts = {s.name: 0 for s in self.switches}
        for event in self.events():
            if event.restarted_at is not None:
                counts[event.switch] += 1
        return counts

    def wait_for_event(self, count: int, timeout: float) -> list:
        """Wait until at least `count` events are recorded (or timeout); return them all."""
        deadline = time.monotonic() + timeout
        while len(self.events()) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.events()

    # -- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.wait(self.poll_interval):
            for switch in self.switches:
                if self._stopping.is_set():
                    return
                if switch.has_died() and self._failures.get(switch.name, 0) < MAX_RESTARTS:
                    self._restart(switch)

    def _restart(self, switch) -> None:
        died_at = time.monotonic()
        exit_code = switch.process.returncode
        restarted_at = recovered_at = error = None
        try:
            switch.restart_process(abort=self._stopping)
            restarted_at = time.monotonic()
            if self.on_restart is not None and not self._stopping.is_set():
                self.on_restart(switch.name)
                recovered_at = time.monotonic()
        except Exception as e:     # a failed restart or recovery is recorded, not raised
            error = " ".join(str(e).split()) or type(e).__name__
        if self._stopping.is_set() and restarted_at is None:
            return                  # abandoned because the network stops: not an event
        failed = restarted_at is None or error is not None
        self._failures[switch.name] = self._failures.get(switch.name, 0) + 1 if failed else 0
        with self._lock:
            self._events.append(RestartEvent(switch.name, died_at, exit_code, restarted_at,
                                             recovered_at, error))
