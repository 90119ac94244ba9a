"""CPU accounting of a run: process CPU from /proc, switch differences across restarts, the
busy-cores figure and the CPU-bound warning."""

import os
import subprocess
import sys
import time

from jobs import cpu, results


def test_process_cpu_seconds_counts_work_and_ends_with_the_process():
    burner = subprocess.Popen([sys.executable, "-c",
                               "import time\nend = time.process_time() + 0.3\n"
                               "while time.process_time() < end: pass\n"
                               "import sys; sys.stdin.read()"],
                              stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while (cpu.process_cpu_seconds(burner.pid) or 0) < 0.25:
            assert time.monotonic() < deadline, "the burner never used 0.25 CPU seconds"
            time.sleep(0.05)
    finally:
        burner.communicate(b"")
    assert cpu.process_cpu_seconds(burner.pid) is None       # reaped: gone from /proc


def test_switch_cpu_reads_running_switch_processes_only():
    class Switch:
        def __init__(self, name, process):
            self.name, self.process = name, process

    class Alive:
        pid = os.getpid()

        def poll(self):
            return None

    class Ended(Alive):
        def poll(self):
            return 0

    seconds = cpu.switch_cpu_seconds([Switch("s1", Alive()), Switch("s2", Ended()),
                                      Switch("s3", None)])
    assert list(seconds) == ["s1"] and seconds["s1"] > 0


def test_switch_cpu_difference_counts_a_restarted_switch_from_its_new_start():
    before = {"s1": 10.0, "s2": 5.0}
    after = {"s1": 12.5, "s2": 0.75}          # s2 restarted: its counter began again
    assert cpu.switch_cpu_difference(after, before) == 2.5 + 0.75
    assert cpu.switch_cpu_difference({}, before) is None


def test_busy_cores_and_the_cpu_bound_note():
    assert cpu.busy_cores(1.2, 0.4, 1.0) == 1.6
    assert cpu.busy_cores(None, 0.4, 1.0) is None
    assert cpu.busy_cores(1.0, None, 2.0) == 0.5
    assert cpu.cpu_bound_note("ina", 1.5, 2) is None
    note = cpu.cpu_bound_note("ina", 1.6, 2)
    assert note.startswith("ina: workers and switches kept 1.6 of 2 cores busy")


def test_summarize_sums_the_workers_cpu_seconds():
    reports = [{"seconds": 1.0, "correct": True, "max_abs_err": 0, "cpu_seconds": c}
               for c in (0.25, 0.5)]
    outcomes = [results.WorkerOutcome(f"h{i}", i, 0, r) for i, r in enumerate(reports)]
    run = results.summarize("ina", "star:2", "builtin", 1, 10, "int32", 8, outcomes)
    assert run.worker_cpu_seconds == 0.75
    del reports[0]["cpu_seconds"], reports[1]["cpu_seconds"]
    run = results.summarize("ina", "star:2", "builtin", 1, 10, "int32", 8, outcomes)
    assert run.worker_cpu_seconds is None
