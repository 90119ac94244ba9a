"""What the manager writes: the exact entries and groups of a job, routes, stop, rollback."""

import pytest

from controller import AggregationManager, Lpm, MulticastGroup, TableEntry, job_entries
from controller.planner import PlanError, Planner
from topologies.spec import parse_topology

JOB = "hdr.agg.job_id"
IN = "standard_metadata.ingress_port"
OUT = "standard_metadata.egress_port"
OWNER = "hdr.agg.owner"


class RecordingConnection:
    """Stands in for a SwitchConnection: keeps what would be on the switch."""

    def __init__(self, fail_on_table=None):
        self.entries = {}
        self.groups = {}
        self.pipelines = []
        self.fail_on_table = fail_on_table

    def set_pipeline(self, pipeline):
        self.pipelines.append(pipeline)

    def insert_entries(self, entries):
        for e in entries:
            if e.table == self.fail_on_table:
                raise RuntimeError(f"refused {e.table}")
            assert e.key() not in self.entries, f"duplicate insert {e}"
            self.entries[e.key()] = e

    def modify_entries(self, entries):
        for e in entries:
            assert e.key() in self.entries, f"modify of a missing entry {e}"
            self.entries[e.key()] = e

    def delete_entries(self, entries):
        for e in entries:
            del self.entries[e.key()]

    def insert_multicast_group(self, group):
        assert group.group_id not in self.groups
        self.groups[group.group_id] = group

    def delete_multicast_group(self, group):
        del self.groups[group.group_id]


def test_star_job_entries_are_exactly_these():
    spec = parse_topology("star:3")
    plan = Planner(spec).plan(5, ["h1", "h3"], window=10)
    entries, groups = job_entries(plan, spec)
    assert entries == [
        TableEntry("s1", "agg_jobs", {JOB: 5}, "job_root",
                   {"generation": 1, "fan_in": 2, "slot_base": 0, "slot_count": 10,
                    "mcast_group": 6}),
        TableEntry("s1", "agg_members", {JOB: 5, IN: 1}, "member_child", {"contributor": 0}),
        TableEntry("s1", "agg_result_addresses", {JOB: 5, OUT: 1}, "result_to",
                   {"mac": 0x02000a000001, "ip": 0x0a000001, "udp_port": 20005}),
        TableEntry("s1", "agg_members", {JOB: 5, IN: 3}, "member_child", {"contributor": 1}),
        TableEntry("s1", "agg_result_addresses", {JOB: 5, OUT: 3}, "result_to",
                   {"mac": 0x02000a000003, "ip": 0x0a000003, "udp_port": 20005}),
        # rank 0 = h1 (port 1), rank 1 = h3 (port 3): reduce-scatter's owners
        TableEntry("s1", "agg_owner_ports", {JOB: 5, OWNER: 0, OUT: 1}, "toward_owner"),
        TableEntry("s1", "agg_owner_ports", {JOB: 5, OWNER: 1, OUT: 3}, "toward_owner"),
    ]
    assert groups == [MulticastGroup("s1", 6, ((1, 1), (3, 1)))]


def test_owner_ports_name_the_child_port_towards_every_rank_below_each_switch():
    spec = parse_topology("leafspine:2,1,2")       # s1, s2 leaves (h1 h2 | h3 h4), s3 spine
    plan = Planner(spec).plan(0, ["h4", "h1", "h3"], window=4)
    entries, _ = job_entries(plan, spec)
    owner = {(e.switch, e.match[OWNER], e.match[OUT]) for e in entries
             if e.table == "agg_owner_ports"}
    # ranks: h4 = 0, h1 = 1, h3 = 2; the spine's ports 1 (s1) and 2 (s2); hosts on 1, 2
    assert owner == {("s3", 1, 1), ("s3", 0, 2), ("s3", 2, 2),
                     ("s1", 1, 1), ("s2", 0, 2), ("s2", 2, 1)}
    assert all(e.action == "toward_owner" and e.params == {} for e in entries
               if e.table == "agg_owner_ports")


def test_nonroot_switch_gets_parent_port_membership_and_child_switch_gets_service_address():
    spec = parse_topology("tree:2,2")
    plan = Planner(spec).plan(0, ["h1", "h2", "h3"], window=4)
    entries, _ = job_entries(plan, spec)
    s2 = [e for e in entries if e.switch == "s2"]
    assert s2[:2] == [
        TableEntry("s2", "agg_jobs", {JOB: 0}, "job_nonroot",
                   {"generation": 1, "fan_in": 2, "slot_base": 0, "slot_count": 4,
                    "mcast_group": 1, "parent_port": 3, "contributor_at_parent": 0}),
        TableEntry("s2", "agg_members", {JOB: 0, IN: 3}, "member_parent"),
    ]
    root_addresses = [e for e in entries
                      if e.switch == "s1" and e.table == "agg_result_addresses"]
    assert root_addresses == [
        TableEntry("s1", "agg_result_addresses", {JOB: 0, OUT: port}, "result_to",
                   {"mac": 0x02000a00fffe, "ip": 0x0a00fffe, "udp_port": 9100})
        for port in (1, 2)]


def manager_for(topo, **fail):
    spec = parse_topology(topo)
    conns = {s.name: RecordingConnection(**fail) for s in spec.switches}
    return AggregationManager(spec, conns, pipeline="PIPELINE"), conns


def test_install_sets_pipeline_and_a_route_per_host_on_every_switch():
    manager, conns = manager_for("leafspine:2,1,2")
    manager.install_pipeline_and_routes()
    assert all(c.pipelines == ["PIPELINE"] for c in conns.values())
    # one path everywhere: every route is forward(port), no ECMP bucket anywhere
    assert all(e.table == "ipv4_routes" and e.action == "forward" for c in conns.values()
               for e in c.entries.values())
    routes = {(name, e.match["hdr.ipv4.dstAddr"], e.params["port"])
              for name, c in conns.items() for e in c.entries.values()}
    assert routes == {
        ("s1", Lpm(0x0a000001, 32), 1), ("s1", Lpm(0x0a000002, 32), 2),
        ("s1", Lpm(0x0a000003, 32), 3), ("s1", Lpm(0x0a000004, 32), 3),
        ("s2", Lpm(0x0a000001, 32), 3), ("s2", Lpm(0x0a000002, 32), 3),
        ("s2", Lpm(0x0a000003, 32), 1), ("s2", Lpm(0x0a000004, 32), 2),
        ("s3", Lpm(0x0a000001, 32), 1), ("s3", Lpm(0x0a000002, 32), 1),
        ("s3", Lpm(0x0a000003, 32), 2), ("s3", Lpm(0x0a000004, 32), 2)}


def test_restarted_switch_gets_its_routes_again_without_recomputing_them(monkeypatch):
    from controller.recovery import reinstall
    from controller.topology import TopologyGraph
    computed = []
    routes = TopologyGraph.routes
    monkeypatch.setattr(TopologyGraph, "routes",
                        lambda self: computed.append(1) or routes(self))
    manager, conns = manager_for("fattree:4")
    manager.install_pipeline_and_routes()
    manager.start_job(1, ["h1", "h16"], 8)
    assert computed == [1]
    before = {name: dict(c.entries) for name, c in conns.items()}
    assert any(e.table == "ecmp_buckets" for c in before.values() for e in c.values())
    for victim in ("s1", "s7", "s2"):     # in the job's tree: core, h1's edge; a core not in it
        fresh = conns[victim] = RecordingConnection()
        reinstall(manager, victim, fresh)
        assert fresh.pipelines == ["PIPELINE"]
        routes_of = lambda entries: {k: e for k, e in entries.items()        # noqa: E731
                                     if e.table in ("ipv4_routes", "ecmp_buckets")}
        assert routes_of(fresh.entries) == routes_of(before[victim]) != {}
    assert computed == [1]


def test_stop_job_removes_everything_and_frees_slots():
    manager, conns = manager_for("star:4")
    plan = manager.start_job(1, ["h1", "h2", "h3", "h4"], 1024)
    assert len(conns["s1"].entries) == 9 + 4 and list(conns["s1"].groups) == [2]
    assert manager.jobs() == {1: plan}
    with pytest.raises(PlanError, match="switch s1: no slots left for job 2 \\(all 1024 in use\\)"):
        manager.start_job(2, ["h1"], 1)
    manager.stop_job(1)
    assert conns["s1"].entries == {} and conns["s1"].groups == {}
    assert manager.start_job(2, ["h1"], 1024).switches["s1"].slot_base == 0
    with pytest.raises(PlanError, match="job 1 is not running"):
        manager.stop_job(1)


def test_failed_install_leaves_nothing_behind():
    manager, conns = manager_for("star:2", fail_on_table="agg_result_addresses")
    with pytest.raises(RuntimeError, match="refused agg_result_addresses"):
        manager.start_job(0, ["h1", "h2"], 4)
    assert conns["s1"].entries == {} and conns["s1"].groups == {}
    assert manager.jobs() == {}
    assert manager.planner.allocators["s1"].free_slots() == 1024


def test_manager_needs_a_connection_per_switch():
    spec = parse_topology("leafspine:2,1,1")
    with pytest.raises(ValueError, match="no connection for switch s2"):
        AggregationManager(spec, {"s1": RecordingConnection()})


def test_installs_spread_over_the_switch_processes():
    from controller.manager import spread_over_processes
    processes = {"s1": "A", "s2": "A", "s3": "A", "s4": "B", "s5": "C", "s6": "C"}
    names = ["s1", "s2", "s3", "s4", "s5", "s6"]
    assert spread_over_processes(names, processes) == ["s1", "s4", "s5", "s2", "s6", "s3"]
    assert spread_over_processes(names, None) == names
    manager, conns = manager_for("leafspine:2,2,1")        # s1 s2 leaves, s3 s4 spines
    programmed = []
    for name, conn in conns.items():
        conn.set_pipeline = lambda pipeline, name=name: programmed.append(name)
    manager.install_pipeline_and_routes(threads=1, processes={"s1": "p", "s2": "p",
                                                              "s3": "p", "s4": "q"})
    assert programmed == ["s1", "s4", "s2", "s3"]


def test_ecmp_groups_beyond_the_bucket_table_are_refused():
    """A group of 2 ports with weight 200 needs 400 buckets; p4src's groups have at most 256."""
    from controller.entries import route_writes
    from controller.topology import Route
    routes = [Route("s1", "10.0.0.9", (2, 3), 200)]
    with pytest.raises(ValueError, match="switch s1: ECMP needs 400 buckets, groups of up to "
                                         "400; p4src has 4096, groups of at most 256"):
        route_writes(routes)
    assert len(route_writes([Route("s1", "10.0.0.9", (2, 3), 128)]).entries) == 256 + 1
