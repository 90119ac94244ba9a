"""The launcher's start barrier: nobody starts before all arrived, and everyone starts after go."""

import os
import threading
import time

import pytest

from hosts import cli
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


def test_without_the_option_nothing_waits():
    class Args:
        start_barrier, rank = None, 0

    wait_for_start(Args, timeout_s=0)


def _inotify_instances() -> int:
    return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
               for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))


def test_the_threads_of_one_process_share_one_inotify_instance(tmp_path):
    """More waiting threads than a user may have inotify instances (128 by default): one
    watch for all of them, and every one of them goes."""
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
    assert _inotify_instances() == before
