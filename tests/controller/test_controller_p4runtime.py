"""The controller against real P4Runtime servers: `python -m p4switch run --no-p4` processes
on loopback gRPC, two switches driven from this one process."""

import subprocess
import sys

import pytest
from listening import free_port, wait_listening

from controller import AggregationManager, Flowlets, Pipeline, SwitchConnection, connect_all
from controller.p4info import decode_value
from p4switch import compile_file
from topologies.spec import Host, Link, Switch, TopologySpec

MAIN_P4 = "p4src/main.p4"


@pytest.fixture
def pipeline():
    program = compile_file(MAIN_P4, defines={"AGG_K": "4", "AGG_SLOTS": "64"})
    return Pipeline(program.p4info, program.device_config)


@pytest.fixture
def two_switches():
    """h1 - s1 -(2:2)- s2 - h2, each switch a `p4switch run --no-p4` process."""
    processes, switches = [], []
    try:
        for device_id in range(2):
            port = free_port()
            process = subprocess.Popen(
                [sys.executable, "-m", "p4switch", "run", "--no-p4", "--device-id",
                 str(device_id), "--grpc-server-addr", f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            processes.append(process)
            wait_listening(port, process, "p4switch run", process.stderr.read)
            switches.append(Switch(f"s{device_id + 1}", device_id, port))
        yield TopologySpec("json",
                           [Host("h1", "10.0.0.1", "02:00:0a:00:00:01"),
                            Host("h2", "10.0.0.2", "02:00:0a:00:00:02")],
                           switches,
                           [Link("h1", None, "s1", 1), Link("h2", None, "s2", 1),
                            Link("s1", 2, "s2", 2)])
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def route_refs(conn):
    """[(destination, (port,) or (group, buckets))] of the switch's ipv4_routes entries."""
    return sorted((decode_value(entry.match[0].lpm.value),
                   tuple(decode_value(p.value) for p in entry.action.action.params))
                  for entry in conn.read_table("ipv4_routes"))


def buckets(conn):
    """[(group, bucket, port)] of the switch's ecmp_buckets entries."""
    return sorted((decode_value(entry.match[0].exact.value),
                   decode_value(entry.match[1].exact.value),
                   decode_value(entry.action.action.params[0].value))
                  for entry in conn.read_table("ecmp_buckets"))


def start_switches(count):
    """`count` `p4switch run --no-p4` processes: ([Popen], [topologies Switch])."""
    processes, switches = [], []
    for device_id in range(count):
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "p4switch", "run", "--no-p4", "--device-id",
             str(device_id), "--grpc-server-addr", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        processes.append(process)
        wait_listening(port, process, "p4switch run", process.stderr.read)
        switches.append(Switch(f"s{device_id + 1}", device_id, port))
    return processes, switches


def stop_switches(processes):
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_ecmp_groups_reach_the_switches_over_p4runtime(pipeline):
    """A diamond, h1 - s1 =(s2 | s3)= s4 - h2: s1 and s4 get a group of their two ports."""
    processes = []
    try:
        processes, (s1, s2, s3, s4) = start_switches(4)
        spec = TopologySpec("json",
                            [Host("h1", "10.0.0.1", "02:00:0a:00:00:01"),
                             Host("h2", "10.0.0.2", "02:00:0a:00:00:02")],
                            [s1, s2, s3, s4],
                            [Link("h1", None, "s1", 1), Link("h2", None, "s4", 1),
                             Link("s1", 2, "s2", 1), Link("s1", 3, "s3", 1),
                             Link("s2", 2, "s4", 2), Link("s3", 2, "s4", 3)])
        connections = connect_all(spec, timeout=10)
        try:
            AggregationManager(spec, connections, pipeline,
                               slots_per_switch=64).install_pipeline_and_routes()
            first, last = connections["s1"], connections["s4"]
            assert buckets(first) == [(1, 0, 2), (1, 1, 3)]
            assert route_refs(first) == [(0x0a000001, (1,)), (0x0a000002, (1, 2))]
            assert buckets(last) == [(1, 0, 2), (1, 1, 3)]
            assert route_refs(last) == [(0x0a000001, (1, 2)), (0x0a000002, (1,))]
            assert buckets(connections["s2"]) == []
            assert route_refs(connections["s2"]) == [(0x0a000001, (1,)), (0x0a000002, (2,))]
        finally:
            for conn in connections.values():
                conn.close()
    finally:
        stop_switches(processes)


def default_action(conn, table):
    """(action name, parameter values) of the table's default entry."""
    entry = conn.read_default_entry(table)
    names = {a.preamble.id: a.preamble.name.split(".")[-1] for a in conn.helper.p4info.actions}
    assert entry.is_default_action
    return (names[entry.action.action.action_id],
            tuple(decode_value(p.value) for p in entry.action.action.params))


@pytest.mark.parametrize("flowlets", [Flowlets(), Flowlets(250, 0), Flowlets(0, 65536)])
def test_the_flowlet_settings_reach_every_switch_as_its_default_entry(pipeline, two_switches,
                                                                     flowlets):
    connections = connect_all(two_switches, timeout=10)
    try:
        AggregationManager(two_switches, connections, pipeline, slots_per_switch=64,
                           flowlets=flowlets).install_pipeline_and_routes()
        for conn in connections.values():
            assert default_action(conn, "flowlet_gap") == (
                ("set_flowlet_gap", (flowlets.gap_us, flowlets.max_bytes)) if flowlets.on
                else ("NoAction", ()))
    finally:
        for conn in connections.values():
            conn.close()


def entries_by_action(conn, table):
    helper = conn.helper
    names = {a.preamble.id: a.preamble.name.split(".")[-1] for a in helper.p4info.actions}
    found = []
    for entry in conn.read_table(table):
        params = tuple(decode_value(p.value) for p in entry.action.action.params)
        keys = tuple(decode_value(m.exact.value or m.lpm.value) for m in entry.match)
        found.append((names[entry.action.action.action_id], keys, params))
    return sorted(found)


def test_manager_installs_and_removes_a_two_switch_job_over_p4runtime(pipeline, two_switches):
    connections = connect_all(two_switches, timeout=10)
    try:
        manager = AggregationManager(two_switches, connections, pipeline, slots_per_switch=64)
        manager.install_pipeline_and_routes()
        s1, s2 = connections["s1"], connections["s2"]
        # one path each: /32 -> forward(port) (p4src/forwarding.p4), no ECMP bucket
        assert route_refs(s1) == [(0x0a000001, (1,)), (0x0a000002, (2,))]
        assert route_refs(s2) == [(0x0a000001, (2,)), (0x0a000002, (1,))]
        assert buckets(s1) == []

        plan = manager.start_job(4, ["h1", "h2"], window=16)
        assert plan.root == "s1"
        assert entries_by_action(s1, "agg_jobs") == [("job_root", (4,), (1, 2, 0, 16, 5))]
        assert entries_by_action(s2, "agg_jobs") == [
            ("job_nonroot", (4,), (1, 1, 0, 16, 5, 2, 1))]
        assert entries_by_action(s1, "agg_members") == [
            ("member_child", (4, 1), (0,)), ("member_child", (4, 2), (1,))]
        assert entries_by_action(s2, "agg_members") == [
            ("member_child", (4, 1), (0,)), ("member_parent", (4, 2), ())]
        assert entries_by_action(s1, "agg_result_addresses") == [
            ("result_to", (4, 1), (0x02000a000001, 0x0a000001, 20004)),
            ("result_to", (4, 2), (0x02000a00fffe, 0x0a00fffe, 9100))]
        assert s1.read_multicast_group(5) == [(1, 1), (2, 1)]
        assert s2.read_multicast_group(5) == [(1, 1)]
        assert s1.read_register("slot_state.count", 3) == 0

        manager.stop_job(4)
        for conn in (s1, s2):
            for table in ("agg_jobs", "agg_members", "agg_result_addresses"):
                assert conn.read_table(table) == []
            assert conn.read_multicast_group(5) == []
        assert len(s2.read_table("ipv4_routes")) == 2
        assert s1.read_counter("drop_reasons") == {i: (0, 0) for i in range(16)}
        assert manager.status() == {"s1": {"drops": {}, "events": {}},
                                    "s2": {"drops": {}, "events": {}}}
        # a second, read-only client (as `controller status` is) works beside the primary
        switch = two_switches.switches[1]
        reader = SwitchConnection("s2", f"127.0.0.1:{switch.grpc_port}", 1)
        try:
            reader.connect(timeout=10, primary=False).fetch_p4info()
            assert len(reader.read_table("ipv4_routes")) == 2
            assert AggregationManager.read_status({"s2": reader}) == \
                {"s2": {"drops": {}, "events": {}}}
        finally:
            reader.close()
    finally:
        for conn in connections.values():
            conn.close()


def write_register(conn, name, index, value):
    """A P4Runtime register MODIFY (p4switch implements it): plants a stuck slot's state."""
    from controller.p4info import encode_value
    from p4.v1 import p4runtime_pb2
    info = conn.helper.register(name)
    request = conn._request()
    entry = request.updates.add(type=p4runtime_pb2.Update.MODIFY).entity.register_entry
    entry.register_id = info.preamble.id
    entry.index.index = index
    entry.data.bitstring = encode_value(value, info.type_spec.bitstring.bit.bitwidth)
    conn._write(request)


def test_missing_ranks_reads_slot_bitmaps_over_p4runtime(pipeline, two_switches):
    connections = connect_all(two_switches, timeout=10)
    try:
        manager = AggregationManager(two_switches, connections, pipeline, slots_per_switch=64)
        manager.install_pipeline_and_routes()
        plan = manager.start_job(4, ["h1", "h2"], window=16)
        assert manager.missing_ranks(4).to_text() == \
            "job 4: no rank missing (no slot is waiting for a contribution)"
        # s1 (root: h1 contributor 0, s2 contributor 1) collects slot 5 version 1 at offset
        # 40 with h1's contribution only; s2 has never seen that round: h2 (rank 1) is missing
        cell = 2 * (plan.switches["s1"].slot_base + 5) + 1
        s1 = connections["s1"]
        for register, value in (("owner", plan.generation), ("round_offset", 40),
                                ("count", 1), ("seen", 0b01)):
            write_register(s1, f"slot_state.{register}", cell, value)
        report = manager.missing_ranks(4)
        assert report.to_text() == "job 4: rank 1 missing (h2)"
        (stuck,) = report.stuck
        assert (stuck.switch, stuck.slot, stuck.version, stuck.chunk_offset,
                stuck.missing_children, stuck.missing_hosts) == ("s1", 5, 1, 40, ("s2",), ("h2",))
        manager.stop_job(4)
    finally:
        for conn in connections.values():
            conn.close()


def test_grpc_blocking_waits_recheck_rarely_once_the_client_is_loaded():
    """controller.client sets grpc's idle re-check slice (one drain thread per switch woke
    10 times a second at grpc's 0.1 s); grpc's own wait must still use it: this fails if a
    grpc upgrade renames or stops reading MAXIMUM_WAIT_TIMEOUT."""
    from grpc import _common
    from controller import client
    slices, checks = [], iter([False, False, True])
    assert _common.MAXIMUM_WAIT_TIMEOUT == client.GRPC_IDLE_RECHECK_S == 3.0
    _common.wait(lambda timeout: slices.append(timeout), lambda: next(checks))
    assert slices == [3.0, 3.0]
    slices.clear()
    checks = iter([False, True])
    _common.wait(lambda timeout: slices.append(timeout), lambda: next(checks), timeout=0.5)
    assert len(slices) == 1 and 0 < slices[0] <= 0.5       # a timeout below it still holds
