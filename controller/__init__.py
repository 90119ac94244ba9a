"""The aggregation manager: topology graph, reduction-tree planner, slot allocator and the
P4Runtime client that installs the plans (manager.py ties them together).  The names fabric/
and experiments/ use are importable from `controller`; their signatures are in the modules.
`python -m controller plan|status` (__main__.py); the switch side is docs/protocol.md.
"""

from __future__ import annotations

from .client import Pipeline, SwitchConnection, SwitchError
from .diagnosis import MissingReport, RegisterReadUnsupported, StuckRound, missing_ranks
from .entries import Flowlets, Lpm, MulticastGroup, RouteWrites, TableEntry, job_entries, route_writes
from .manager import AggregationManager
from .planner import CapacityError, Child, HostPlan, JobPlan, PlanError, Planner, SwitchPlan
from .slots import SlotAllocator, SlotCapacityError


def connect_all(spec, timeout: float = 10.0, thrift_ports: dict | None = None) -> dict:
    """A connected, primary SwitchConnection for every switch of `spec` (on 127.0.0.1).
    thrift_ports: {switch name: bmv2 Thrift port}, where registers are read and written
    on bmv2 (controller/bmv2_registers.py); None: over P4Runtime."""
    connections = {}
    try:
        for switch in spec.switches:
            conn = SwitchConnection(switch.name, f"127.0.0.1:{switch.grpc_port}",
                                    switch.device_id,
                                    thrift_port=(thrift_ports or {}).get(switch.name))
            connections[switch.name] = conn
            conn.connect(timeout)
    except BaseException:       # Ctrl-C too: an open stream's thread kept the process alive
        for conn in connections.values():
            conn.close()
        raise
    return connections
