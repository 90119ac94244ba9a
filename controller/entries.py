"""What the controller writes into the switches, before any P4Runtime encoding.

`job_entries(plan, spec)` and `route_writes(routes)` turn plans into plain `TableEntry` and
`MulticastGroup` values named as in p4src (table, match
field, action, action profile and parameter names as they appear in the P4Info; by unique
suffix).  Keeping this step free of gRPC lets the tests check exactly what is installed.  A job's
entries include agg_owner_ports (`owner_port_entries`): which child port leads to each worker
rank, so the results of a sum into shards (contracts/jobs.py REDUCE_SCATTER) keep their values
only towards their owner.

Routes (p4src/forwarding.p4): a route with one port is the ipv4_routes entry
`forward(port)`; a route with several is `ecmp(group, buckets)`, where the group is the
switch's group of exactly those ports, numbered 1, 2, ... per switch in the order of their
sorted port lists, and buckets = ports x the route's weight.  Each group's ecmp_buckets
entries (group, b) -> forward(port) lead bucket b to the (b // weight)-th port: the same
choice as a selector of those ports with that weight each, (hash mod n*w) / w.
With flowlets on (`Flowlets`, p4src/flowlet.p4), every switch also gets the default entry
set_flowlet_gap(gap, max_flowlet_bytes) of flowlet_gap; otherwise that table keeps NoAction
(ECMP per flow).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from contracts.wire import (AGG_UDP_PORT, ECMP_BUCKETS, ECMP_MAX_GROUP_SIZE, SERVICE_IP,
                            SERVICE_MAC)

from .planner import JobPlan

# p4src names (docs/protocol.md, "Tables")
JOBS_TABLE = "agg_jobs"
MEMBERS_TABLE = "agg_members"
RESULT_ADDRESSES_TABLE = "agg_result_addresses"
OWNER_PORTS_TABLE = "agg_owner_ports"
OWNER_FIELD = "hdr.agg.owner"
ROUTES_TABLE = "ipv4_routes"
ECMP_BUCKETS_TABLE = "ecmp_buckets"
FORWARD_ACTION = "forward"
ECMP_ACTION = "ecmp"
ECMP_GROUP_FIELD = "meta.ecmp_group"
ECMP_BUCKET_FIELD = "meta.ecmp_bucket"
FLOWLET_TABLE = "flowlet_gap"
FLOWLET_ACTION = "set_flowlet_gap"
JOB_ID_FIELD = "hdr.agg.job_id"
INGRESS_PORT_FIELD = "standard_metadata.ingress_port"
EGRESS_PORT_FIELD = "standard_metadata.egress_port"
DST_ADDR_FIELD = "hdr.ipv4.dstAddr"
DROP_REASONS_COUNTER = "drop_reasons"
EGRESS_DROPS_COUNTER = "egress_drops"
EVENTS_COUNTER = "agg_events"

DROP_REASONS = {
    1: "not_ipv4", 2: "no_route", 3: "truncated", 4: "wrong_k", 5: "unknown_job",
    6: "not_member", 7: "wrong_contributor", 8: "slot_range", 9: "bad_msg_type",
    10: "stale_result", 11: "no_result_address", 12: "stale_contribution", 13: "bad_length",
    14: "spoofed_source", 15: "unsupported_flags",
}
EVENTS = {
    0: "added", 1: "completed", 2: "sent_up", 3: "duplicate", 4: "result_resent",
    5: "partial_resent", 6: "parent_result",
}


@dataclass(frozen=True)
class Lpm:
    """An LPM match value."""

    value: int
    prefix_len: int


@dataclass(frozen=True)
class TableEntry:
    """A table entry.  `default`: the table's default entry (no match; written with
    MODIFY)."""

    switch: str
    table: str
    match: dict                  # field name -> int (exact) | Lpm
    action: str
    params: dict = field(default_factory=dict)   # parameter name -> int
    default: bool = False

    def key(self) -> tuple:
        """What identifies the entry in its table (for deletion)."""
        return (self.switch, self.table, tuple(sorted(self.match.items(), key=str)))


@dataclass(frozen=True)
class Flowlets:
    """How the switches cut host flows into flowlets, each placed anew on the flow's
    equal-cost paths (p4src/flowlet.p4): after a pause longer than `gap_us` microseconds, and
    past `max_bytes` bytes; 0 turns either off, both 0 leaves ECMP per flow."""

    gap_us: int = 0
    max_bytes: int = 0

    @property
    def on(self) -> bool:
        return bool(self.gap_us or self.max_bytes)


@dataclass(frozen=True)
class MulticastGroup:
    switch: str
    group_id: int
    replicas: tuple              # ((egress_port, instance), ...)


@dataclass(frozen=True)
class RouteWrites:
    """Everything the routes put on the switches, in the order it must be written
    (`defaults`: default entries, modified last)."""

    entries: list
    defaults: list = field(default_factory=list)

    def on(self, switch: str) -> "RouteWrites":
        """The part on one switch."""
        return RouteWrites([e for e in self.entries if e.switch == switch],
                           [d for d in self.defaults if d.switch == switch])

    def by_switch(self, switches) -> dict:
        """{switch: its part} for every one of `switches`, in one pass (`on` for all)."""
        parts = {name: RouteWrites([], []) for name in switches}
        for kind in ("entries", "defaults"):
            for item in getattr(self, kind):
                getattr(parts[item.switch], kind).append(item)
        return parts


def ip_to_int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


def mac_to_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def route_writes(routes, flowlets: Flowlets = Flowlets()) -> RouteWrites:
    """ipv4_routes entries (/32 -> forward or ecmp) and ecmp_buckets entries for
    `topology.Route`s, and with flowlets on each switch's flowlet settings (module
    docstring)."""
    groups = {}                                # (switch, ports) -> weight
    for r in routes:
        if len(r.ports) > 1:
            groups.setdefault((r.switch, r.ports), r.weight)
    numbered = {}                              # (switch, ports) -> (group id, buckets)
    groups_on, buckets_on, entries = {}, {}, []  # per switch: groups and buckets so far
    for switch, ports in sorted(groups):
        weight = groups[switch, ports]
        buckets = len(ports) * weight
        group_id = groups_on[switch] = groups_on.get(switch, 0) + 1
        used = buckets_on[switch] = buckets_on.get(switch, 0) + buckets
        numbered[switch, ports] = (group_id, buckets)
        if buckets > ECMP_MAX_GROUP_SIZE or used > ECMP_BUCKETS:
            raise ValueError(f"switch {switch}: ECMP needs {used} buckets, groups of up to "
                             f"{buckets}; p4src has {ECMP_BUCKETS}, groups of "
                             f"at most {ECMP_MAX_GROUP_SIZE}")
        for bucket in range(buckets):
            entries.append(TableEntry(switch, ECMP_BUCKETS_TABLE,
                                      {ECMP_GROUP_FIELD: group_id, ECMP_BUCKET_FIELD: bucket},
                                      FORWARD_ACTION, {"port": ports[bucket // weight]}))
    host_prefixes: dict[str, Lpm] = {}       # one per host, shared by its routes
    for r in routes:
        prefix = host_prefixes.get(r.host_ip)
        if prefix is None:
            prefix = host_prefixes[r.host_ip] = Lpm(ip_to_int(r.host_ip), 32)
        match = {DST_ADDR_FIELD: prefix}
        if len(r.ports) > 1:
            group_id, buckets = numbered[r.switch, r.ports]
            entries.append(TableEntry(r.switch, ROUTES_TABLE, match, ECMP_ACTION,
                                      {"group": group_id, "buckets": buckets}))
        else:
            entries.append(TableEntry(r.switch, ROUTES_TABLE, match, FORWARD_ACTION,
                                      {"port": r.ports[0]}))
    settings = {"gap": flowlets.gap_us, "max_flowlet_bytes": flowlets.max_bytes}
    defaults = ([TableEntry(switch, FLOWLET_TABLE, {}, FLOWLET_ACTION, settings, default=True)
                 for switch in sorted({r.switch for r in routes})] if flowlets.on else [])
    return RouteWrites(entries, defaults)


def job_entries(plan: JobPlan, spec) -> tuple[list, list]:
    """(table entries, multicast groups) that install `plan` on its switches."""
    entries, groups = [], []
    job = plan.job_id
    for name, sw in plan.switches.items():
        common = {"generation": plan.generation, "fan_in": sw.fan_in,
                  "slot_base": sw.slot_base, "slot_count": sw.slot_count,
                  "mcast_group": sw.mcast_group}
        if sw.is_root:
            entries.append(TableEntry(name, JOBS_TABLE, {JOB_ID_FIELD: job}, "job_root", common))
        else:
            entries.append(TableEntry(name, JOBS_TABLE, {JOB_ID_FIELD: job}, "job_nonroot",
                                      {**common, "parent_port": sw.parent_port,
                                       "contributor_at_parent": sw.contributor_at_parent}))
            entries.append(TableEntry(name, MEMBERS_TABLE,
                                      {JOB_ID_FIELD: job, INGRESS_PORT_FIELD: sw.parent_port},
                                      "member_parent"))
        for child in sw.children:
            entries.append(TableEntry(name, MEMBERS_TABLE,
                                      {JOB_ID_FIELD: job, INGRESS_PORT_FIELD: child.port},
                                      "member_child", {"contributor": child.contributor}))
            entries.append(TableEntry(name, RESULT_ADDRESSES_TABLE,
                                      {JOB_ID_FIELD: job, EGRESS_PORT_FIELD: child.port},
                                      "result_to", result_address(plan, spec, child)))
        groups.append(MulticastGroup(name, sw.mcast_group,
                                     tuple((child.port, 1) for child in sw.children)))
    entries += owner_port_entries(plan)
    return entries, groups


def owner_port_entries(plan: JobPlan) -> list:
    """agg_owner_ports: on every switch of the tree, per worker rank below it (rank = the
    host's place in the member list), the child port that leads to it.  Results never leave
    through the parent port, so ranks above need no entry (p4src/egress_rewrite.p4); that
    keeps the entries at ranks x tree depth instead of ranks x switches."""
    ranks = {host: rank for rank, host in enumerate(plan.hosts)}
    entries = []

    def ranks_below(name: str) -> list:
        below = []
        for child in plan.switches[name].children:
            found = [ranks[child.node]] if child.is_host else ranks_below(child.node)
            entries.extend(TableEntry(name, OWNER_PORTS_TABLE,
                                      {JOB_ID_FIELD: plan.job_id, OWNER_FIELD: rank,
                                       EGRESS_PORT_FIELD: child.port}, "toward_owner")
                           for rank in found)
            below += found
        return below

    ranks_below(plan.root)
    return entries


def result_address(plan: JobPlan, spec, child, switch_port: int = AGG_UDP_PORT) -> dict:
    """A worker gets results on its host at 20000 + job; a child switch at the service
    address and its design's port (`switch_port`)."""
    if child.is_host:
        host = spec.host(child.node)
        return {"mac": mac_to_int(host.mac), "ip": ip_to_int(host.ip), "udp_port": plan.udp_port}
    return {"mac": mac_to_int(SERVICE_MAC), "ip": ip_to_int(SERVICE_IP), "udp_port": switch_port}
