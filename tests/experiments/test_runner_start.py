"""The launcher's go (jobs/runner.start_workers): one start instant on this machine's clock
for every job of a mode, and none over a cluster, whose machines' clocks differ."""

import os
import threading
import time

import pytest

from hosts import barrier
from jobs.modes import MODES, JobSetup, barrier_dir
from jobs.runner import one_clock, start_workers


class Running:
    """A worker process that is still running (start_workers asks poll())."""

    def poll(self):
        return None


def _jobs(tmp_path, count, world):
    setups = [JobSetup(job=job, hosts=tuple(f"h{r}" for r in range(world)),
                       host_ips=tuple(f"10.0.0.{r + 1}" for r in range(world)),
                       elements=8, dtype="int32", seed=job, window=4, k=4,
                       out_dir=str(tmp_path)) for job in range(count)]
    for setup in setups:
        os.makedirs(barrier_dir(setup, "ring"))
    return [(setup, [Running() for _ in range(world)]) for setup in setups]


def _arrive_everywhere(launched):
    """Every rank of every job arrives on a thread; {(job, rank): Start}."""
    starts = {}

    def arrive(setup, rank):
        starts[setup.job, rank] = barrier.StartBarrier(
            barrier_dir(setup, "ring")).arrive(rank, timeout_s=10)

    threads = [threading.Thread(target=arrive, args=(setup, rank))
               for setup, processes in launched for rank in range(len(processes))]
    for thread in threads:
        thread.start()
    return threads, starts


@pytest.mark.parametrize("common_start", [True, False])
def test_every_job_of_a_mode_starts_at_one_instant_unless_over_a_cluster(tmp_path,
                                                                         common_start):
    launched = _jobs(tmp_path, 2, 3)
    threads, starts = _arrive_everywhere(launched)
    called = []
    before = time.monotonic()
    start_workers(MODES["ring"], launched, before_go=lambda: called.append(1),
                  common_start=common_start)
    after = time.monotonic()
    for thread in threads:
        thread.join(10)
    assert len(starts) == 6 and called == [1]
    texts = {open(os.path.join(barrier_dir(setup, "ring"), "go")).read()
             for setup, _ in launched}
    if common_start:
        assert len(texts) == 1          # both jobs' go: the same instant
        instant = barrier.parse_go(texts.pop())
        lead = barrier.start_lead_s(6)
        assert before + lead <= instant <= after + lead
        assert {start.at for start in starts.values()} == {instant}
    else:
        assert texts == {""}
        assert all(start.at == start.woke and not start.common for start in starts.values())


def test_common_start_must_be_said():
    """Whether the workers share the launcher's clock is the caller's to say (a cluster's
    do not): no default that would quietly pick one."""
    with pytest.raises(TypeError, match="common_start"):
        start_workers(MODES["ring"], [])


def test_a_cluster_s_workers_start_when_they_wake():
    """--cluster places hosts on other servers, whose monotonic clocks are not the launcher's:
    no common instant there (the ranks start as before, on waking); on one machine, one."""
    class Network:
        def __init__(self, cluster):
            self.cluster = cluster

    assert one_clock(Network(None)) is True
    assert one_clock(Network(object())) is False
