"""A plain-text progress bar for long sweeps: one line per finished run on stderr, with
done/total, elapsed time and an estimate of the time left (no terminal control codes, so
it reads the same in a log file)."""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional

BAR_WIDTH = 24


def clock_text(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def render(done: int, total: int, elapsed: float, label: str = "") -> str:
    """`[######------------------] 3/12  25%  elapsed 1:20  left ~4:00  label`."""
    filled = BAR_WIDTH * done // total if total else BAR_WIDTH
    left = f"~{clock_text(elapsed / done * (total - done))}" if done else "?"
    line = (f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done}/{total} "
            f"{100 * done // total if total else 100:3d}%  elapsed {clock_text(elapsed)}  "
            f"left {left}")
    return f"{line}  {label}" if label else line


class ProgressBar:
    def __init__(self, total: int, write: Optional[Callable[[str], None]] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.done = 0
        self._write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self._clock = clock
        self._started = clock()

    def advance(self, label: str = "") -> None:
        self.done += 1
        self._write(render(self.done, self.total, self._clock() - self._started, label))
