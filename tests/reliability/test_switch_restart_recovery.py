"""controller.recovery without a network: what `recover_switch` writes to a restarted switch
is exactly what the AggregationManager had written to it (routes, every running job's
multicast groups and entries), the job's agg_jobs entry last, on a new connection that
replaces the old one in the manager; and the lines compare prints for a job that ran while
switches restarted.  (The real switches and P4Runtime: test_switch_restart.py.)"""

import pytest

import controller.recovery as recovery
from controller import AggregationManager, Flowlets
from controller.recovery import (RecoveryError, describe_job_outcome, recover_switch,
                                 restarts_during)
from topologies.spec import parse_topology
from topologies.supervisor import RestartEvent


class RecordingConnection:
    """Stands in for a SwitchConnection: remembers every write, in order."""

    def __init__(self, name):
        self.name = name
        self.helper = None
        self.writes = []
        self.closed = False

    def set_pipeline(self, pipeline):
        self.writes.append(("pipeline", pipeline))

    def fetch_p4info(self):
        self.writes.append(("fetch_p4info", None))

    def insert_entries(self, entries):
        self.writes += [("entry", e) for e in entries]

    def insert_multicast_group(self, group):
        self.writes.append(("group", group))

    def delete_entries(self, entries):
        self.writes += [("delete", e) for e in entries]

    def modify_entries(self, entries):
        self.writes += [("modify", e) for e in entries]

    def delete_multicast_group(self, group):
        self.writes.append(("delete", group))


@pytest.fixture
def leafspine():
    spec = parse_topology("leafspine:2,1,2")
    connections = {s.name: RecordingConnection(s.name) for s in spec.switches}
    manager = AggregationManager(spec, connections, pipeline="the-pipeline", slots_per_switch=64)
    manager.install_pipeline_and_routes()
    manager.start_job(1, ["h1", "h2", "h3", "h4"], 8)
    manager.start_job(2, ["h1", "h3"], 4)
    manager.start_job(3, ["h3", "h4"], 4)       # not on s1
    manager.stop_job(3)
    return manager


def test_recovery_rewrites_what_the_manager_wrote(leafspine, monkeypatch):
    manager = leafspine
    old = manager.connections["s1"]
    deleted = {w[1] for w in old.writes if w[0] == "delete"}
    assert deleted == set()                          # job 3 never touched s1
    written = [w for w in old.writes if w[0] != "delete"]
    fresh = RecordingConnection("s1")
    monkeypatch.setattr(recovery, "reconnect", lambda connection, timeout: fresh)

    generations = {job: plan.generation for job, plan in manager.jobs().items()}
    assert recover_switch(manager, "s1") is fresh
    assert manager.connections["s1"] is fresh
    assert fresh.writes[0] == ("pipeline", "the-pipeline")
    # jobs 1 and 2 (both on s1) moved to new generations, never used before
    renewed = {job: plan.generation for job, plan in manager.jobs().items()}
    assert sorted(renewed) == [1, 2]
    assert len(set(renewed.values()) | set(generations.values()) | {3}) == 5
    # the same writes as before the restart (routes, groups, entries of jobs 1 and 2), with
    # the new generation in the agg_jobs entries ...
    renamed = [(kind, e if kind != "entry" or e.table != "agg_jobs" else
                type(e)(e.switch, e.table, e.match, e.action,
                        {**e.params, "generation": renewed[e.match["hdr.agg.job_id"]]}))
               for kind, e in written]
    assert sorted(map(repr, fresh.writes)) == sorted(map(repr, renamed))
    # ... and every other switch of each job's tree had its agg_jobs entry modified to it
    for name in ("s2", "s3"):
        modified = [e for kind, e in manager.connections[name].writes if kind == "modify"]
        assert sorted((e.table, e.match["hdr.agg.job_id"], e.params["generation"])
                      for e in modified) == [("agg_jobs", 1, renewed[1]),
                                             ("agg_jobs", 2, renewed[2])]
    assert sum(1 for kind, e in fresh.writes if kind == "entry" and e.table == "agg_jobs") == 2
    # ... each job's agg_jobs entry after all its other entries, its group first
    for job in (1, 2):
        mine = [(kind, e) for kind, e in fresh.writes
                if kind in ("entry", "group") and
                (getattr(e, "match", {}).get("hdr.agg.job_id") == job or
                 (kind == "group" and e.group_id == job + 1))]
        assert mine[0][0] == "group"
        assert mine[-1][1].table == "agg_jobs"
        assert all(kind == "group" or e.table != "agg_jobs" for kind, e in mine[:-1])


def test_recovery_rewrites_the_ecmp_members_and_groups_before_the_routes(monkeypatch):
    """Two spines: a leaf's routes to the other leaf's hosts are an ECMP group of its two
    spine ports; the restarted leaf gets that group's buckets and its routes again."""
    spec = parse_topology("leafspine:2,2,2")
    connections = {s.name: RecordingConnection(s.name) for s in spec.switches}
    manager = AggregationManager(spec, connections, pipeline="the-pipeline", slots_per_switch=64)
    manager.install_pipeline_and_routes()
    before = connections["s1"].writes
    fresh = RecordingConnection("s1")
    monkeypatch.setattr(recovery, "reconnect", lambda connection, timeout: fresh)
    recover_switch(manager, "s1")
    assert fresh.writes == before
    kinds = [kind for kind, _ in fresh.writes]
    assert kinds == ["pipeline"] + ["entry"] * (2 + 4)
    buckets = {(e.match["meta.ecmp_group"], e.match["meta.ecmp_bucket"]): e.params["port"]
               for kind, e in fresh.writes if kind == "entry" and e.table == "ecmp_buckets"}
    assert buckets == {(1, 0): 3, (1, 1): 4}
    routes = {e.match["hdr.ipv4.dstAddr"].value & 0xff: (e.action, e.params)
              for kind, e in fresh.writes if kind == "entry" and e.table == "ipv4_routes"}
    assert routes == {1: ("forward", {"port": 1}), 2: ("forward", {"port": 2}),
                      3: ("ecmp", {"group": 1, "buckets": 2}),
                      4: ("ecmp", {"group": 1, "buckets": 2})}


def test_recovery_rewrites_the_flowlet_gap_after_the_routes(monkeypatch):
    """With flowlet switching on, every switch's flowlet_gap default entry is modified to
    the settings after its routes, at install and again on a restarted switch."""
    spec = parse_topology("leafspine:2,2,2")
    connections = {s.name: RecordingConnection(s.name) for s in spec.switches}
    manager = AggregationManager(spec, connections, pipeline="the-pipeline", slots_per_switch=64,
                                 flowlets=Flowlets(300, 65536))
    manager.install_pipeline_and_routes()
    for name, conn in connections.items():
        kind, entry = conn.writes[-1]
        assert kind == "modify" and entry.default and entry.switch == name
        assert (entry.table, entry.match, entry.action, entry.params) == \
            ("flowlet_gap", {}, "set_flowlet_gap", {"gap": 300, "max_flowlet_bytes": 65536})
    before = connections["s3"].writes
    fresh = RecordingConnection("s3")
    monkeypatch.setattr(recovery, "reconnect", lambda connection, timeout: fresh)
    recover_switch(manager, "s3")
    assert fresh.writes == before


def test_recovery_of_an_unknown_switch_or_a_failed_write_is_one_line(leafspine, monkeypatch):
    with pytest.raises(RecoveryError, match=r"^switch s9: not managed by this controller$"):
        recover_switch(leafspine, "s9")

    class Refusing(RecordingConnection):
        def set_pipeline(self, pipeline):
            raise RuntimeError("SetForwardingPipelineConfig failed: UNAVAILABLE:\n  down")
    monkeypatch.setattr(recovery, "reconnect", lambda connection, timeout: Refusing("s2"))
    with pytest.raises(RecoveryError, match=r"^switch s2: SetForwardingPipelineConfig failed: "
                                            r"UNAVAILABLE: down$"):
        recover_switch(leafspine, "s2")


def event(switch, died_at, restarted=True, error=None):
    return RestartEvent(switch, died_at, -9, died_at + 1 if restarted else None,
                        died_at + 2 if restarted and not error else None, error)


def test_outcome_lines():
    stall = ("error: job 3: no result from the switch for slot 5 (chunk 37, chunk offset "
             "2368, version 0) after 20 retransmissions over 54.4s")
    assert describe_job_outcome(3, [event("s1", 10.0)], stall) == (
        "switch s1 restarted during job 3; job failed: job 3: no result from the switch for "
        "slot 5 (chunk 37, chunk offset 2368, version 0) after 20 retransmissions over 54.4s")
    assert describe_job_outcome(3, [event("s1", 10.0), event("s2", 11.0), event("s1", 12.0)],
                                None) == ("switches s1, s2 restarted during job 3; job "
                                          "completed exactly")
    down = event("s2", 10.0, restarted=False, error="s2: gRPC port 9560 not open after 60 s")
    assert describe_job_outcome(4, [down], "job 4: no result") == (
        "switch s2 died during job 4 (switch s2 died (killed by signal 9); restart failed: "
        "s2: gRPC port 9560 not open after 60 s); job failed: job 4: no result")


def test_restarts_during_a_job_on_its_switches():
    events = [event("s1", 5.0), event("s1", 15.0), event("s2", 16.0), event("s3", 30.0)]
    assert restarts_during(events, 10.0, 20.0, {"s1": None, "s3": None}) == [events[1]]
    assert restarts_during(events, 10.0, 40.0, ["s2", "s3"]) == events[2:]


def test_fabric_restart_outcome_for_a_job(monkeypatch):
    """What experiments compare calls after a run: a line only if a switch of the job
    restarted while it ran."""
    import time
    from fabric import Fabric

    class History:
        def __init__(self, events):
            self._events = events

        def events(self):
            return list(self._events)

    fabric = Fabric(parse_topology("leafspine:2,1,2"), "builtin", say=lambda message: None)
    now = time.monotonic()
    fabric.network.supervisor = History([event("s2", now - 100), event("s1", now - 5)])
    assert fabric.restart_outcome(1, now - 10, ["s3", "s2"]) is None
    assert fabric.restart_outcome(1, now - 10, ["s3", "s1"], "error: job 1: no result "
                                  "from the switch for slot 2") == (
        "switch s1 restarted during job 1; job failed: job 1: no result from the switch for "
        "slot 2")
    assert fabric.restart_outcome(2, now - 200) == ("switches s2, s1 restarted during job 2; "
                                                    "job completed exactly")
