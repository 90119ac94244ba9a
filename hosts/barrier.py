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
an extra network path.  The workers wait for the go file with inotify (and a look every
20 ms, for a go written on another machine): locally they start within a wake-up of each
other, and a thousand waiting workers cost no CPU.  The workers of one process (threads of a
worker group, hosts/group.py) share one inotify instance per folder, and one thread that
waits on it (_Watch): a user may have only
fs.inotify.max_user_instances of them (128 by default), and a worker that gets none falls
back to polling, which with hundreds of workers kept both cores busy and made the last ones
miss the barrier (compare at fattree:16 with 1,024 workers, before the sharing).

The folder also lines up the end.  A worker whose clock stopped says so and waits, asleep,
until every rank that arrived has (at most DEPART_WAIT_S), and only then checks its result:

    worker:    StartBarrier(folder).depart(rank)   # writes done-<rank>, waits for finished

**A common start instant.**  Waking on go still leaves the ranks' clocks starting apart: on
the 2-core machine 8 ranks woke a median 0.9 ms apart, and 22 ms apart where each computed at
once (the first ones woken took the cores from those still waking), and a run's time (its
slowest rank's) counted the spread (docs/results/baselines.md, "One clock for every mode").
So where every rank runs on the launcher's machine, go carries a start instant a little
ahead on CLOCK_MONOTONIC (START_LEAD_S, more for more ranks), which every process of one
machine shares (network namespaces do not change it): each rank sleeps until that instant
and starts its clock there, and a rank that wakes after it counts the lateness in its own
time. A go without an instant (a cluster: workers on other machines, whose monotonic clocks
differ) starts each rank's clock when it wakes, as before. The go file names the clock it
was read on (clock_id(): the boot id and time-namespace offsets), and a rank on another
clock refuses the instant in one line instead of sleeping for a time that means nothing on
its own clock.
"""

from __future__ import annotations

import ctypes
import os
import select
import threading
import time
from typing import Callable, NamedTuple, Optional

from hosts import cli

POLL_S = 0.0005
WATCH_RECHECK_S = 0.02      # a look at the go file between inotify events (NFS)
RELEASE_POLL_S = 0.002      # the launcher's look at the ready files
IN_CREATE, IN_MOVED_TO, IN_NONBLOCK, IN_CLOEXEC = 0x100, 0x80, 0o4000, 0o2000000
GO = "go"
FINISHED = "finished"
WATCH_THREAD = "barrier-watch"     # the thread of a process that watches a folder (_Watch)
# How long a rank that stopped its clock waits for the others before its own checks: the
# ranks of a sound run stop within milliseconds of each other, and one that never does (it
# failed, or it was killed) costs the others this much of wall-clock time, never of their
# timed part.
DEPART_WAIT_S = 0.5
# How long a ready worker waits for go, and the launcher for every worker to be ready, by
# default; workers that connect to each other first wait longer (hosts/allreduce.py).
GO_WAIT_S = 120.0
# How far ahead of go the common start instant lies: more than a rank takes to wake (the
# last of 8 ranks at most 9.5 ms after go on the 2-core machine with its cores kept busy,
# docs/results/baselines.md), plus a little per rank for the wake-ups of many.
START_LEAD_S = 0.02
START_LEAD_PER_RANK_S = 0.0005
GO_START = "start"      # go's content: "start <monotonic instant> clock <clock_id()>"


def start_lead_s(ranks: int) -> float:
    """How far ahead of now a common start instant for `ranks` ranks is set."""
    return START_LEAD_S + START_LEAD_PER_RANK_S * ranks


def clock_id() -> str:
    """What names this process's CLOCK_MONOTONIC: the kernel's boot id, with the offsets of
    its time namespace where it has one (processes with the same id read the same clock)."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        ident = f.read().strip()
    try:
        with open("/proc/self/timens_offsets") as f:
            offsets = "".join(f.read().split())
    except OSError:
        offsets = ""
    if offsets and offsets != "monotonic00boottime00":
        ident += "+" + offsets
    return ident


def sleep_until(instant: float) -> None:
    """Sleep until CLOCK_MONOTONIC reaches `instant` (at once where it has)."""
    while True:
        left = instant - time.monotonic()
        if left <= 0:
            return
        time.sleep(left)


class Start(NamedTuple):
    """How a rank left the start barrier: its clock starts `at`; it saw go at `woke`;
    `common` when `at` is the launcher's instant rather than its own wake-up."""
    at: float
    woke: float
    common: bool


def _watch_folder(folder: str):
    """An inotify descriptor reporting files created in folder, or None without inotify."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    if libc.inotify_add_watch(fd, os.fsencode(folder), IN_CREATE | IN_MOVED_TO) < 0:
        os.close(fd)
        return None
    return fd


class _Watch:
    """This process's watch of one folder, shared by its threads (the workers of a worker
    group): one thread waits for the folder's inotify events, with a look every
    WATCH_RECHECK_S (every POLL_S without inotify), and wakes the threads that wait for a
    file when it appears, and those that wait for any change.  When every thread waiting in
    its own select woke on each event and each look, 64 waiting threads kept 10% of a core
    busy and 256 of them 36%, and 1,024 (fattree:16) both cores, through the minutes their
    launch takes.  The watch's thread also closes the inotify descriptor when the last user
    is gone: closing one waits for the kernel's RCU grace period (10-25 ms on the 2-core
    machine), and a worker that closed it itself before starting its clock started that
    much after the others (in-network runs of `compare` had ranks starting 22 ms apart)."""

    def __init__(self, folder: str):
        self.folder = folder
        self.fd = _watch_folder(folder)
        self.users = 0
        self.closing = False
        self.awaited: dict = {}          # file name -> [threading.Event, threads waiting]
        self.changed = threading.Event()     # set on every batch of events (release())
        threading.Thread(target=self._run, name=WATCH_THREAD, daemon=True).start()

    def _run(self) -> None:
        events = None
        if self.fd is not None:         # poll, not select: a launcher's descriptors pass 1,024
            events = select.poll()
            events.register(self.fd, select.POLLIN)
        while True:
            with _shared_lock:
                if self.closing:
                    break
                waiting = [(name, entry[0]) for name, entry in self.awaited.items()
                           if not entry[0].is_set()]
            for name, appeared in waiting:
                if os.path.exists(os.path.join(self.folder, name)):
                    appeared.set()
            if self.fd is None:
                time.sleep(POLL_S)
                self.changed.set()
            elif events.poll(WATCH_RECHECK_S * 1000):
                try:
                    os.read(self.fd, 65536)
                except BlockingIOError:
                    pass
                self.changed.set()
        if self.fd is not None:
            os.close(self.fd)

    def wait_for(self, name: str, timeout_s: float) -> bool:
        """Wait until the file `name` is in the folder; False when timeout_s passed first."""
        with _shared_lock:
            entry = self.awaited.setdefault(name, [threading.Event(), 0])
            entry[1] += 1
        try:
            return (os.path.exists(os.path.join(self.folder, name))
                    or entry[0].wait(max(timeout_s, 0.0)))
        finally:
            with _shared_lock:
                entry[1] -= 1
                if entry[1] == 0 and self.awaited.get(name) is entry:
                    del self.awaited[name]


_shared_lock = threading.Lock()
_shared_watches: dict = {}          # folder -> its _Watch in this process


def _forget_watches_in_child() -> None:
    """A forked child has none of its parent's threads: its waits make watches of their own."""
    global _shared_lock, _shared_watches
    _shared_lock, _shared_watches = threading.Lock(), {}


os.register_at_fork(after_in_child=_forget_watches_in_child)


def _acquire_watch(folder: str) -> _Watch:
    """This process's watch of folder (made on first use)."""
    with _shared_lock:
        watch = _shared_watches.get(folder)
        if watch is None:
            watch = _shared_watches[folder] = _Watch(folder)
        watch.users += 1
        return watch


def _release_watch(watch: _Watch) -> None:
    with _shared_lock:
        watch.users -= 1
        if watch.users == 0:
            del _shared_watches[watch.folder]
            watch.closing = True        # its thread closes the descriptor


class BarrierTimeout(RuntimeError):
    """The other side of the barrier did not arrive in time."""


class ClockMismatch(RuntimeError):
    """go holds a start instant on another machine's clock."""


def parse_go(text: str, folder: str = "") -> Optional[float]:
    """The start instant written in a go file's text, or None for an empty go (start when
    woken).  ClockMismatch when it is on another clock than this process's."""
    words = text.split()
    if not words:
        return None
    if len(words) != 4 or words[0] != GO_START or words[2] != "clock":
        raise ClockMismatch(f"start barrier {folder}: go file {text.strip()!r} is not "
                            f"'{GO_START} SECONDS clock ID'")
    if words[3] != clock_id():
        raise ClockMismatch(f"start barrier {folder}: go's start instant is on another "
                            f"machine's clock ({words[3]}, this one is {clock_id()})")
    return float(words[1])


class StartBarrier:
    def __init__(self, folder: str):
        self.folder = folder

    def _ready_path(self, rank: int) -> str:
        return os.path.join(self.folder, f"ready-{rank}")

    def arrive(self, rank: int, timeout_s: Optional[float] = None) -> Start:
        """Announce that `rank` is ready, then wait for go: woken by inotify when the go
        file appears (a thousand workers polling every POLL_S would keep two cores busy,
        and the last of them would never get set up), with a look every WATCH_RECHECK_S
        for a go written on another machine (NFS has no inotify); polled every POLL_S
        where inotify is missing.  Where go holds a start instant, sleep until it."""
        timeout_s = GO_WAIT_S if timeout_s is None else timeout_s
        if not self._announce_and_wait(f"ready-{rank}", GO, timeout_s):
            raise BarrierTimeout(f"start barrier {self.folder}: no go within "
                                 f"{timeout_s:.0f} s")
        woke = time.monotonic()
        with open(os.path.join(self.folder, GO)) as f:
            instant = parse_go(f.read(), self.folder)
        if instant is None:
            return Start(woke, woke, False)
        sleep_until(instant)
        return Start(instant, woke, True)

    def depart(self, rank: int, timeout_s: float = DEPART_WAIT_S) -> bool:
        """After the timed part: announce that `rank` is done, then wait (asleep) until every
        rank that arrived is, or timeout_s; True when all were.  The last rank to depart
        sees every done file and writes FINISHED.  A worker's own work after its clock
        stops (checking its sums, its report, its exit) would otherwise take a core from
        workers and switches still in their timed part: on the 2-core machine a checking
        worker kept a core for a whole scheduler tick (4 ms) while a switch holding the last
        results waited, and the ranks of one in-network run stopped 8-19 ms apart
        (docs/native.md, "The start and the end of a run")."""
        return self._announce_and_wait(f"done-{rank}", FINISHED, timeout_s,
                                       on_announced=self._finish_if_last)

    def _finish_if_last(self) -> None:
        present = os.listdir(self.folder)
        ready = sum(name.startswith("ready-") for name in present)
        if sum(name.startswith("done-") for name in present) >= ready:
            with open(os.path.join(self.folder, FINISHED), "w"):
                pass

    def _announce_and_wait(self, mine: str, awaited: str, timeout_s: float,
                           on_announced: Callable[[], None] = lambda: None) -> bool:
        """Write the file `mine`, then wait for the file `awaited` (see arrive); False when
        timeout_s passed without it."""
        watch = _acquire_watch(self.folder)
        try:
            with open(os.path.join(self.folder, mine), "w"):
                pass
            on_announced()
            return watch.wait_for(awaited, timeout_s)
        finally:
            _release_watch(watch)

    def _missing_listed(self, ranks) -> list[int]:
        """`missing` from one directory listing (not a stat per rank)."""
        present = set(os.listdir(self.folder))
        return [rank for rank in ranks if f"ready-{rank}" not in present]

    def missing(self, ranks) -> list[int]:
        return [rank for rank in ranks if not os.path.exists(self._ready_path(rank))]

    def release(self, ranks, alive: Callable[[], bool] = lambda: True,
                timeout_s: Optional[float] = None,
                before_go: Callable[[], None] = lambda: None,
                common_start: bool = False) -> None:
        """Wait until every rank of `ranks` arrived, then call before_go() and say go (with
        a start instant start_lead_s() ahead where common_start: every rank on this
        machine).  `alive()` false (a worker exited early) or the timeout ends the wait with
        BarrierTimeout; go is written anyway, so that the workers that did arrive do not wait
        for it until their own timeout."""
        ranks = list(ranks)
        try:
            self.wait_ready(ranks, alive, timeout_s)
        finally:
            before_go()
            self.say_go(time.monotonic() + start_lead_s(len(ranks)) if common_start else None)

    def say_go(self, start_at: Optional[float] = None) -> None:
        """Write go: with the start instant start_at (CLOCK_MONOTONIC, this machine's), or
        empty (each rank starts when it wakes).  Written under another name and renamed, so
        that no rank reads a go half written."""
        text = "" if start_at is None else f"{GO_START} {start_at!r} clock {clock_id()}\n"
        part = os.path.join(self.folder, GO + ".part")
        with open(part, "w") as f:
            f.write(text)
        os.rename(part, os.path.join(self.folder, GO))

    def wait_ready(self, ranks, alive: Callable[[], bool] = lambda: True,
                   timeout_s: Optional[float] = None) -> None:
        """Wait until every rank of `ranks` arrived (release() without its go)."""
        ranks = list(ranks)
        timeout_s = GO_WAIT_S if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        watch = _acquire_watch(self.folder)
        try:
            while True:
                watch.changed.clear()
                missing = self._missing_listed(ranks)
                if not missing:
                    break
                if not alive():
                    raise BarrierTimeout(f"start barrier: a worker exited before all were "
                                         f"ready (ranks {missing} were not)")
                if time.monotonic() > deadline:
                    raise BarrierTimeout(f"start barrier: ranks {missing} not ready after "
                                         f"{timeout_s:g} s")
                # A listing of a thousand files takes about 0.5 ms: one after each change
                # (at most every RELEASE_POLL_S), and a look at alive() every WATCH_RECHECK_S.
                watch.changed.wait(WATCH_RECHECK_S)
                time.sleep(RELEASE_POLL_S)
        finally:
            _release_watch(watch)


def wait_for_others(args, timeout_s: float = DEPART_WAIT_S) -> bool:
    """The worker side of the barrier's end (StartBarrier.depart): nothing without it.  True
    when every rank departed within `timeout_s`."""
    if args.start_barrier:
        return StartBarrier(args.start_barrier).depart(args.rank, timeout_s)
    return True


def wait_for_start(args, timeout_s: Optional[float] = None) -> float:
    """The worker side of --start-barrier (contracts.jobs' worker specs): the instant
    (time.monotonic()) at which the rank's clock starts; now, without the option."""
    if not args.start_barrier:
        return time.monotonic()
    try:
        return StartBarrier(args.start_barrier).arrive(args.rank, timeout_s).at
    except (BarrierTimeout, ClockMismatch) as exc:
        raise cli.RunFailed(str(exc)) from None
