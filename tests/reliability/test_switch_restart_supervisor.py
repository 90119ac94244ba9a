"""topologies.supervisor.SwitchSupervisor on stand-in switches whose "switch process" is a
real `sleep` process: a killed process is started again and the recovery hook called with
the switch's name; counts, failed restarts and recoveries, and no restart once stopped.
(The real switch nodes and the controller's recovery: test_switch_restart.py.)"""

import signal
import subprocess
import threading
import time

import pytest

from topologies.supervisor import MAX_RESTARTS, SwitchSupervisor
from topologies.switches import SwitchStartError

POLL_S = 0.02


class SleepSwitch:
    """The part of P4ProcessSwitch the supervisor uses: has_died, restart_process."""

    def __init__(self, name, fail_restarts=0, block_restart=False):
        self.name = name
        self.fail_restarts = fail_restarts       # this many restarts fail before one works
        self.block_restart = block_restart       # restart waits until aborted
        self.starts = 0
        self.process = None
        self._spawn()

    def _spawn(self):
        self.starts += 1
        self.process = subprocess.Popen(["sleep", "60"])

    def has_died(self):
        return self.process is not None and self.process.poll() is not None

    def restart_process(self, abort=None):
        old = self.process
        if self.block_restart:
            abort.wait()
            raise SwitchStartError(f"{self.name}: start abandoned (network stopping)")
        if self.fail_restarts:
            self.fail_restarts -= 1
            self.process = subprocess.Popen(["sh", "-c", "exit 3"])
            self.process.wait()
            raise SwitchStartError(f"{self.name}: switch process exited with code 3")
        self._spawn()
        return old.returncode

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def switches():
    made = []

    def make(*args, **kwargs):
        made.append(SleepSwitch(*args, **kwargs))
        return made[-1]
    yield make
    for switch in made:
        switch.close()


def test_killed_process_is_restarted_and_recovered(switches):
    a, b = switches("a"), switches("b")
    recovered = []
    supervisor = SwitchSupervisor([a, b], on_restart=recovered.append,
                                  poll_interval=POLL_S).start()
    try:
        first = a.process.pid
        a.kill()
        (event,) = supervisor.wait_for_event(1, 5.0)
        assert recovered == ["a"]
        assert a.process.pid != first and a.process.poll() is None and a.starts == 2
        assert b.starts == 1
        assert (event.switch, event.exit_code, event.ok) == ("a", -signal.SIGKILL, True)
        assert event.died_at <= event.restarted_at <= event.recovered_at
        assert event.describe().startswith("switch a died (killed by signal 9); restarted "
                                           "and reprogrammed in ")
        b.kill()
        a.kill()
        events = supervisor.wait_for_event(3, 5.0)
        assert sorted(e.switch for e in events[1:]) == ["a", "b"]
        assert supervisor.restarts() == {"a": 2, "b": 1}
    finally:
        supervisor.stop()


def test_failed_recovery_is_recorded(switches):
    a = switches("a")

    def refuse(name):
        raise RuntimeError(f"switch {name}: SetForwardingPipelineConfig failed: UNAVAILABLE")
    supervisor = SwitchSupervisor([a], on_restart=refuse, poll_interval=POLL_S).start()
    try:
        a.kill()
        (event,) = supervisor.wait_for_event(1, 5.0)
        assert not event.ok and event.restarted_at is not None and event.recovered_at is None
        assert event.describe() == ("switch a died (killed by signal 9); restarted but not "
                                    "recovered: switch a: SetForwardingPipelineConfig failed: "
                                    "UNAVAILABLE")
        assert supervisor.restarts() == {"a": 1}
    finally:
        supervisor.stop()


def test_switch_that_keeps_failing_to_start_is_left_down(switches):
    a = switches("a", fail_restarts=100)
    supervisor = SwitchSupervisor([a], poll_interval=POLL_S).start()
    try:
        a.kill()
        events = supervisor.wait_for_event(MAX_RESTARTS, 10.0)
        time.sleep(20 * POLL_S)             # time for more attempts, if there were any
        assert len(supervisor.events()) == MAX_RESTARTS == len(events)
        assert all(e.restarted_at is None and "exited with code 3" in e.error for e in events)
        assert events[0].describe() == ("switch a died (killed by signal 9); restart failed: "
                                        "a: switch process exited with code 3")
        assert supervisor.restarts() == {"a": 0}
    finally:
        supervisor.stop()


def test_nothing_is_restarted_after_stop(switches):
    a = switches("a")
    supervisor = SwitchSupervisor([a], on_restart=lambda name: None,
                                  poll_interval=POLL_S).start()
    supervisor.stop()
    a.kill()
    time.sleep(20 * POLL_S)
    assert a.has_died() and a.starts == 1
    assert supervisor.events() == [] and supervisor.restarts() == {"a": 0}


def test_stop_abandons_a_restart_in_progress(switches):
    a = switches("a", block_restart=True)
    recovered = []
    supervisor = SwitchSupervisor([a], on_restart=recovered.append,
                                  poll_interval=POLL_S).start()
    a.kill()
    time.sleep(10 * POLL_S)                 # the restart is now waiting
    stopper = threading.Thread(target=supervisor.stop)
    stopper.start()
    stopper.join(30.0)                      # the blocked restart never ends by itself
    assert not stopper.is_alive()
    assert supervisor.events() == [] and recovered == []
