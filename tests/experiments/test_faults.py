"""--kill-switch specs and --fallback choices: parsing, one-line errors, and which jobs
prepare_jobs hands to the fallback algorithm (a planner on a real topology, no network)."""

import argparse
import os
import subprocess
import sys

import pytest

from contracts.cli import UsageError
from controller import CapacityError, PlanError, Planner
from jobs.faults import Kill, check_switches, parse_kills
from jobs.modes import MODES
from jobs.runner import prepare_jobs
from topologies.spec import parse_topology

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_kills_are_parsed_and_ordered_by_time():
    assert parse_kills("s2@2.5, s1@1,s1@0") == (Kill("s1", 0.0), Kill("s1", 1.0),
                                                 Kill("s2", 2.5))
    assert str(Kill("s1", 1.0)) == "s1@1"


@pytest.mark.parametrize("text, message", [
    ("s1", "expected NAME@SECONDS"), ("@1", "expected NAME@SECONDS"),
    ("s1@", "the time must be"), ("s1@-1", "the time must be"), ("s1@nan", "the time must be"),
    ("s1@1,", "expected NAME@SECONDS"),
])
def test_bad_kill_specs(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_kills(text)


def test_a_kill_must_name_a_switch_of_the_topology():
    spec = parse_topology("leafspine:2,1,2")
    check_switches(parse_kills("s1@1,s3@2"), spec)
    with pytest.raises(ValueError, match=r"no switch 's4' in the topology \(switches: s1, s2, s3\)"):
        check_switches(parse_kills("s4@1"), spec)


class PlannerManager:
    """The manager's start_job/stop_job on a real Planner (no switches to write to)."""

    def __init__(self, topology: str, slots: int):
        self.planner = Planner(parse_topology(topology), slots)

    def start_job(self, job, hosts, window, design="ina"):
        assert design == "ina"
        return self.planner.plan(job, hosts, window)

    def stop_job(self, job):
        self.planner.release(job)


def setups(groups, window):
    from jobs.modes import JobSetup
    return [JobSetup(job=j + 1, hosts=tuple(g), host_ips=tuple(f"10.0.0.{i}" for i in
                                                                range(len(g))),
                     elements=10, dtype="int32", seed=1, window=window, k=64, out_dir="/x")
            for j, g in enumerate(groups)]


def test_jobs_that_do_not_fit_get_the_fallback_and_the_others_their_plan():
    manager = PlannerManager("star:6", slots=1024)
    jobs = prepare_jobs(manager, MODES["ina"], setups([["h1", "h2"], ["h3", "h4"],
                                                      ["h5", "h6"]], 400), "ring")
    assert [mode.name for mode, _, _ in jobs] == ["ina", "ina", "ring"]
    assert [plan.switches["s1"].slot_base for _, plan, _ in jobs[:2]] == [0, 400]
    assert jobs[2][1] is None
    assert jobs[2][2] == {"reason": "switch s1: job 3 needs 400 slots but only 224 "
                                    "contiguous of 1024 are free",
                          "algorithm": "ring", "requested": "ina"}
    assert sorted(manager.planner.jobs) == [1, 2]


def test_too_many_contributors_is_a_capacity_error():
    planner = Planner(parse_topology("star:65"), 1024)
    planner.plan(1, [f"h{i}" for i in range(1, 65)], 4)       # 64: the bitmap's width
    with pytest.raises(CapacityError, match="switch s1: job 2 would have 65 contributors, "
                                            "at most 64"):
        planner.plan(2, [f"h{i}" for i in range(1, 66)], 4)


def test_without_fallback_the_job_is_refused_and_nothing_stays_reserved():
    manager = PlannerManager("star:6", slots=1024)
    with pytest.raises(UsageError, match="job 3: switch s1: job 3 needs 400 slots"):
        prepare_jobs(manager, MODES["ina"], setups([["h1", "h2"], ["h3", "h4"],
                                                    ["h5", "h6"]], 400), None)
    assert manager.planner.jobs == {}


def test_a_bad_request_is_never_a_fallback():
    manager = PlannerManager("star:6", slots=1024)
    with pytest.raises(UsageError, match="--window 70000: a job.s slots are 1..65535"):
        prepare_jobs(manager, MODES["ina"], setups([["h1", "h2"]], 70000), "ring")
    assert not issubclass(PlanError, CapacityError)


@pytest.mark.parametrize("option, value, message", [
    ("--fallback", "bogus", "unknown algorithm 'bogus'"),
    ("--kill-switch", "s9@1", "--kill-switch s9@1: no switch 's9' in the topology"),
    ("--kill-switch", "s1@soon", "'s1@soon': the time must be a number of seconds >= 0"),
])
def test_bad_options_on_the_command_line_are_one_line_errors(tmp_path, option, value, message):
    result = subprocess.run([sys.executable, "-m", "experiments", "compare", "--topo", "star:4",
                             "--elements", "10", option, value, "--out", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 2 and message in lines[-1], result.stderr
    assert "Traceback" not in result.stderr


class FakeSwitch:
    def __init__(self):
        self.process = subprocess.Popen(["sleep", "60"])


class Supervised:
    """A stand-in fabric: switch processes are `sleep`s; a thread restarts a dead one after
    0.3 s and then records a restart event, as topologies' supervisor and the recovery do."""

    def __init__(self, names):
        import threading
        self.switches = {name: FakeSwitch() for name in names}
        self.events = []
        self.network = self
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def switch(self, name):
        return self.switches[name]

    def restart_events(self):
        return list(self.events)

    def _watch(self):
        import time
        while not self._stop.wait(0.02):
            for name, switch in self.switches.items():
                if switch.process.poll() is not None:
                    time.sleep(0.3)
                    self.switches[name] = FakeSwitch()
                    self.events.append(name)

    def close(self):
        self._stop.set()
        self._thread.join()
        for switch in self.switches.values():
            switch.process.kill()
            switch.process.wait()


def test_switch_killer_kills_on_time_again_after_the_restart_and_waits_for_recovery():
    import time
    from jobs.faults import SwitchKiller
    fabric = Supervised(["s1", "s2"])
    try:
        first = fabric.switches["s1"].process.pid
        started = time.monotonic()
        said = []
        killer = SwitchKiller(fabric, parse_kills("s1@0.1,s1@0.2,s2@0.3"), started, said.append)
        time.sleep(0.05)
        assert fabric.events == []                    # nothing before its time
        time.sleep(0.9)
        done = killer.stop()
        # the second kill of s1 waited for its new process (0.3 s restart), not the dead one
        assert [d["switch"] for d in done] == ["s1", "s1", "s2"]
        assert done[0]["pid"] == first and done[1]["pid"] != first
        assert done[0]["at_s"] >= 0.1 and done[1]["at_s"] >= 0.4
        # stop() returned only once every kill was restarted and recorded
        assert sorted(fabric.events) == ["s1", "s1", "s2"]
        assert len(said) == 3 and said[0].startswith("killed switch s1 (pid ")
    finally:
        fabric.close()


def test_switch_killer_without_kills_starts_nothing():
    from jobs.faults import SwitchKiller
    killer = SwitchKiller(object(), (), 0.0)
    assert killer._thread is None and killer.stop() == []
