"""The aggregation manager: topology graph, reduction-tree planner, P4Runtime installer.

API used by topologies/ and experiments/ (all names importable from `controller`):

    SwitchConnection(name: str, address: str, device_id: int, election_id: int = 1)
        .connect(timeout: float = 10.0, primary: bool = True) -> SwitchConnection
            # stream + primary arbitration; primary=False: reads only, beside another client
        .set_pipeline(pipeline: Pipeline) -> None             # SetForwardingPipelineConfig
        .fetch_p4info() -> None                # adopt the P4Info of the running pipeline
        .insert_entries(list[TableEntry]) / .delete_entries(list[TableEntry])
        .insert_multicast_group(MulticastGroup) / .delete_multicast_group(MulticastGroup)
        .read_counter(name: str) -> dict[int, tuple[int, int]]    # index -> (packets, bytes)
        .read_register(name: str, index: int) -> int   # p4switch only: bmv2's P4Runtime
                                                        # answers UNIMPLEMENTED for registers
        .read_register_cells(name: str) -> dict[int, int]   # every cell, one Read (p4switch)
        .read_table(name: str) -> list[p4runtime_pb2.TableEntry]
        .read_multicast_group(group_id: int) -> list[tuple[int, int]]  # (port, instance)
        .close() -> None
    connect_all(spec: TopologySpec, timeout: float = 10.0) -> dict[str, SwitchConnection]
        # one connected SwitchConnection per switch, at 127.0.0.1:<grpc_port>

    Pipeline(p4info: P4Info, device_config: bytes)
    Pipeline.from_files(p4info_path: str, device_config_path: str) -> Pipeline
        # P4Info as .txt/.txtpb (text format), .json or binary; device config as bytes
        # (p4switch's `compile -o` output, or bmv2's JSON from p4c-bm2-ss)

    AggregationManager(spec: TopologySpec, connections: dict[str, SwitchConnection],
                       pipeline: Pipeline | None = None, slots_per_switch: int = 1024)
        .install_pipeline_and_routes() -> None
            # sets `pipeline` on every switch (or, if None, adopts each switch's running
            # P4Info) and writes a /32 ipv4_routes entry per host on every switch
        .start_job(job_id: int, member_hosts: list[str], window: int) -> JobPlan
            # plans the reduction tree, reserves `window` slots on each of its switches and
            # installs it; raises PlanError (nothing installed) e.g. when a switch has no room:
            # "switch s1: job 3 needs 64 slots but only 10 contiguous of 1024 are free"
        .stop_job(job_id: int) -> None       # removes the job's entries/groups, frees slots
        .missing_ranks(job_id: int) -> MissingReport
            # for a stuck job: reads its slot bitmaps on every switch of its tree over
            # P4Runtime and names the ranks (positions in start_job's member_hosts) that have
            # not contributed to the rounds still collecting.  Typical use by `experiments
            # compare` when a worker exits 1 with "no result from the switch for slot ...":
            #     report = manager.missing_ranks(job)
            #     print(report.to_text())        # "job 3: ranks 3, 5 missing (h4, h6)"
            #     manager.stop_job(job)          # remove the entries, release the slots
            # raises RegisterReadUnsupported (a SwitchError, one-line message) on bmv2, whose
            # P4Runtime server does not implement register reads; PlanError if not running
        .jobs() -> dict[int, JobPlan]
        .status() -> dict[str, {"drops": {reason: packets}, "events": {event: packets}}]

    MissingReport: job_id, missing_ranks: list[int], missing_hosts: list[str],
                   stuck: list[StuckRound], to_text() -> str
    StuckRound: switch, slot, version, chunk_offset, missing_children, missing_hosts
    missing_ranks(plan: JobPlan, connections: dict[str, SwitchConnection]) -> MissingReport
        # the same without a manager (any {switch: connection} with the P4Info known)

    JobPlan: job_id, window, root (switch name), udp_port (20000 + job_id),
             generation (1..65535, new per installed job; agg_jobs parameter),
             switches: dict[str, SwitchPlan] (root first), hosts: dict[str, HostPlan],
             to_text() -> str (the tree as indented text)
    HostPlan: host, switch, port, contributor, switch_ip ("10.0.255.254")
        # the worker's --contributor and --switch-ip
    SwitchPlan: switch, children: list[Child], slot_base, slot_count, mcast_group, parent,
                parent_port, contributor_at_parent, is_root, fan_in
    Child: node, port, contributor, is_host

    Planner(spec, slots_per_switch=1024).plan(job_id, member_hosts, window) -> JobPlan
        # planning only (no switches), as `python -m controller plan` uses it

Command line: `python -m controller plan --topo T --workers N [--jobs M] [--window W]` and
`python -m controller status [--topo T]`.  The switch side is described in docs/protocol.md.
"""

from .client import Pipeline, SwitchConnection, SwitchError
from .diagnosis import MissingReport, RegisterReadUnsupported, StuckRound, missing_ranks
from .entries import Lpm, MulticastGroup, TableEntry, job_entries, route_entries
from .manager import AggregationManager
from .planner import Child, HostPlan, JobPlan, PlanError, Planner, SwitchPlan
from .slots import SlotAllocator, SlotCapacityError


def connect_all(spec, timeout: float = 10.0) -> dict:
    """A connected, primary SwitchConnection for every switch of `spec` (on 127.0.0.1)."""
    connections = {}
    try:
        for switch in spec.switches:
            conn = SwitchConnection(switch.name, f"127.0.0.1:{switch.grpc_port}",
                                    switch.device_id)
            connections[switch.name] = conn
            conn.connect(timeout)
    except Exception:
        for conn in connections.values():
            conn.close()
        raise
    return connections
