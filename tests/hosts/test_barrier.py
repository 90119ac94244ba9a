"""The launcher's start barrier: nobody starts before all arrived, and everyone starts after go."""

import collections
import os
import resource
import threading
import time

import pytest

from hosts import barrier as barrier_module, cli
from hosts.barrier import BarrierTimeout, StartBarrier, wait_for_start


def test_no_worker_passes_before_the_last_arrives(tmp_path):
    world, passed = 3, {}
    arrivals = {}

    def worker(rank, delay):
        time.sleep(delay)
        arrivals[rank] = time.monotonic()
        StartBarrier(str(tmp_path)).arrive(rank, timeout_s=10)
        passed[rank] = time.monotonic()

    threads = [threading.Thread(target=worker, args=(rank, 0.05 * rank)) for rank in range(world)]
    for thread in threads:
        thread.start()
    StartBarrier(str(tmp_path)).release(range(world), timeout_s=10)
    for thread in threads:
        thread.join()
    assert sorted(passed) == list(range(world))
    assert min(passed.values()) >= max(arrivals.values())


def test_release_stops_waiting_when_a_worker_died_and_still_says_go(tmp_path):
    barrier = StartBarrier(str(tmp_path))
    with pytest.raises(BarrierTimeout, match=r"exited before all were ready \(ranks \[0, 1\]"):
        barrier.release([0, 1], alive=lambda: False, timeout_s=5)
    assert (tmp_path / "go").exists()


def test_release_times_out_naming_the_count(tmp_path):
    barrier = StartBarrier(str(tmp_path))
    (tmp_path / "ready-0").touch()
    with pytest.raises(BarrierTimeout, match=r"ranks \[1\] not ready after 0.05 s"):
        barrier.release([0, 1], timeout_s=0.05)


def test_release_waits_only_for_the_ranks_it_is_given(tmp_path):
    (tmp_path / "ready-2").touch()
    StartBarrier(str(tmp_path)).release([2], timeout_s=1)
    assert (tmp_path / "go").exists()


def test_a_worker_without_go_fails_with_one_line(tmp_path):
    class Args:
        start_barrier, rank = str(tmp_path), 1

    with pytest.raises(cli.RunFailed, match=r"^start barrier .*: no go within"):
        wait_for_start(Args, timeout_s=0.05)
    assert (tmp_path / "ready-1").exists()


def test_without_the_option_nothing_waits_and_the_clock_starts_now():
    class Args:
        start_barrier, rank = None, 0

    before = time.monotonic()
    assert before <= wait_for_start(Args, timeout_s=0) <= time.monotonic()


def _inotify_instances() -> int:
    """This process's inotify descriptors."""
    return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
               for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))


def _closed_watches() -> None:
    """Wait for the watches no thread uses any more to close their descriptors."""
    for thread in threading.enumerate():
        if thread.name == barrier_module.WATCH_THREAD:
            thread.join(10)


def test_the_threads_of_one_process_share_one_inotify_instance(tmp_path):
    """More waiting threads than a user may have inotify instances (128 by default): one
    watch for all of them, and every one of them goes."""
    _closed_watches()
    before = _inotify_instances()
    barrier, ranks = StartBarrier(str(tmp_path)), range(200)
    gone, errors = [], []

    def arrive(rank):
        try:
            barrier.arrive(rank, timeout_s=30)
            gone.append(rank)
        except Exception as exc:        # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=arrive, args=(rank,)) for rank in ranks]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while barrier.missing(ranks) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert barrier.missing(ranks) == [] and _inotify_instances() == before + 1
    barrier.release(ranks, timeout_s=5)
    for thread in threads:
        thread.join(10)
    assert errors == [] and sorted(gone) == list(ranks)
    _closed_watches()
    assert _inotify_instances() == before


def test_waiting_threads_sleep_while_one_thread_watches(tmp_path, monkeypatch):
    """A hundred threads waiting for go, and then for each other at the end: only the
    watch's thread wakes for the folder's events and looks (it used to be every waiting
    thread in a select of its own, each event and every 20 ms: 64 waiting threads kept 10%
    of a core busy)."""
    real_poll, callers = barrier_module.select.poll, collections.Counter()

    class CountingPoll:
        def __init__(self):
            self.inner = real_poll()

        def register(self, *args):
            self.inner.register(*args)

        def poll(self, *args):
            callers[threading.current_thread().name] += 1
            return self.inner.poll(*args)

    monkeypatch.setattr(barrier_module.select, "poll", CountingPoll)
    barrier, ranks = StartBarrier(str(tmp_path)), range(100)
    departed = []

    def worker(rank):
        barrier.arrive(rank, timeout_s=30)
        departed.append(barrier.depart(rank, timeout_s=30))

    threads = [threading.Thread(target=worker, args=(rank,)) for rank in ranks]
    for thread in threads:
        thread.start()
    barrier.release(ranks, timeout_s=30)
    for thread in threads:
        thread.join(30)
    assert departed == [True] * len(ranks)
    assert set(callers) == {barrier_module.WATCH_THREAD}
    # each of the 100 ready and 100 done files wakes the watch at most once, its looks
    # every 20 ms add a few: nothing near one wake-up per waiting thread and event (20,000)
    assert callers[barrier_module.WATCH_THREAD] < 2000


def test_a_launcher_with_more_than_1024_descriptors_still_says_go(tmp_path):
    """compare's launcher at fattree:16 holds more than 1,024 descriptors (select() takes
    none above that): its watch must still see every ready file."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1500), max(hard, 1500)))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        barrier, ranks, gone = StartBarrier(str(tmp_path)), range(3), []

        def arrive(rank):
            barrier.arrive(rank, timeout_s=10)
            gone.append(rank)

        waiting = [threading.Thread(target=arrive, args=(rank,)) for rank in ranks]
        for thread in waiting:
            thread.start()
        watch = barrier_module._acquire_watch(str(tmp_path))
        assert watch.fd is not None and watch.fd > 1024
        barrier_module._release_watch(watch)
        barrier.release(ranks, timeout_s=10)
        for thread in waiting:
            thread.join(10)
        assert sorted(gone) == list(ranks)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_forked_child_waits_with_a_watch_of_its_own(tmp_path):
    """A process forked while one of its threads waits (the zygote's workers) has none of
    the parent's threads, so the parent's watch would never wake it."""
    barrier = StartBarrier(str(tmp_path))
    parent_waits = threading.Thread(target=barrier.arrive, args=(0,), kwargs={"timeout_s": 30})
    parent_waits.start()
    while barrier.missing([0]):
        time.sleep(0.01)
    child = os.fork()
    if child == 0:
        try:
            barrier.arrive(1, timeout_s=10)
            os._exit(0)
        except BaseException:       # noqa: BLE001 - the exit status says it
            os._exit(1)
    barrier.release([0, 1], timeout_s=10)
    parent_waits.join(30)
    assert os.waitpid(child, 0)[1] == 0 and not parent_waits.is_alive()


def test_go_does_not_wait_for_the_inotify_descriptor_to_close(tmp_path, monkeypatch):
    """Closing an inotify descriptor waits for an RCU grace period (10-25 ms): a worker
    starts its clock first, and the descriptor is closed on a thread of its own."""
    closing, may_close, closed = threading.Event(), threading.Event(), threading.Event()
    real_close = os.close

    def slow_close(fd):
        if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
            closing.set()
            may_close.wait(5)
            real_close(fd)
            closed.set()
        else:
            real_close(fd)

    (tmp_path / "go").touch()
    _closed_watches()
    before = _inotify_instances()
    monkeypatch.setattr(barrier_module.os, "close", slow_close)
    StartBarrier(str(tmp_path)).arrive(0, timeout_s=5)
    assert closing.wait(5) and not closed.is_set()     # arrive() returned before the close
    may_close.set()
    _closed_watches()
    assert _inotify_instances() == before


def test_no_worker_leaves_before_the_last_one_stopped_its_clock(tmp_path):
    """depart(): a rank's checks after its timed part wait for every rank that arrived."""
    world, stopped, left = 3, {}, {}
    for rank in range(world):
        (tmp_path / f"ready-{rank}").touch()

    def worker(rank):
        time.sleep(0.05 * rank)
        stopped[rank] = time.monotonic()
        assert StartBarrier(str(tmp_path)).depart(rank, timeout_s=10)
        left[rank] = time.monotonic()

    threads = [threading.Thread(target=worker, args=(rank,)) for rank in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(left) == list(range(world))
    assert min(left.values()) >= max(stopped.values())
    assert (tmp_path / "finished").exists()


def test_depart_waits_for_the_arrived_ranks_only_and_gives_up_on_a_missing_one(tmp_path):
    (tmp_path / "ready-0").touch()           # rank 1 never arrived (an absent rank)
    assert StartBarrier(str(tmp_path)).depart(0, timeout_s=5)
    for rank in (0, 1, 2):
        (tmp_path / f"ready-{rank}").touch()
    (tmp_path / "finished").unlink()
    started = time.monotonic()
    assert not StartBarrier(str(tmp_path)).depart(1, timeout_s=0.1)   # rank 2 never stops
    assert time.monotonic() - started >= 0.1
    assert not (tmp_path / "finished").exists()



def test_release_calls_before_go_once_all_arrived_and_before_go(tmp_path):
    """compare reads the switches' CPU there, so that the workers' set-up is not counted."""
    seen = []
    (tmp_path / "ready-0").touch()

    def arrive_later():
        time.sleep(0.1)
        (tmp_path / "ready-1").touch()

    later = threading.Thread(target=arrive_later)
    later.start()
    StartBarrier(str(tmp_path)).release(
        [0, 1], timeout_s=5,
        before_go=lambda: seen.append(((tmp_path / "ready-1").exists(),
                                       (tmp_path / "go").exists())))
    later.join()
    assert seen == [(True, False)] and (tmp_path / "go").exists()


@pytest.mark.parametrize("events", ["none", "no inotify"])
def test_go_written_where_inotify_does_not_see_it(tmp_path, monkeypatch, events):
    """A folder on NFS gets no inotify events for files another machine writes (cluster
    runs): the watch's looks every WATCH_RECHECK_S find go; and without inotify at all, its
    polls every POLL_S do."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = tmp_path / "barrier"
    folder.mkdir()
    real_watch = barrier_module._watch_folder
    monkeypatch.setattr(barrier_module, "_watch_folder",
                        (lambda _: real_watch(str(elsewhere))) if events == "none"
                        else (lambda _: None))
    gone = []

    def arrive():
        StartBarrier(str(folder)).arrive(0, timeout_s=10)
        gone.append(time.monotonic())

    waiting = threading.Thread(target=arrive)
    waiting.start()
    while StartBarrier(str(folder)).missing([0]):
        time.sleep(0.01)
    (folder / "go").touch()
    said = time.monotonic()
    waiting.join(10)
    assert gone and gone[0] - said < 5


def _arrive_all(folder, world, go):
    """world threads arrive, go(barrier) releases them; ({rank: Start}, {rank: when
    arrive() returned})."""
    starts, left, errors = {}, {}, []

    def worker(rank):
        try:
            starts[rank] = StartBarrier(str(folder)).arrive(rank, timeout_s=10)
            left[rank] = time.monotonic()
        except Exception as exc:        # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(rank,)) for rank in range(world)]
    for thread in threads:
        thread.start()
    go(StartBarrier(str(folder)))
    for thread in threads:
        thread.join(10)
    assert errors == [] and sorted(starts) == list(range(world))
    return starts, left


def test_a_common_start_starts_every_rank_at_go_s_instant_and_none_before(tmp_path):
    def go(barrier):
        barrier.wait_ready(range(4), timeout_s=10)
        barrier.say_go(time.monotonic() + 1.0)      # far enough ahead for a busy machine
    starts, left = _arrive_all(tmp_path, 4, go)
    instant = barrier_module.parse_go((tmp_path / "go").read_text())
    assert {start.at for start in starts.values()} == {instant}
    assert all(start.common for start in starts.values())
    # every rank saw go before the instant and slept until it
    assert all(start.woke < instant <= left[rank] for rank, start in starts.items())


def test_release_with_a_common_start_sets_the_instant_its_lead_ahead(tmp_path):
    said = []

    def go(barrier):
        barrier.release(range(4), timeout_s=10, common_start=True,
                        before_go=lambda: said.append(time.monotonic()))
        said.append(time.monotonic())
    starts, left = _arrive_all(tmp_path, 4, go)
    instant = barrier_module.parse_go((tmp_path / "go").read_text())
    lead = barrier_module.start_lead_s(4)
    assert said[0] + lead <= instant <= said[1] + lead
    assert all(start.at == instant <= left[rank] for rank, start in starts.items())


def test_without_a_common_start_each_rank_starts_when_it_wakes(tmp_path):
    """A cluster's go (the launcher's common_start False): empty, as before the instant."""
    starts, _ = _arrive_all(tmp_path, 3, lambda barrier: barrier.release(range(3),
                                                                         timeout_s=10))
    assert (tmp_path / "go").read_text() == ""
    assert all(start.at == start.woke and not start.common for start in starts.values())


def test_a_rank_that_wakes_after_the_instant_counts_its_lateness(tmp_path):
    instant = time.monotonic() - 1.0
    StartBarrier(str(tmp_path)).say_go(instant)
    start = StartBarrier(str(tmp_path)).arrive(0, timeout_s=5)
    assert start.at == instant and start.woke >= instant + 1.0


def test_the_lead_grows_with_the_ranks():
    assert barrier_module.start_lead_s(8) == pytest.approx(0.024)
    assert barrier_module.start_lead_s(1024) > barrier_module.start_lead_s(8)


@pytest.mark.parametrize("text, error", [
    ("start 12.5 clock not-this-machine\n", r"^start barrier .*: go's start instant is on "
                                            r"another machine's clock \(not-this-machine"),
    ("start soon\n", r"^start barrier .*: go file 'start soon' is not 'start SECONDS clock ID'"),
])
def test_a_go_this_rank_cannot_use_fails_in_one_line(tmp_path, text, error):
    (tmp_path / "go").write_text(text)

    class Args:
        start_barrier, rank = str(tmp_path), 0

    with pytest.raises(cli.RunFailed, match=error) as failed:
        wait_for_start(Args, timeout_s=5)
    assert "\n" not in str(failed.value)


def test_the_clock_id_is_this_kernel_s_boot():
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert barrier_module.clock_id().startswith(f.read().strip())


def test_a_process_on_this_machine_reads_the_instant_on_the_same_clock(tmp_path):
    """Another process (as a Mininet host's worker is) sleeps until the launcher's instant:
    its clock is this one."""
    import subprocess
    import sys
    StartBarrier(str(tmp_path)).say_go(time.monotonic() + 0.3)
    code = ("import sys, time; from hosts.barrier import StartBarrier; "
            f"s = StartBarrier({str(tmp_path)!r}).arrive(0, timeout_s=5); "
            "print(s.at, time.monotonic())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__))))).stdout.split()
    at, after = float(out[0]), float(out[1])
    assert at == barrier_module.parse_go((tmp_path / "go").read_text()) and after >= at
