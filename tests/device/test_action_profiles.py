"""P4Runtime action selectors through p4runtime-shell: ActionProfileMember and
ActionProfileGroup writes and reads, table entries pointing at a member, a group or a
one-shot action set, weights, and the refusals (a member in use, an unknown group or member,
a plain action in a table with a selector, weights over max_group_size). The ECMP program is
tests/frontend/programs/ecmp_selector.p4; packets go through the device's datapath, on both
back ends."""

import os
import socket

import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_sh.context import P4Type
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from p4switch import compile_file, compile_source
from p4switch.device.datapath import Datapath
from p4switch.device.p4runtime_server import P4RuntimeService, serve
from p4switch.p4info import to_text

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "frontend", "programs", "ecmp_selector.p4")
PROFILE = TABLE = "EcmpIngress.routes"


def crc16_arc(data: bytes) -> int:
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def flow_frame(src, dst, proto, sport, dport) -> bytes:
    eth = bytes.fromhex("aaaaaaaaaaaa" "bbbbbbbbbbbb" "0800")
    ip = bytes([0x45, 0, 0, 24, 0, 1, 0, 0, 64, proto, 0, 0]) + bytes(src) + bytes(dst)
    return eth + ip + sport.to_bytes(2, "big") + dport.to_bytes(2, "big")


def hash_index(src, dst, proto, sport, dport, size) -> int:
    data = bytes(src) + bytes(dst) + bytes([proto]) + sport.to_bytes(2, "big") + \
        dport.to_bytes(2, "big")
    return crc16_arc(data) % size


@pytest.fixture(params=["python", "c"])
def shell(tmp_path, request):
    import p4runtime_sh.shell as sh
    sent = []
    datapath = Datapath(transmit=lambda port, frame: sent.append((port, frame)),
                        backend=request.param)
    service = P4RuntimeService(device_id=5, datapath=datapath)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    server = serve(service, address, workers=4)
    program = compile_file(PROGRAM)
    p4info, config = tmp_path / "p4info.txtpb", tmp_path / "config.json"
    p4info.write_text(to_text(program.p4info))
    config.write_bytes(program.device_config)
    sh.setup(device_id=5, grpc_addr=address, election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info), str(config)))
    yield sh, datapath, sent
    sh.teardown()
    server.stop(None)


def add_members(sh, ports):
    for port in ports:
        m = sh.ActionProfileMember(PROFILE)(member_id=port, action="EcmpIngress.next_hop")
        m.action["mac"] = str(port)
        m.action["port"] = str(port)
        m.insert()


def route(sh, prefix, **ref):
    entry = sh.TableEntry(TABLE)
    entry.match["hdr.ipv4.dstAddr"] = prefix
    for name, value in ref.items():
        setattr(entry, name, value)
    entry.insert()
    return entry


FLOWS = [((10, 0, 0, 1), (10, 1, 2, 3), 17, 1000, 53), ((10, 0, 0, 3), (10, 1, 2, 3), 6, 40000, 80),
         ((10, 0, 0, 6), (10, 9, 9, 9), 17, 5002, 5001), ((10, 0, 0, 1), (10, 1, 2, 3), 17, 1001, 53),
         ((10, 0, 0, 7), (10, 9, 9, 9), 6, 1234, 443)]


def test_group_spreads_flows_by_hash_and_reads_back(shell):
    sh, datapath, sent = shell
    add_members(sh, [1, 2, 3, 4])
    group = sh.ActionProfileGroup(PROFILE)(group_id=10)
    for member in (1, 2, 3, 4):
        group.add(member)
    group.insert()
    route(sh, "10.0.0.0/8", group_id=10)

    for flow in FLOWS:
        datapath.inject(0, flow_frame(*flow), "test")
    assert [port for port, _ in sent] == [hash_index(*f, 4) + 1 for f in FLOWS]
    assert {port for port, _ in sent} == {1, 2, 3, 4}

    members = sorted((m.member_id, m.action.params[1].value)
                     for m in (x.msg() for x in sh.ActionProfileMember(PROFILE).read()))
    assert members == [(1, b"\x01"), (2, b"\x02"), (3, b"\x03"), (4, b"\x04")]
    (read_group,) = [g.msg() for g in sh.ActionProfileGroup(PROFILE).read()]
    assert [(m.member_id, m.weight) for m in read_group.members] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    (entry,) = [e.msg() for e in sh.TableEntry(TABLE).read()]
    assert entry.action.action_profile_group_id == 10

    with pytest.raises(P4RuntimeWriteException, match="still in use"):
        sh.ActionProfileMember(PROFILE)(member_id=2).delete()


def test_weights_and_members_and_one_shot_sets(shell):
    sh, datapath, sent = shell
    add_members(sh, [1, 2])
    group = sh.ActionProfileGroup(PROFILE)(group_id=7)
    group.add(1, weight=3).add(2, weight=1)
    group.insert()
    route(sh, "10.0.0.0/8", group_id=7)
    route(sh, "10.9.0.0/16", member_id=2)
    for flow in FLOWS:
        datapath.inject(0, flow_frame(*flow), "test")
    # The group lists member 1 three times: index 0-2 -> port 1, index 3 -> port 2.
    want = [2 if f[1][:2] == (10, 9) else (1 if hash_index(*f, 4) < 3 else 2) for f in FLOWS]
    assert [port for port, _ in sent] == want

    # A one-shot action set: its members and group stay out of member and group reads.
    oneshot = sh.Oneshot(TABLE)
    for port in (3, 4):
        action = sh.Action("EcmpIngress.next_hop")
        action["mac"], action["port"] = str(port), str(port)
        oneshot.add(action)
    route(sh, "192.168.0.0/16", oneshot=oneshot)
    sent.clear()
    flow = ((10, 0, 0, 1), (192, 168, 1, 1), 17, 1000, 53)
    datapath.inject(0, flow_frame(*flow), "test")
    assert [port for port, _ in sent] == [3 + hash_index(*flow, 2)]
    assert sorted(m.msg().member_id for m in sh.ActionProfileMember(PROFILE).read()) == [1, 2]
    assert [g.msg().group_id for g in sh.ActionProfileGroup(PROFILE).read()] == [7]
    entries = {e.msg().match[0].lpm.value: e.msg().action for e in sh.TableEntry(TABLE).read()}
    assert entries[bytes([10, 0, 0, 0])].action_profile_group_id == 7
    assert entries[bytes([10, 9, 0, 0])].action_profile_member_id == 2
    oneshot_set = entries[bytes([192, 168, 0, 0])].action_profile_action_set
    assert [a.action.params[1].value for a in oneshot_set.action_profile_actions] == [
        b"\x03", b"\x04"]
    # Deleting the entry takes its hidden members and group with it.
    entry = sh.TableEntry(TABLE)
    entry.match["hdr.ipv4.dstAddr"] = "192.168.0.0/16"
    entry.delete()
    profile = datapath.switch.action_profile(PROFILE)
    assert sorted(profile.members) == [1, 2] and sorted(profile.groups) == [7]


def test_refusals(shell):
    sh, _, _ = shell
    add_members(sh, [1])
    # A plain action in a table with a selector (p4runtime-shell will not send one: raw).
    entry = sh.TableEntry(TABLE)(member_id=1)
    entry.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    update.entity.table_entry.CopyFrom(entry.msg())
    action = update.entity.table_entry.action
    action.ClearField("action_profile_member_id")
    action.action.action_id = sh.context.get_obj_id(P4Type.action, "EcmpIngress.drop")
    with pytest.raises(P4RuntimeWriteException, match="action profile"):
        sh.client.write_update(update)
    with pytest.raises(P4RuntimeWriteException, match="no group 99"):
        route(sh, "10.0.0.0/8", group_id=99)
    with pytest.raises(P4RuntimeWriteException, match="no member 5"):
        sh.ActionProfileGroup(PROFILE)(group_id=1).add(5).insert()


def test_group_weights_are_held_to_max_group_size(tmp_path):
    """@max_group_size(3) on the selector: P4Info says so, and a group whose weights add up
    to more is RESOURCE_EXHAUSTED (sum_of_weights), one that fits is taken."""
    import p4runtime_sh.shell as sh
    source = open(PROGRAM).read().replace(
        "implementation = action_selector(",
        "@max_group_size(3) implementation = action_selector(")
    program = compile_source(source, "ecmp_small")
    (profile,) = program.p4info.action_profiles
    assert profile.max_group_size == 3 and profile.HasField("sum_of_weights")
    datapath = Datapath(transmit=lambda port, frame: None, backend="python")
    service = P4RuntimeService(device_id=6, datapath=datapath)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    server = serve(service, address, workers=4)
    p4info, config = tmp_path / "p4info.txtpb", tmp_path / "config.json"
    p4info.write_text(to_text(program.p4info))
    config.write_bytes(program.device_config)
    sh.setup(device_id=6, grpc_addr=address, election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info), str(config)))
    try:
        add_members(sh, [1, 2])
        with pytest.raises(P4RuntimeWriteException, match="more than max_group_size 3") as e:
            sh.ActionProfileGroup(PROFILE)(group_id=1).add(1, weight=2).add(2, weight=2).insert()
        assert "RESOURCE_EXHAUSTED" in str(e.value)
        sh.ActionProfileGroup(PROFILE)(group_id=1).add(1, weight=2).add(2).insert()
        assert [g.msg().group_id for g in sh.ActionProfileGroup(PROFILE).read()] == [1]
    finally:
        sh.teardown()
        server.stop(None)
