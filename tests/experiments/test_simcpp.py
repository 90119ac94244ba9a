"""The simulator's C++ actors (simulation/simcore.cpp via cpp_engine.py) against the Python
actors they replace (simulation/ina.py, host_algorithms.py): small runs of every mode on both
engines, which must agree on the simulated completion time (relative difference below 1e-9:
the same SimGrid engine, platform and actors; they agree exactly here), the bytes and packets
per host, and for in-network aggregation every switch event count.  With loss the engines draw different
frames (C++'s mt19937_64, Python's random), so there the C++ run is checked on its own.
"""

import os
import subprocess
import sys
import time

import pytest

from experiments.simulated import simulate
from simulation import cpp_engine
from simulation.run import CHUNK_ELEMENTS, Request, spec_for
from topologies.spec import parse_topology
from hosts.algorithms import ALGORITHMS
from hosts.algorithms.base import Send
from hosts.schedules import schedule

TOLERANCE = 1e-9


def both(request: Request):
    python_run, python_detail = simulate(Request(**{**request.__dict__, "engine": "python"}))
    cpp_run, cpp_detail = simulate(Request(**{**request.__dict__, "engine": "cpp"}))
    assert python_detail["engine"] == "python" and cpp_detail["engine"] == "cpp"
    return python_run, python_detail, cpp_run, cpp_detail


def assert_same_run(python_run, cpp_run):
    assert python_run.correct and cpp_run.correct
    assert cpp_run.seconds == pytest.approx(python_run.seconds, rel=TOLERANCE)
    for field in ("bytes_per_host", "bytes_received_per_host", "wire_bytes_per_host",
                  "wire_bytes_received_per_host", "packets_per_host", "retransmissions"):
        assert getattr(cpp_run, field) == getattr(python_run, field), field


@pytest.mark.parametrize("request_", [
    Request("star:4", "ina", 4, 256 * 100, 10.0, k=256),                  # link-bound
    Request("leafspine:2,1,4", "ina", 8, 64 * 50, 1.0, k=64),             # two levels
    Request("star:2", "ina", 2, 64 * 20, 10.0, k=64, window=1),           # round trips
    Request("fattree:4", "ina", 16, 10000, 100000.0, k=256, delay_ms=0.001),  # window-bound
    Request("leafspine:2,1,4", "ina", 7, 1000, 100.0, k=16, window=5),    # partial last round
    Request("star:4", "ina", 4, 64 * 64, 10.0, k=64, train=8),            # trains
], ids=["star", "leafspine", "window1", "fattree-window-bound", "uneven", "train"])
def test_ina_engines_agree(request_):
    python_run, python_detail, cpp_run, cpp_detail = both(request_)
    assert_same_run(python_run, cpp_run)
    assert cpp_detail["switch_events"] == python_detail["switch_events"]
    assert cpp_detail["switch_events"]["completed"] > 0
    assert cpp_detail["tree_switches"] == python_detail["tree_switches"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_host_algorithm_engines_agree(algorithm):
    # 6 of 8 hosts on leafspine:2,1,4 (not a power of two: folding ranks) at 10 Mbit/s
    python_run, python_detail, cpp_run, cpp_detail = both(
        Request("leafspine:2,1,4", algorithm, 6, 6000, 10.0))
    assert_same_run(python_run, cpp_run)
    assert cpp_detail["messages"] == python_detail["messages"] > 0


def test_ring_on_a_fat_tree_agrees():
    # latency-bound: 2(p-1) steps through up to 6 hops of 1 us
    python_run, _, cpp_run, _ = both(Request("fattree:4", "ring", 16, 10000, 100000.0,
                                             delay_ms=0.001))
    assert_same_run(python_run, cpp_run)
    assert cpp_run.seconds > 2 * 15 * 2e-6


def test_loss_in_cpp_is_recovered_and_reproducible():
    request = Request("leafspine:2,1,4", "ina", 8, 64 * 200, 10.0, k=64, loss_pct=3.0,
                      train=1, seed=5)
    run, detail = simulate(request)
    again, detail_again = simulate(request)
    assert detail["frames_lost"] > 0 and run.retransmissions > 0
    assert run.correct, run.errors
    assert (again.seconds, again.retransmissions, detail_again["frames_lost"]) == \
        (run.seconds, run.retransmissions, detail["frames_lost"])
    assert detail["switch_events"]["result_resent"] + \
        detail["switch_events"]["partial_resent"] + detail["switch_events"]["duplicate"] > 0


def test_no_compiler_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(cpp_engine, "compiler", lambda: None)
    with pytest.raises(cpp_engine.BuildError, match="no C\\+\\+ compiler") as error:
        cpp_engine.build()
    assert "\n" not in str(error.value)


def test_the_executable_is_cached():
    assert cpp_engine.build() == cpp_engine.build()


@pytest.mark.parametrize("world, elements", [(2, 2), (3, 10), (7, 1000), (16, 10000),
                                             (5, 5 * 16384)])
def test_the_ring_fast_path_is_the_ring_schedule(world, elements):
    assert cpp_engine.ring_fast_path(world, elements, CHUNK_ELEMENTS)
    for rank in range(world):
        rows = [(0 if isinstance(op, Send) else 1, op.peer, op.stop - op.start)
                for op in schedule("ring", rank, world, elements, CHUNK_ELEMENTS)]
        assert cpp_engine.ring_triples(rank, world, elements).tolist() == [list(r) for r in rows]


def test_the_ring_fast_path_is_refused_where_it_differs():
    assert not cpp_engine.ring_fast_path(8, 7, CHUNK_ELEMENTS)                 # empty segments
    assert not cpp_engine.ring_fast_path(2, 2 * 16384 + 2, CHUNK_ELEMENTS)     # two chunks
    assert not cpp_engine.ring_fast_path(1, 100, CHUNK_ELEMENTS)


def test_the_simulation_parses_fat_trees_beyond_the_emulators_switch_limit():
    with pytest.raises(ValueError, match="1280 switches is more than 1024"):
        parse_topology("fattree:32")
    spec = spec_for(Request("fattree:32", "ina", 8192, 100, 100000.0))
    assert len(spec.switches) == 1280 and len(spec.hosts) == 8192
    with pytest.raises(ValueError, match="more than 1024"):   # the limit is back
        parse_topology("fattree:32")


def test_a_simulation_process_dies_with_its_parent():
    """simulate's forked child and simcore call die_with_parent: a `simulate` killed with
    SIGKILL leaves no simulation running (the kernel sends them SIGTERM)."""
    import signal
    script = ("import os, sys, time\n"
              "from simulation.cpp_engine import die_with_parent\n"
              "if os.fork() == 0:\n"
              "    die_with_parent()\n"
              "    print('ready', os.getpid(), flush=True)\n"
              "    time.sleep(120)\n"
              "    os._exit(0)\n"
              "time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              stdout=subprocess.PIPE,
                              text=True)
    word, pid = parent.stdout.readline().split()
    assert word == "ready"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()

    def running(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
    for _ in range(300):                       # the event: the child ends (at most 30 s)
        if not running(pid):
            break
        time.sleep(0.1)
    assert not running(pid)
