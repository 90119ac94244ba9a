"""Entity translation (p4switch.device.entities) against a hand-written P4Info and runtime
tables/PRE built directly from specs: every match kind, priorities, wildcard reads, default
entries, multicast groups, and refused updates leaving the state unchanged."""
import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.device.datapath import Datapath
from p4switch.device.entities import EntityStore
from p4switch.device.errors import P4RuntimeError
from p4switch.device.p4info_index import P4InfoIndex
from p4switch.runtime.pre import PacketReplicationEngine
from p4switch.runtime.externs import ValueSet
from p4switch.runtime.names import resolve
from p4switch.runtime.tables import ActionSpec, KeySpec, Table, TableSpec

P4INFO = """
tables {
  preamble { id: 1 name: "c.mixed" }
  match_fields { id: 1 name: "hdr.a" bitwidth: 8 match_type: EXACT }
  match_fields { id: 2 name: "hdr.b" bitwidth: 16 match_type: TERNARY }
  match_fields { id: 3 name: "hdr.c" bitwidth: 8 match_type: RANGE }
  match_fields { id: 4 name: "hdr.d" bitwidth: 4 match_type: OPTIONAL }
  action_refs { id: 10 }
  action_refs { id: 11 scope: DEFAULT_ONLY }
}
tables {
  preamble { id: 2 name: "c.routes" }
  match_fields { id: 1 name: "hdr.dst" bitwidth: 32 match_type: LPM }
  action_refs { id: 10 }
  action_refs { id: 11 }
}
actions {
  preamble { id: 10 name: "c.set" }
  params { id: 1 name: "v" bitwidth: 12 }
}
actions { preamble { id: 11 name: "NoAction" } }
value_sets {
  preamble { id: 20 name: "p.ports" }
  match { id: 1 name: "" bitwidth: 16 match_type: EXACT }
  size: 2
}
value_sets {
  preamble { id: 21 name: "p.pairs" }
  match { id: 1 name: "a" bitwidth: 8 match_type: EXACT }
  match { id: 2 name: "b" bitwidth: 8 match_type: TERNARY }
  size: 4
}
"""


class HandBuiltSwitch:
    """The part of the Switch API the entity store uses, made of real runtime tables."""

    def __init__(self):
        actions = [ActionSpec("c.set", 1, [("v", 12)]), ActionSpec("NoAction", 0)]
        mixed_actions = [ActionSpec("c.set", 1, [("v", 12)]),
                         ActionSpec("NoAction", 0, scope="DEFAULT_ONLY")]
        self.tables = {
            "c.mixed": Table(TableSpec("c.mixed", [
                KeySpec("hdr.a", "exact", 8), KeySpec("hdr.b", "ternary", 16),
                KeySpec("hdr.c", "range", 8), KeySpec("hdr.d", "optional", 4)],
                mixed_actions, "NoAction")),
            "c.routes": Table(TableSpec("c.routes", [KeySpec("hdr.dst", "lpm", 32)],
                                        actions, "NoAction", size=5000)),
        }
        self.pre = PacketReplicationEngine()
        self.value_sets = {"p.ports": ValueSet("p.ports", 2), "p.pairs": ValueSet("p.pairs", 4)}

    def table(self, name):
        return self.tables[name]

    def value_set(self, name):
        return resolve(name, self.value_sets, "value set")


@pytest.fixture
def store():
    p4info = p4info_pb2.P4Info()
    text_format.Merge(P4INFO, p4info)
    datapath = Datapath(transmit=lambda port, frame: None)
    datapath.switch = HandBuiltSwitch()
    return EntityStore(P4InfoIndex(p4info), datapath)


def mixed_entry(a=b"\x01", b=(b"\x12\x00", b"\xff\x00"), c=(b"\x05", b"\x09"), d=b"\x03",
                priority=10, v=b"\x0a\xbc"):
    entry = p4runtime_pb2.TableEntry(table_id=1, priority=priority)
    entry.match.add(field_id=1).exact.value = a
    if b is not None:
        fm = entry.match.add(field_id=2)
        fm.ternary.value, fm.ternary.mask = b
    if c is not None:
        fm = entry.match.add(field_id=3)
        fm.range.low, fm.range.high = c
    if d is not None:
        entry.match.add(field_id=4).optional.value = d
    entry.action.action.action_id = 10
    entry.action.action.params.add(param_id=1, value=v)
    return entry


def route(prefix: bytes, plen: int, v=b"\x01"):
    entry = p4runtime_pb2.TableEntry(table_id=2)
    fm = entry.match.add(field_id=1)
    fm.lpm.value, fm.lpm.prefix_len = prefix, plen
    entry.action.action.action_id = 10
    entry.action.action.params.add(param_id=1, value=v)
    return entry


def write(store, kind, **entity):
    update = p4runtime_pb2.Update(type=kind)
    (field, value), = entity.items()
    getattr(update.entity, field).CopyFrom(value)
    return store.write(update)


def read_entries(store, **fields):
    entity = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(**fields))
    return [e.table_entry for e in store.read(entity)]


INSERT, MODIFY, DELETE = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                          p4runtime_pb2.Update.DELETE)


def code(error):
    return None if error is None else error.code


def test_every_match_kind_round_trips(store):
    entry = mixed_entry()
    assert write(store, INSERT, table_entry=entry) is None
    assert read_entries(store, table_id=1) == [entry]
    row, = store.datapath.switch.table("c.mixed").entries()
    assert row.priority == 10 and row.params == {"v": 0xabc}


def test_wildcards_are_left_out_and_dont_cares_dropped(store):
    written = mixed_entry(b=(b"\x00", b"\x00"), c=(b"\x00", b"\xff"), d=None)
    assert write(store, INSERT, table_entry=written) is None
    (read,) = read_entries(store, table_id=1)
    assert [fm.field_id for fm in read.match] == [1]
    assert write(store, INSERT, table_entry=route(b"\x00", 0)) is None
    (read,) = read_entries(store, table_id=2)
    assert list(read.match) == []


def test_same_match_different_priority_are_two_entries(store):
    assert write(store, INSERT, table_entry=mixed_entry(priority=1)) is None
    assert write(store, INSERT, table_entry=mixed_entry(priority=2)) is None
    assert code(write(store, INSERT, table_entry=mixed_entry(priority=2))) == \
        grpc.StatusCode.ALREADY_EXISTS
    keyed = mixed_entry(priority=2)
    keyed.ClearField("action")
    assert [e.priority for e in read_entries(store, table_id=1, match=keyed.match,
                                             priority=2)] == [2]
    assert len(read_entries(store)) == 2      # table id 0: every table


@pytest.mark.parametrize("entry, expected", [
    (mixed_entry(priority=0), grpc.StatusCode.INVALID_ARGUMENT),            # needs priority
    (mixed_entry(a=b"\x01\x00"), grpc.StatusCode.OUT_OF_RANGE),             # 9 bits in bit<8>
    (mixed_entry(b=(b"\x12\x34", b"\xff\x00")), grpc.StatusCode.INVALID_ARGUMENT),  # v & ~m
    (mixed_entry(c=(b"\x09", b"\x05")), grpc.StatusCode.INVALID_ARGUMENT),  # low > high
    (mixed_entry(d=b"\x10"), grpc.StatusCode.OUT_OF_RANGE),                 # bit<4>
    (mixed_entry(v=b"\x10\x00"), grpc.StatusCode.OUT_OF_RANGE),             # bit<12>
    (mixed_entry(a=b""), grpc.StatusCode.INVALID_ARGUMENT),
    (route(b"\x0a\x00\x00\x01", 24), grpc.StatusCode.INVALID_ARGUMENT),     # host bits set
    (route(b"\x0a\x00\x00\x00", 33), grpc.StatusCode.INVALID_ARGUMENT),
])
def test_bad_entries_refused_without_change(store, entry, expected):
    assert code(write(store, INSERT, table_entry=entry)) == expected
    assert read_entries(store) == []


def test_missing_exact_field_and_unknown_field(store):
    entry = mixed_entry()
    del entry.match[0]
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.INVALID_ARGUMENT
    entry = mixed_entry()
    entry.match[0].field_id = 9
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.INVALID_ARGUMENT
    entry = mixed_entry()
    entry.match.add(field_id=1).exact.value = b"\x02"
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.INVALID_ARGUMENT


def test_action_scope_and_unknown_action(store):
    entry = mixed_entry()
    entry.action.action.action_id = 11           # DEFAULT_ONLY in c.mixed
    del entry.action.action.params[:]
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.INVALID_ARGUMENT
    entry.action.action.action_id = 99
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.NOT_FOUND
    entry = mixed_entry()
    entry.action.action.params.add(param_id=1, value=b"\x01")
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.INVALID_ARGUMENT


def test_lpm_modify_delete(store):
    assert write(store, INSERT, table_entry=route(b"\x0a\x00\x00\x00", 8)) is None
    assert write(store, MODIFY, table_entry=route(b"\x0a\x00\x00\x00", 8, v=b"\x07")) is None
    (read,) = read_entries(store, table_id=2)
    assert read.action.action.params[0].value == b"\x07"
    assert code(write(store, DELETE, table_entry=route(b"\x0a\x00\x00\x00", 16))) == \
        grpc.StatusCode.NOT_FOUND
    assert write(store, DELETE, table_entry=route(b"\x0a\x00\x00\x00", 8)) is None
    assert read_entries(store) == []
    assert store.datapath.switch.table("c.routes").lookup(0x0a000001).hit is False


def test_default_entry(store):
    default = p4runtime_pb2.TableEntry(table_id=2, is_default_action=True)
    default.action.action.action_id = 10
    default.action.action.params.add(param_id=1, value=b"\x05")
    assert write(store, MODIFY, table_entry=default) is None
    assert read_entries(store, table_id=2, is_default_action=True) == [default]
    assert code(write(store, INSERT, table_entry=default)) == grpc.StatusCode.INVALID_ARGUMENT
    reset = p4runtime_pb2.TableEntry(table_id=2, is_default_action=True)
    assert write(store, DELETE, table_entry=reset) is None
    (read,) = read_entries(store, table_id=2, is_default_action=True)
    assert read.action.action.action_id == 11


def test_multicast_groups(store):
    group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=3)
    group.replicas.add(egress_port=1, instance=1)
    group.replicas.add(port=b"\x02", instance=1)
    pre = p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=group)
    assert write(store, INSERT, packet_replication_engine_entry=pre) is None
    assert store.datapath.switch.pre.multicast_replicas(3) == ((1, 1), (2, 1))
    assert code(write(store, INSERT, packet_replication_engine_entry=pre)) == \
        grpc.StatusCode.ALREADY_EXISTS
    group.replicas.add(egress_port=600, instance=0)            # beyond bit<9>
    pre = p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=group)
    assert code(write(store, MODIFY, packet_replication_engine_entry=pre)) == \
        grpc.StatusCode.INVALID_ARGUMENT
    assert store.datapath.switch.pre.multicast_replicas(3) == ((1, 1), (2, 1))
    read = store.read(p4runtime_pb2.Entity(
        packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            multicast_group_entry=p4runtime_pb2.MulticastGroupEntry())))
    replicas = read[0].packet_replication_engine_entry.multicast_group_entry.replicas
    assert [(r.egress_port, r.instance) for r in replicas] == [(1, 1), (2, 1)]


def test_unknown_table_read_is_not_found(store):
    with pytest.raises(P4RuntimeError) as e:
        store.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=77)))
    assert e.value.code == grpc.StatusCode.NOT_FOUND


def test_profile_actions_in_direct_tables_are_invalid_and_idle_timeouts_unimplemented(store):
    # (tables with action profiles: tests/device/test_action_profiles.py)
    entry = mixed_entry()
    entry.action.ClearField("action")
    entry.action.action_profile_member_id = 4
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.INVALID_ARGUMENT
    entry = mixed_entry()
    entry.idle_timeout_ns = 1000
    assert code(write(store, INSERT, table_entry=entry)) == grpc.StatusCode.UNIMPLEMENTED


def test_read_by_priority_and_match_without_table(store):
    assert write(store, INSERT, table_entry=mixed_entry(priority=1)) is None
    assert write(store, INSERT, table_entry=mixed_entry(priority=2)) is None
    assert [e.priority for e in read_entries(store, table_id=1, priority=2)] == [2]
    with pytest.raises(P4RuntimeError) as e:
        read_entries(store, match=mixed_entry().match)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT


def value_set_entry(value_set_id, *members):
    entry = p4runtime_pb2.ValueSetEntry(value_set_id=value_set_id)
    for member in members:
        m = entry.members.add()
        for field_id, value in member.items():
            fm = m.match.add(field_id=field_id)
            if isinstance(value, tuple):
                fm.ternary.value, fm.ternary.mask = value
            else:
                fm.exact.value = value
    return entry


def test_value_sets_replace_members_and_read_back(store):
    ports = value_set_entry(20, {1: b"\x12\xb5"}, {1: b"\x00\x35"})
    assert write(store, MODIFY, value_set_entry=ports) is None
    assert store.datapath.switch.value_sets["p.ports"].match(0x12b5)
    assert not store.datapath.switch.value_sets["p.ports"].match(0x12b6)
    pairs = value_set_entry(21, {1: b"\x01", 2: (b"\x10", b"\xf0")})
    assert write(store, MODIFY, value_set_entry=pairs) is None
    assert store.datapath.switch.value_sets["p.pairs"].match((1, 0x1f))
    assert not store.datapath.switch.value_sets["p.pairs"].match((1, 0x2f))
    read = [e.value_set_entry for e in store.read(p4runtime_pb2.Entity(
        value_set_entry=p4runtime_pb2.ValueSetEntry()))]
    assert read == [value_set_entry(20, {1: b"\x12\xb5"}, {1: b"\x35"}), pairs]  # canonical
    too_many = value_set_entry(20, {1: b"\x01"}, {1: b"\x02"}, {1: b"\x03"})
    assert code(write(store, MODIFY, value_set_entry=too_many)) == \
        grpc.StatusCode.RESOURCE_EXHAUSTED
    assert code(write(store, INSERT, value_set_entry=ports)) == grpc.StatusCode.INVALID_ARGUMENT
    assert [e.value_set_entry for e in store.read(p4runtime_pb2.Entity(
        value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=20)))] == [read[0]]


def test_big_reads_come_in_several_responses(store):
    from p4switch.device.p4runtime_server import P4RuntimeService
    updates = [p4runtime_pb2.Update(type=INSERT) for _ in range(4500)]
    for n, update in enumerate(updates):
        update.entity.table_entry.CopyFrom(route((0x0a000000 + n).to_bytes(4, "big"), 32))
    assert [store.write(u) for u in updates] == [None] * 4500
    service = P4RuntimeService(0, store.datapath)
    service.store = store
    request = p4runtime_pb2.ReadRequest(device_id=0)
    request.entities.add().table_entry.table_id = 2
    responses = list(service.Read(request, context=None))
    assert [len(r.entities) for r in responses] == [2000, 2000, 500]
    assert [e.table_entry for r in responses for e in r.entities] == [
        u.entity.table_entry for u in updates]
