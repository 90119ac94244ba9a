"""Impossible jobs are refused with one-line errors and nothing is installed; the command
line exits 2 on them (issue #7, part 5)."""

import subprocess
import sys

import pytest

from controller import AggregationManager, PlanError
from p4src_harness import (SwitchApiConnection, contribution, drops, fabric, p4switch_api,
                           program)


@pytest.mark.parametrize("args, message", [
    (["plan", "--topo", "star:70", "--workers", "65"],
     "switch s1: job 0 would have 65 contributors, at most 64 are supported"),
    (["plan", "--topo", "star:2", "--workers", "2", "--jobs", "50000"],
     "switch s1: no slots left for job 32 (all 1024 in use)"),
    (["plan", "--topo", "star:2", "--workers", "2", "--window", "2000"],
     "switch s1: job 0 needs 2000 slots but only 1024 contiguous of 1024 are free"),
    (["plan", "--topo", "star:2", "--workers", "2", "--window", "0"],
     "python -m controller plan: argument --window: must be >= 1, got 0"),
    (["plan", "--topo", "star:2", "--workers", "abc"],
     "python -m controller plan: argument --workers: invalid int value: 'abc'"),
    (["plan", "--topo", "/nonexistent/t.json", "--workers", "1"],
     "cannot read topology file /nonexistent/t.json: No such file or directory"),
    ([], "python -m controller: the following arguments are required: command"),
])
def test_impossible_plans_exit_2_with_one_line(args, message):
    result = subprocess.run([sys.executable, "-m", "controller", *args], capture_output=True,
                            text=True, timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"controller: {message}\n")


def installed(switch):
    return {name: switch.table(name).entries() for name in ("agg_jobs", "agg_members",
                                                              "agg_result_addresses")}


@pytest.mark.parametrize("members, window, message", [
    (["h1", "h9"], 2, "job 1: no host named 'h9' in the topology"),
    (["h1", "h1"], 2, "job 1: a host is listed twice"),
    ([], 2, "job 1 has no member hosts"),
    (["h1", "h2"], 17, "switch s1: job 1 needs 17 slots but only 16 contiguous of 16 are free"),
])
def test_manager_refuses_impossible_jobs_and_installs_nothing(members, window, message):
    spec, switches, manager = fabric("star:3")
    with pytest.raises(PlanError) as refused:
        manager.start_job(1, members, window)
    assert str(refused.value) == message
    assert all(entries == [] for entries in installed(switches["s1"]).values())
    assert manager.jobs() == {}


def test_no_slots_left_after_other_jobs():
    _, switches, manager = fabric("star:3")
    manager.start_job(1, ["h1", "h2"], 10)
    manager.start_job(2, ["h2", "h3"], 6)
    with pytest.raises(PlanError, match=r"^switch s1: no slots left for job 3 \(all 16 in use\)$"):
        manager.start_job(3, ["h1", "h3"], 1)
    manager.stop_job(1)
    assert manager.start_job(3, ["h1", "h3"], 10).switches["s1"].slot_base == 0


def test_manager_refuses_more_slots_than_the_program_has():
    from topologies.spec import parse_topology
    _, Switch, _, _ = p4switch_api()
    compiled = program(4, 16)
    spec = parse_topology("star:2")
    manager = AggregationManager(spec, {"s1": SwitchApiConnection(Switch(compiled),
                                                                   compiled.p4info)},
                                 slots_per_switch=1024)
    with pytest.raises(PlanError, match="^switch s1: its program has 16 aggregation slots "
                                        r"\(AGG_SLOTS\), fewer than the 1024"):
        manager.install_pipeline_and_routes()


def test_the_switch_guards_its_registers_against_a_slot_range_beyond_agg_slots():
    """Without the P4Info check (no helper) a job lands beyond AGG_SLOTS = 16: its packets are
    dropped as slot_range, never an out-of-range register access."""
    from topologies.spec import parse_topology
    _, Switch, _, _ = p4switch_api()
    switch = Switch(program(4, 16))
    spec = parse_topology("star:2")
    manager = AggregationManager(spec, {"s1": SwitchApiConnection(switch)}, slots_per_switch=64)
    manager.install_pipeline_and_routes()
    manager.start_job(1, ["h1", "h2"], 20)        # slots 0-19 of a 16-slot switch
    h1 = spec.host("h1")
    assert switch.process_packet(1, contribution(h1, 1, 17, 0, 0, [1, 2, 3, 4])) == []
    assert drops(switch) == {8: 1}                # slot_range


def test_an_interrupted_connect_all_closes_the_connections_it_opened(monkeypatch):
    """Ctrl-C while compare connected its controller left the first switches' streams open,
    and their threads kept compare from exiting after its one-line error."""
    import controller
    from topologies.spec import parse_topology
    opened = []

    class Connection:
        def __init__(self, name, address, device_id, thrift_port=None):
            self.name, self.closed = name, False
            opened.append(self)

        def connect(self, timeout):
            if len(opened) == 2:
                raise KeyboardInterrupt

        def close(self):
            self.closed = True
    monkeypatch.setattr(controller, "SwitchConnection", Connection)
    with pytest.raises(KeyboardInterrupt):
        controller.connect_all(parse_topology("leafspine:2,1,4"))
    assert [c.closed for c in opened] == [True, True]
