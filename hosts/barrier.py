"""A start barrier for the workers of one run, through a folder they all see.

Processes started one after another on a busy machine begin seconds apart.  A worker that
timed its allreduce from its own start would count the wait for the last one to start, and
an in-network job cannot finish a round before every contributor sent, so the skew of the
launcher, not the network, would show in its time.  With a barrier, every worker does its
set-up (vector, socket, engine or peer connections), announces that it is ready, and starts
its clock when the launcher says go, for all at once:

    worker:    StartBarrier(folder).arrive(rank)   # writes ready-<rank>, waits for go
    launcher:  StartBarrier(folder).release(ranks, alive)   # waits for their ready-*, writes go

Mininet hosts share the file system, so a folder is the one channel both sides have without
an extra network path.  The go file is polled every half millisecond: the workers start
within about that of each other.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from hosts import cli

POLL_S = 0.0005
GO = "go"


class BarrierTimeout(RuntimeError):
    """The other side of the barrier did not arrive in time."""


class StartBarrier:
    def __init__(self, folder: str):
        self.folder = folder

    def _ready_path(self, rank: int) -> str:
        return os.path.join(self.folder, f"ready-{rank}")

    def arrive(self, rank: int, timeout_s: float = 120.0) -> None:
        """Announce that `rank` is ready, then wait for go."""
        with open(self._ready_path(rank), "w"):
            pass
        go = os.path.join(self.folder, GO)
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(go):
            if time.monotonic() > deadline:
                raise BarrierTimeout(f"start barrier {self.folder}: no go within {timeout_s:.0f} s")
            time.sleep(POLL_S)

    def missing(self, ranks) -> list[int]:
        return [rank for rank in ranks if not os.path.exists(self._ready_path(rank))]

    def release(self, ranks, alive: Callable[[], bool] = lambda: True,
                timeout_s: float = 120.0) -> None:
        """Wait until every rank of `ranks` arrived, then say go.  `alive()` false (a worker
        exited early) or the timeout ends the wait with BarrierTimeout; go is written anyway,
        so that the workers that did arrive do not wait for it until their own timeout."""
        ranks = list(ranks)
        deadline = time.monotonic() + timeout_s
        try:
            while missing := self.missing(ranks):
                if not alive():
                    raise BarrierTimeout(f"start barrier: a worker exited before all were "
                                         f"ready (ranks {missing} were not)")
                if time.monotonic() > deadline:
                    raise BarrierTimeout(f"start barrier: ranks {missing} not ready after "
                                         f"{timeout_s:g} s")
                time.sleep(POLL_S * 4)
        finally:
            with open(os.path.join(self.folder, GO), "w"):
                pass


def add_argument(parser) -> None:
    parser.add_argument("--start-barrier", metavar="DIR",
                        help="write DIR/ready-RANK when set up, start the clock when DIR/go "
                             "appears (the launcher's start barrier)")


def wait_for_start(args, timeout_s: float = 120.0) -> None:
    """The worker side for a command with add_argument's option: nothing without it."""
    if args.start_barrier:
        try:
            StartBarrier(args.start_barrier).arrive(args.rank, timeout_s)
        except BarrierTimeout as exc:
            raise cli.RunFailed(str(exc)) from None
