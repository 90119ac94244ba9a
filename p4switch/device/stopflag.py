"""The stop request of `p4switch run` and `p4switch group`: set by SIGTERM or SIGINT, read
by the packet loops.

A Python signal handler runs in the main thread between two bytecodes, possibly while that
thread is inside a lock.  threading.Event.set takes a lock, so a second signal arriving during
the first handler's set() deadlocks the process (Mininet sends SIGTERM twice: once to stop
every switch at the same time, once more before it waits for each).  The flag is therefore a
plain attribute: setting it takes no lock, and reading it from any thread is safe under the
GIL."""

import signal
import time


class StopFlag:
    POLL_S = 0.05

    def __init__(self):
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout_s: float) -> bool:
        """Sleep until set or timeout_s passed; whether it is set."""
        deadline = time.monotonic() + timeout_s
        while not self._set:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(self.POLL_S, left))
        return self._set

    def set_on_signals(self, signums=(signal.SIGTERM, signal.SIGINT)) -> "StopFlag":
        for signum in signums:
            signal.signal(signum, lambda *_: self.set())
        return self
