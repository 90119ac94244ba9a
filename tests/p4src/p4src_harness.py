"""Drive p4src/main.p4 in the in-process p4switch for the p4src tests.

Compiles the program (cached per AGG_K/AGG_SLOTS), installs jobs with the controller's own
AggregationManager through `SwitchApiConnection` (the controller's connection interface on a
`p4switch.Switch`), and builds aggregation packets byte for byte as docs/design.md specifies.
"""

import os
import struct

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from contracts.wire import AGG_UDP_PORT, MSG_CONTRIBUTION, MSG_RESULT, SERVICE_IP, SERVICE_MAC
from p4switch import Switch, compile_file
from p4switch.runtime.tables import LPM, Exact

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAIN_P4 = os.path.join(REPO, "p4src", "main.p4")
CONTRIBUTION, RESULT = MSG_CONTRIBUTION, MSG_RESULT
AGG_PORT = AGG_UDP_PORT

_programs = {}


def p4switch_api():
    """(compile_file, Switch, Exact, LPM) of p4switch."""
    return compile_file, Switch, Exact, LPM


def program(k: int = 4, slots: int = 16):
    compile_file, _, _, _ = p4switch_api()
    if (k, slots) not in _programs:
        _programs[k, slots] = compile_file(MAIN_P4, defines={"AGG_K": str(k),
                                                              "AGG_SLOTS": str(slots)})
    return _programs[k, slots]


class SwitchApiConnection:
    """The controller's SwitchConnection methods, applied to an in-process p4switch Switch."""

    def __init__(self, switch, p4info=None):
        from controller.p4info import P4InfoHelper
        _, _, self.Exact, self.LPM = p4switch_api()
        self.switch = switch
        self.helper = P4InfoHelper(p4info) if p4info is not None else None

    def set_pipeline(self, pipeline):
        raise AssertionError("the in-process switch already runs p4src")

    def fetch_p4info(self):
        pass

    def _match(self, entry):
        from controller.entries import Lpm
        return {name: self.LPM(v.value, v.prefix_len) if isinstance(v, Lpm) else self.Exact(v)
                for name, v in entry.match.items()}

    def insert_entries(self, entries):
        for e in entries:
            self.switch.table(e.table).insert(self._match(e), e.action, dict(e.params))

    def modify_entries(self, entries):
        for e in entries:
            if e.default:
                self.switch.table(e.table).set_default(e.action, dict(e.params))
            else:
                self.switch.table(e.table).modify(self._match(e), e.action, dict(e.params))

    def delete_entries(self, entries):
        for e in entries:
            self.switch.table(e.table).delete(self._match(e))

    def reset_register_cells(self, name, first, end):
        register = self.switch.register(name)
        for index in range(first, end):
            register.write(index, 0)

    def read_register_cells(self, name):
        register = self.switch.register(name)
        return {i: register.read(i) for i in range(register.size)}

    def insert_multicast_group(self, group):
        self.switch.pre.set_multicast_group(group.group_id, list(group.replicas))

    def delete_multicast_group(self, group):
        self.switch.pre.delete_multicast_group(group.group_id)


def fabric(topo: str, k: int = 4, slots: int = 16, flowlets=None, clock=None, backend=None):
    """(spec, {name: Switch}, AggregationManager) with routes installed (`clock`: the
    switches' microsecond clock, for ingress_global_timestamp; `backend`: p4switch's)."""
    from controller import AggregationManager
    from topologies.spec import parse_topology
    _, Switch, _, _ = p4switch_api()
    spec = parse_topology(topo)
    switches = {s.name: Switch(program(k, slots), clock=clock, backend=backend)
                for s in spec.switches}
    manager = AggregationManager(spec, {n: SwitchApiConnection(s, program(k, slots).p4info)
                                        for n, s in switches.items()},
                                 slots_per_switch=slots,
                                 **({} if flowlets is None else {"flowlets": flowlets}))
    manager.install_pipeline_and_routes()
    return spec, switches, manager


def agg_payload(msg_type, version, job, slot, contributor, values, exponent=0, overflow=0,
                offset=0, num_elements=None):
    """The 16-byte header of docs/design.md followed by the big-endian int32 values."""
    n = len(values) if num_elements is None else num_elements
    first = (msg_type << 4) | (version << 3) | (overflow << 2)
    header = struct.pack("!BBHHHIHH", first, exponent, job, slot, contributor, offset, n, 0)
    return header + struct.pack(f"!{len(values)}i", *values)


def contribution(host, job, slot, version, contributor, values, **fields) -> bytes:
    """A worker's contribution as it leaves `host` (a topologies.spec.Host)."""
    payload = agg_payload(CONTRIBUTION, version, job, slot, contributor, values, **fields)
    return bytes(Ether(src=host.mac, dst=SERVICE_MAC, type=0x0800)
                 / IP(src=host.ip, dst=SERVICE_IP, id=7, ttl=64)
                 / UDP(sport=20000 + job, dport=AGG_PORT) / payload)


def result_for(member_mac, member_ip, udp_port, job, slot, version, contributor, values,
               **fields) -> bytes:
    """A result as the switch addresses it to one member (UDP checksum 0, IPv4 checksum
    recomputed); `contributor`/`offset` are those of the packet that completed the slot."""
    payload = agg_payload(RESULT, version, job, slot, contributor, values, **fields)
    return bytes(Ether(src=SERVICE_MAC, dst=member_mac, type=0x0800)
                 / IP(src=SERVICE_IP, dst=member_ip, id=7, ttl=64)
                 / UDP(sport=AGG_PORT, dport=udp_port, chksum=0) / payload)


def result_to_host(host, job, slot, version, contributor, values, **fields) -> bytes:
    return result_for(host.mac, host.ip, 20000 + job, job, slot, version, contributor, values,
                      **fields)


def with_zero_udp_checksum(frame: bytes) -> bytes:
    """The frame as a switch forwards an aggregation packet (its UDP checksum zeroed)."""
    packet = Ether(frame)
    packet[UDP].chksum = 0
    return bytes(packet)


DROP_REASON_COUNT = 16     # p4src/headers.p4
EVENT_COUNT = 7


def counts(switch, counter_name, size) -> dict:
    """{index: packets} of the non-zero cells of an indirect counter of `size` cells."""
    counter = switch.counter(counter_name)
    return {i: counter.read(i)[0] for i in range(size) if counter.read(i)[0]}


def drops(switch) -> dict:
    return counts(switch, "drop_reasons", DROP_REASON_COUNT)


def events(switch) -> dict:
    return counts(switch, "agg_events", EVENT_COUNT)
