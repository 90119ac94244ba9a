"""Planner and slot allocator: contributor indices, slot ranges, capacity refusal, trees."""

import pytest

from controller.planner import PlanError, Planner
from controller.slots import SlotAllocator, SlotCapacityError
from controller.topology import Route, TopologyGraph
from topologies.spec import Host, Link, Switch, TopologySpec, parse_topology


def hosts_of(spec, count=None):
    return [h.name for h in spec.hosts][:count]


def test_star_job_gives_each_host_its_port_and_a_unique_contributor():
    spec = parse_topology("star:5")
    plan = Planner(spec).plan(3, ["h2", "h4", "h5"], window=16)
    assert plan.root == "s1" and list(plan.switches) == ["s1"]
    sw = plan.switches["s1"]
    assert sw.is_root and sw.fan_in == 3
    assert [(c.node, c.port, c.contributor) for c in sw.children] == \
        [("h2", 2, 0), ("h4", 4, 1), ("h5", 5, 2)]
    assert (sw.slot_base, sw.slot_count, sw.mcast_group) == (0, 16, 4)
    assert {h: (p.switch, p.port, p.contributor, p.switch_ip) for h, p in plan.hosts.items()} == {
        "h2": ("s1", 2, 0, "10.0.255.254"),
        "h4": ("s1", 4, 1, "10.0.255.254"),
        "h5": ("s1", 5, 2, "10.0.255.254")}
    assert plan.udp_port == 20003


def test_concurrent_jobs_get_disjoint_slot_ranges_and_freed_slots_are_reused():
    spec = parse_topology("star:4")
    planner = Planner(spec, slots_per_switch=100)
    a = planner.plan(0, hosts_of(spec), 30).switches["s1"]
    b = planner.plan(1, hosts_of(spec, 2), 50).switches["s1"]
    assert (a.slot_base, b.slot_base) == (0, 30)
    with pytest.raises(PlanError) as refused:
        planner.plan(2, hosts_of(spec), 21)
    assert str(refused.value) == ("switch s1: job 2 needs 21 slots but only 20 contiguous "
                                  "of 100 are free")
    planner.release(0)
    c = planner.plan(2, hosts_of(spec), 21).switches["s1"]
    assert c.slot_base == 0
    ranges = sorted((sw.slot_base, sw.slot_base + sw.slot_count)
                    for plan in planner.jobs.values() for sw in plan.switches.values())
    assert ranges == [(0, 21), (30, 80)]


def test_refusal_on_one_switch_of_a_tree_reserves_nothing_anywhere():
    spec = parse_topology("leafspine:2,1,2")
    planner = Planner(spec, slots_per_switch=10)
    planner.plan(0, ["h1"], 8)            # only leaf s1 is used: 2 slots left there
    with pytest.raises(PlanError, match="^switch s1: job 1 needs 4 slots"):
        planner.plan(1, ["h1", "h3"], 4)
    assert {name: a.free_slots() for name, a in planner.allocators.items()} == \
        {"s1": 2, "s2": 10, "s3": 10}


def test_contributor_indices_are_unique_per_switch_in_a_fat_tree():
    spec = parse_topology("fattree:4")
    plan = Planner(spec).plan(0, hosts_of(spec), 4)
    for sw in plan.switches.values():
        indices = [c.contributor for c in sw.children]
        assert indices == list(range(len(indices)))
    # every host appears exactly once, below the switch it is plugged into
    assert sorted(plan.hosts) == sorted(hosts_of(spec))
    for host, hp in plan.hosts.items():
        assert spec.host_attachment(host) == (hp.switch, hp.port)


def test_leafspine_tree_uses_a_spine_and_sends_partials_up_with_leaf_indices():
    spec = parse_topology("leafspine:2,2,2")      # leaves s1,s2; spines s3,s4
    planner = Planner(spec)
    first = planner.plan(0, hosts_of(spec), 8)
    second = planner.plan(1, hosts_of(spec), 8)
    assert (first.root, second.root) == ("s3", "s4")   # concurrent jobs on different spines
    root = first.switches["s3"]
    assert [(c.node, c.port, c.contributor, c.is_host) for c in root.children] == \
        [("s1", 1, 0, False), ("s2", 2, 1, False)]
    leaf = first.switches["s2"]
    assert (leaf.parent, leaf.parent_port, leaf.contributor_at_parent) == ("s3", 3, 1)
    assert [(c.node, c.contributor) for c in leaf.children] == [("h3", 0), ("h4", 1)]
    assert second.switches["s1"].parent_port == 4


def test_hosts_below_one_leaf_need_only_that_leaf():
    spec = parse_topology("leafspine:2,2,3")
    plan = Planner(spec).plan(0, ["h4", "h6"], 8)
    assert plan.root == "s2" and list(plan.switches) == ["s2"]


def test_tree_text_shows_root_switches_hosts_indices_and_slots():
    spec = parse_topology("tree:2,2")
    text = Planner(spec).plan(7, hosts_of(spec), 4).to_text()
    assert text == "\n".join([
        "job 7: 4 workers, window 4, root s1, 3 switches",
        "  s1 (root): fan-in 2, slots 0-3, multicast group 8",
        "    s2 (parent s1 via port 3, contributor 0 there): fan-in 2, slots 0-3, "
        "multicast group 8",
        "      h1: port 1, contributor 0",
        "      h2: port 2, contributor 1",
        "    s3 (parent s1 via port 3, contributor 1 there): fan-in 2, slots 0-3, "
        "multicast group 8",
        "      h3: port 1, contributor 0",
        "      h4: port 2, contributor 1"])


@pytest.mark.parametrize("job_id, members, window, message", [
    (0, [], 4, "job 0 has no member hosts"),
    (0, ["h1", "h9"], 4, "job 0: no host named 'h9' in the topology"),
    (0, ["h1", "h1"], 4, "job 0: a host is listed twice"),
    (0, ["h1"], 0, "--window 0: a job's slots are 1..65535 (the switch counts them in 16 bits)"),
    (45536, ["h1"], 4, "job id 45536 outside 0..45535"),
])
def test_bad_job_requests_are_refused(job_id, members, window, message):
    with pytest.raises(PlanError) as error:
        Planner(parse_topology("star:3")).plan(job_id, members, window)
    assert str(error.value) == message


def test_more_than_64_contributors_on_one_switch_is_refused():
    spec = parse_topology("star:65")
    with pytest.raises(PlanError, match="switch s1: job 0 would have 65 contributors"):
        Planner(spec).plan(0, hosts_of(spec), 4)
    assert Planner(spec).plan(0, hosts_of(spec)[:64], 4).switches["s1"].fan_in == 64


def test_a_running_job_id_cannot_start_twice_and_unknown_jobs_cannot_stop():
    planner = Planner(parse_topology("star:2"))
    planner.plan(1, ["h1"], 2)
    with pytest.raises(PlanError, match="job 1 is already running"):
        planner.plan(1, ["h2"], 2)
    with pytest.raises(PlanError, match="job 5 is not running"):
        planner.release(5)


def test_each_planned_job_gets_a_new_generation_wrapping_past_zero():
    planner = Planner(parse_topology("star:2"))
    assert [planner.plan(j, ["h1"], 1).generation for j in range(3)] == [1, 2, 3]
    planner._last_generation = 65534
    assert [planner.plan(j, ["h2"], 1).generation for j in range(3, 6)] == [65535, 1, 2]


def test_slot_allocator_first_fit_and_merge():
    alloc = SlotAllocator("sX", 10)
    assert [alloc.allocate(j, 3) for j in range(3)] == [0, 3, 6]
    alloc.release(1)
    with pytest.raises(SlotCapacityError, match="only 3 contiguous of 10 are free"):
        alloc.allocate(9, 4)
    alloc.release(0)
    assert alloc.allocate(9, 6) == 0
    assert alloc.free_slots() == 1


def test_routes_follow_shortest_paths_on_a_hand_built_topology():
    # h1 - s1 -(2:1)- s2 - h2, built by hand as docs/design.md describes the spec
    spec = TopologySpec("json",
                        [Host("h1", "10.0.0.1", "02:00:0a:00:00:01"),
                         Host("h2", "10.0.0.2", "02:00:0a:00:00:02")],
                        [Switch("s1", 0, 9559), Switch("s2", 1, 9560)],
                        [Link("h1", None, "s1", 1), Link("h2", None, "s2", 3),
                         Link("s1", 2, "s2", 1)])
    assert sorted(TopologyGraph(spec).routes(), key=lambda r: (r.switch, r.host_ip)) == [
        Route("s1", "10.0.0.1", (1,)), Route("s1", "10.0.0.2", (2,)),
        Route("s2", "10.0.0.1", (1,)), Route("s2", "10.0.0.2", (3,))]
