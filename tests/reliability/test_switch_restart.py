"""A switch process killed (SIGKILL) during an allreduce job is restarted by the network's
supervisor and reprogrammed by the controller; the job then completes exactly or every
worker that does not finish exactly fails with the worker's clear error, within a bounded
time; a new job on the same network completes exactly; the network stops cleanly.

Each scenario runs this file as a script (`drive`) inside a private network namespace
(tests/topologies/private_netns.py), so that its s1.., h1.. and gRPC ports 9559.. never meet
another network on this machine; the script writes a JSON report that the test checks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
for directory in ("topologies", "fabric"):
    if os.path.join(TESTS, directory) not in sys.path:
        sys.path.insert(0, os.path.join(TESTS, directory))
if os.path.dirname(TESTS) not in sys.path:
    sys.path.insert(0, os.path.dirname(TESTS))

import numpy as np      # noqa: E402
import pytest           # noqa: E402

from topologies.switches import REPO, python_executable   # noqa: E402

WINDOW = 16
ELEMENTS = 200000                 # 3125 chunks of K=64: the job outlives the kill(s) even on a fast switch
ROUNDS_BEFORE_KILL = 40           # the victim has done this much of the job when killed
MAX_RETRIES = 20                  # ~50 s of retransmissions: a restart fits in it
WORKER_DEADLINE_S = 300.0         # "no hang": every worker has exited by then
RESTART_WAIT_S = 120.0
STALL_MESSAGE = "no result from the switch for slot"


# ---------------------------------------------------------------- the driver (a script)

def launch_workers(fabric, plan, job_id: int, inputs: dict, work_dir: str) -> list:
    processes = []
    for rank, (host, vector) in enumerate(inputs.items()):
        stem = os.path.join(work_dir, f"job{job_id}-rank{rank}")
        np.save(stem + ".in.npy", vector)
        member = plan.hosts[host]
        command = [python_executable(), "-m", "hosts", "worker", "--job", str(job_id),
                   "--rank", str(rank), "--world", str(len(inputs)),
                   "--elements", str(len(vector)), "--dtype", "int32",
                   "--window", str(WINDOW), "--max-retries", str(MAX_RETRIES),
                   "--input", stem + ".in.npy", "--output", stem + ".out.npy",
                   "--switch-ip", member.switch_ip, "--contributor", str(member.contributor)]
        with open(stem + ".log", "wb") as log:
            processes.append((host, stem, fabric.network.popen(
                host, command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT)))
    return processes


def wait_workers(processes: list, expected, deadline: float) -> list:
    """[{host, exit_code, exact, last_line, seconds}] once every worker exited (killed at
    the deadline: exit_code None)."""
    started = time.monotonic()
    ended = {}
    while len(ended) < len(processes) and time.monotonic() < deadline:
        for host, _, process in processes:
            if host not in ended and process.poll() is not None:
                ended[host] = time.monotonic() - started
        time.sleep(0.05)
    outcomes = []
    for host, stem, process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()
            code = None
        else:
            code = process.returncode
        exact = None
        if code == 0:
            exact = bool(np.array_equal(np.load(stem + ".out.npy").astype(np.int64), expected))
        with open(stem + ".log", errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
        outcomes.append({"host": host, "exit_code": code, "exact": exact,
                         "last_line": lines[-1] if lines else "",
                         "seconds": ended.get(host)})
    return outcomes


def progress_on(manager, switch: str) -> int:
    """Rounds the switch has completed (root) or passed up (non-root) so far."""
    events = manager.status()[switch]["events"]
    return sum(events.get(name, 0) for name in ("completed", "sent_up"))


TABLES = ("agg_jobs", "agg_members", "agg_result_addresses", "ipv4_routes")


def switch_contents(manager, switch: str, mcast_group: int) -> dict:
    """What a P4Runtime read of the switch shows: every entry (match and action) of the
    controller's tables, and the job's multicast group."""
    connection = manager.connections[switch]
    contents = {table: sorted(f"{e.match} {e.action}" for e in connection.read_table(table))
                for table in TABLES}
    contents["multicast"] = sorted(connection.read_multicast_group(mcast_group))
    return contents


def wait_until_stalled(manager, switch: str, quiet_s: float = 1.5) -> int:
    """Wait until the switch's progress stops moving for quiet_s; return it."""
    last, since = progress_on(manager, switch), time.monotonic()
    while time.monotonic() - since < quiet_s:
        time.sleep(0.25)
        now = progress_on(manager, switch)
        if now != last:
            last, since = now, time.monotonic()
    return last


def set_host_mac(fabric, host: str, mac: str) -> None:
    """Results addressed to the host's own MAC are not taken in while it has another one
    (the kernel drops frames for other hosts); its own sends are unaffected once its static
    ARP entries, which the MAC change flushes, are back."""
    from topologies.net import host_interface, run_checked, static_arp_commands
    node = fabric.network.host(host)
    run_checked(node, f"ip link set dev {host_interface(host)} address {mac}")
    for command in static_arp_commands(fabric.spec, host):
        run_checked(node, command)


BLIND_MAC = "02:00:00:00:99:99"


def wait_for_progress(manager, switch: str, workers: list) -> bool:
    """Wait until the switch has done ROUNDS_BEFORE_KILL rounds (its counters start at 0
    in each process); False if the workers all ended first."""
    while progress_on(manager, switch) < ROUNDS_BEFORE_KILL:
        if all(p.poll() is not None for _, _, p in workers):
            return False
        time.sleep(0.05)
    return True


def drive(topology: str, victim: str, work_dir: str, blind: str | None = None,
          kills: int = 1) -> dict:
    """blind: a host that stops receiving results before the (first) kill, until the switch
    is back: the others get results it misses, which the restarted switch no longer has.
    kills: kill the victim this many times during the job, each time after its restarted
    process has done ROUNDS_BEFORE_KILL rounds."""
    from fabric_env import exact_sum, int32_inputs
    from topologies.fabric import Fabric
    from topologies.spec import parse_topology

    spec = parse_topology(topology)
    hosts = [h.name for h in spec.hosts]
    fabric = Fabric(spec, "builtin", build_dir=os.path.join(work_dir, "build"),
                    log_dir=os.path.join(work_dir, "switch-logs"), say=lambda message: None)
    report = {"topology": topology, "victim": victim, "blind": blind, "kills": kills,
              "workers_running_at_kill": [], "killed_pids": []}
    with fabric:
        manager = fabric.manager
        report["pids_before"] = {s.name: fabric.network.switch(s.name).process.pid
                                 for s in spec.switches}
        inputs = int32_inputs(hosts, ELEMENTS, seed=11)
        plan = manager.start_job(1, hosts, WINDOW)
        workers = launch_workers(fabric, plan, 1, inputs, work_dir)
        group = plan.switches[victim].mcast_group
        before = switch_contents(manager, victim, group)
        report["entries_before"] = {table: len(rows) for table, rows in before.items()}
        for kill in range(kills):
            if not wait_for_progress(manager, victim, workers):
                break
            if blind and kill == 0:
                set_host_mac(fabric, blind, BLIND_MAC)
                report["progress_when_stalled"] = wait_until_stalled(manager, victim)
            report["workers_running_at_kill"].append(
                sum(p.poll() is None for _, _, p in workers))
            pid = fabric.network.switch(victim).process.pid
            report["killed_pids"].append(pid)
            os.kill(pid, signal.SIGKILL)
            events = fabric.network.supervisor.wait_for_event(kill + 1, RESTART_WAIT_S)
            if blind and kill == 0:
                set_host_mac(fabric, blind, spec.host(blind).mac)
        report["events"] = [e.describe() for e in events]
        report["events_ok"] = [e.ok and e.recovered_at is not None for e in events]
        report["restart_seconds"] = [round((e.recovered_at or 0) - e.died_at, 2)
                                     for e in events]
        report["pid_after"] = fabric.network.switch(victim).process.pid
        report["reinstalled_as_before"] = switch_contents(manager, victim, group) == before
        report["job1"] = wait_workers(workers, exact_sum(list(inputs.values())),
                                      time.monotonic() + WORKER_DEADLINE_S)
        manager.stop_job(1)

        inputs2 = int32_inputs(hosts, 5000, seed=12)
        plan2 = manager.start_job(2, hosts, WINDOW)
        workers2 = launch_workers(fabric, plan2, 2, inputs2, work_dir)
        report["job2"] = wait_workers(workers2, exact_sum(list(inputs2.values())),
                                      time.monotonic() + WORKER_DEADLINE_S)
        manager.stop_job(2)
        report["pids_at_stop"] = {s.name: fabric.network.switch(s.name).process.pid
                                  for s in spec.switches}
    report["restarts"] = fabric.network.restarts()
    report["events_after_stop"] = len(fabric.restart_events())
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topo", required=True)
    parser.add_argument("--victim", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--blind")
    parser.add_argument("--kills", type=int, default=1)
    args = parser.parse_args(argv)
    report = drive(args.topo, args.victim, args.work_dir, args.blind, args.kills)
    with open(args.report, "w") as f:
        json.dump(report, f, indent=2)
    return 0


# ---------------------------------------------------------------- the tests

pytestmark = [pytest.mark.emulation, pytest.mark.slow,
             pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
             pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]


def run_scenario(tmp_path, topology: str, victim: str, blind: str | None = None,
                 kills: int = 1) -> dict:
    from private_netns import interfaces_after, private_network_command
    report_path = tmp_path / "report.json"
    command = [python_executable(), os.path.abspath(__file__), "--topo", topology,
               "--victim", victim, "--work-dir", str(tmp_path), "--report", str(report_path)]
    command += (["--blind", blind] if blind else []) + ["--kills", str(kills)]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(report_path.read_text())
    report["interfaces_after"] = interfaces_after(tmp_path)
    print(json.dumps(report, indent=1))
    return report


def assert_restart_survived(report: dict) -> list:
    """Checks common to every scenario; returns job 1's failed workers."""
    victim, kills = report["victim"], report["kills"]
    # the job was running each time the switch was killed
    assert report["workers_running_at_kill"] == [4] * kills
    # the supervisor restarted it each time, as a new process, and the controller
    # reprogrammed it
    assert report["restarts"][victim] == kills
    assert sum(report["restarts"].values()) == kills
    assert report["events_ok"] == [True] * kills, report["events"]
    assert report["pid_after"] not in report["killed_pids"]
    assert len(set(report["killed_pids"])) == kills
    # a read of the restarted switch shows what the manager had installed before the kill
    assert report["reinstalled_as_before"] is True
    assert all(report["entries_before"].values()), report["entries_before"]
    # job 1: every worker exited in time and none has a wrong sum; a worker that did not
    # finish exactly failed with the worker's clear stall error naming job and slot
    outcomes = report["job1"]
    assert all(o["exit_code"] is not None for o in outcomes), outcomes
    assert all(o["exact"] is not False for o in outcomes), outcomes
    failed = [o for o in outcomes if o["exit_code"] != 0]
    for o in failed:
        assert o["exit_code"] == 1 and STALL_MESSAGE in o["last_line"], o
        assert "job 1:" in o["last_line"], o
    # a new job on the same network is exact
    assert [(o["exit_code"], o["exact"]) for o in report["job2"]] == [(0, True)] * 4
    # nothing restarted while stopping; every switch process and interface is gone
    assert report["events_after_stop"] == kills
    assert report["interfaces_after"] == ["lo"]
    for pid in list(report["pids_at_stop"].values()) + report["killed_pids"]:
        assert not os.path.exists(f"/proc/{pid}"), pid
    return failed


@pytest.mark.parametrize("topology,victim", [("star:4", "s1"), ("leafspine:2,1,2", "s1")],
                         ids=["star4-root", "leafspine-leaf"])
def test_switch_killed_during_job(tmp_path, topology, victim):
    """Killed at an arbitrary point of the job: exact, or a clear failure when the kill fell
    between the copies of one multicast (one child got a result the restarted switch no
    longer has); both happen, the failure in about one leaf kill in five here."""
    assert_restart_survived(run_scenario(tmp_path, topology, victim))


def test_switch_killed_twice_during_one_job(tmp_path):
    """The restarted root is killed again once it has done some rounds: two restarts."""
    report = run_scenario(tmp_path, "star:4", "s1", kills=2)
    assert_restart_survived(report)
    assert report["restarts"] == {"s1": 2}


def test_result_lost_with_the_switch_fails_every_worker_clearly(tmp_path):
    """h1 takes in no results for a while, so the others move on past rounds whose results
    only the switch still has for h1; the switch is killed, restarted, h1 sees again: h1
    retransmits rounds the others never resend, so the job cannot complete.  Every worker
    fails with the stall error within its retransmission budget -- no wrong sum, no hang."""
    report = run_scenario(tmp_path, "star:4", "s1", blind="h1")
    failed = assert_restart_survived(report)
    assert [o["host"] for o in failed] == ["h1", "h2", "h3", "h4"]
    assert all(o["seconds"] < WORKER_DEADLINE_S for o in failed)


if __name__ == "__main__":
    sys.exit(main())
