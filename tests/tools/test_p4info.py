"""P4Info generation from a hand-built elaborated pipeline (independent of the parser)."""

import pytest
from p4.config.v1 import p4info_pb2

from p4switch import p4info
from p4switch.frontend import ast, types


def _id_ann(value):
    return ast.Annotation(name="id", args=[ast.IntLiteral(value=value, const_value=value)])


def _pipeline():
    no_action = ast.ActionInfo(name="NoAction", decl=None)
    drop = ast.ActionInfo(name="MyIngress.drop", decl=None)
    forward = ast.ActionInfo(name="MyIngress.ipv4_forward", decl=None, params=[
        ast.ActionParamInfo(name="dstAddr", bitwidth=48),
        ast.ActionParamInfo(name="port", bitwidth=9),
    ])
    pinned = ast.ActionInfo(name="MyIngress.pinned", decl=None, annotations=[_id_ann(0x42)])
    lpm = ast.TableInfo(name="MyIngress.ipv4_lpm", decl=None,
                        keys=[ast.KeyFieldInfo(name="hdr.ipv4.dstAddr", match_kind="lpm", bitwidth=32)],
                        actions=[ast.TableActionInfo(action=forward), ast.TableActionInfo(action=drop),
                                 ast.TableActionInfo(action=no_action)],
                        default_action=drop, default_is_const=True)
    acl = ast.TableInfo(name="MyEgress.acl", decl=None, size=64,
                        keys=[ast.KeyFieldInfo(name="hdr.ipv4.isValid()", match_kind="exact", bitwidth=1),
                              ast.KeyFieldInfo(name="meta.x", match_kind="ternary", bitwidth=8,
                                               annotations=[_id_ann(7)])],
                        actions=[ast.TableActionInfo(action=drop, scope="TABLE_ONLY"),
                                 ast.TableActionInfo(action=pinned)],
                        default_action=no_action, const_entries=[object()], entries_const=True)
    counter = ast.ExternInstance(name="MyIngress.hits", extern="counter", size=16,
                                 args={"type": "packets_and_bytes"})
    dcounter = ast.ExternInstance(name="MyEgress.acl_hits", extern="direct_counter",
                                  args={"type": "bytes"}, owner_table=acl)
    acl.direct_counter = dcounter
    meter = ast.ExternInstance(name="MyIngress.m", extern="meter", size=4, args={"type": "packets"})
    reg = ast.ExternInstance(name="MyIngress.r", extern="register", size=32,
                             type_args=[types.BitsType(32)], element_width=32)
    learn_t = types.StructType("learn_t", None, [("mac", types.BitsType(48)), ("port", types.BitsType(9))])
    packet_in_t = types.HeaderType("packet_in_t", None, [("ingress_port", types.BitsType(9)),
                                                         ("pad", types.BitsType(7))])
    return ast.Pipeline(
        package="V1Switch", main=None,
        tables=[lpm, acl], actions=[no_action, drop, forward, pinned],
        externs=[counter, dcounter, meter, reg],
        digests=[ast.DigestInfo(name="learn_t", type=learn_t)],
        controller_headers=[ast.ControllerHeaderInfo(name="packet_in", type=packet_in_t)],
    )


def _by_name(items):
    return {item.preamble.name: item for item in items}


def test_ids_follow_prefix_and_name_hash():
    info = p4info.build_p4info(_pipeline())
    actions = _by_name(info.actions)
    tables = _by_name(info.tables)
    # Values as P4Runtime tooling knows them for these names (e.g. NoAction = 21257015).
    assert actions["NoAction"].preamble.id == 21257015
    assert actions["MyIngress.drop"].preamble.id == 0x01000000 | 8875752
    assert tables["MyIngress.ipv4_lpm"].preamble.id == 0x02000000 | 3820724
    assert actions["MyIngress.pinned"].preamble.id == 0x01000042
    for item in info.counters:
        assert item.preamble.id >> 24 == p4info_pb2.P4Ids.COUNTER
    assert info.registers[0].preamble.id >> 24 == p4info_pb2.P4Ids.REGISTER
    assert info.digests[0].preamble.id >> 24 == p4info_pb2.P4Ids.DIGEST
    assert info.controller_packet_metadata[0].preamble.id >> 24 == p4info_pb2.P4Ids.CONTROLLER_HEADER


def test_tables_actions_and_aliases():
    info = p4info.build_p4info(_pipeline())
    assert info.pkg_info.arch == "v1model"
    tables, actions = _by_name(info.tables), _by_name(info.actions)
    lpm = tables["MyIngress.ipv4_lpm"]
    assert lpm.preamble.alias == "ipv4_lpm"
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in lpm.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, p4info_pb2.MatchField.LPM)]
    assert lpm.size == 1024
    assert lpm.const_default_action_id == actions["MyIngress.drop"].preamble.id
    assert not lpm.is_const_table
    acl = tables["MyEgress.acl"]
    assert [(f.id, f.name) for f in acl.match_fields] == [(1, "hdr.ipv4.isValid()"), (7, "meta.x")]
    refs = [(r.id, r.scope) for r in acl.action_refs]
    assert refs == [
        (actions["MyIngress.drop"].preamble.id, p4info_pb2.ActionRef.TABLE_ONLY),
        (actions["MyIngress.pinned"].preamble.id, p4info_pb2.ActionRef.TABLE_AND_DEFAULT),
        (actions["NoAction"].preamble.id, p4info_pb2.ActionRef.DEFAULT_ONLY),  # implicit default
    ]
    assert acl.size == 64 and acl.is_const_table and acl.const_default_action_id == 0
    assert list(acl.direct_resource_ids) == [info.direct_counters[0].preamble.id]
    fwd = actions["MyIngress.ipv4_forward"]
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "dstAddr", 48), (2, "port", 9)]


def test_externs_digest_and_packet_metadata():
    info = p4info.build_p4info(_pipeline())
    (counter,) = info.counters
    assert (counter.preamble.name, counter.spec.unit, counter.size) == (
        "MyIngress.hits", p4info_pb2.CounterSpec.BOTH, 16)
    (dcounter,) = info.direct_counters
    assert dcounter.spec.unit == p4info_pb2.CounterSpec.BYTES
    assert dcounter.direct_table_id == _by_name(info.tables)["MyEgress.acl"].preamble.id
    (meter,) = info.meters
    assert (meter.spec.unit, meter.size) == (p4info_pb2.MeterSpec.PACKETS, 4)
    (reg,) = info.registers
    assert (reg.type_spec.bitstring.bit.bitwidth, reg.size) == (32, 32)
    (digest,) = info.digests
    assert digest.type_spec.struct.name == "learn_t"
    members = info.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("mac", 48), ("port", 9)]
    (pin,) = info.controller_packet_metadata
    assert pin.preamble.name == "packet_in"
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [(1, "ingress_port", 9), (2, "pad", 7)]


def test_text_round_trip_and_stability():
    first = p4info.to_text(p4info.build_p4info(_pipeline()))
    second = p4info.to_text(p4info.build_p4info(_pipeline()))
    assert first == second
    assert p4info.from_text(first) == p4info.build_p4info(_pipeline())


def test_collisions_resolve_by_linear_probing_in_name_order():
    alloc = p4info.IdAllocator()
    alloc.request(2, "b")
    alloc.request(2, "a")
    alloc.request(2, "c", [_id_ann(p4info.jenkins_one_at_a_time("a") & 0xFFFFFF)])
    alloc.assign()
    low_a = p4info.jenkins_one_at_a_time("a") & 0xFFFFFF
    assert alloc.id_of(2, "c") == (2 << 24) | low_a
    assert alloc.id_of(2, "a") == (2 << 24) | ((low_a + 1) & 0xFFFFFF)


def test_conflicting_ids_raise():
    alloc = p4info.IdAllocator()
    alloc.request(1, "x", [_id_ann(5)])
    alloc.request(1, "y", [_id_ann(5)])
    with pytest.raises(p4info.P4InfoError, match="used twice"):
        alloc.assign()
