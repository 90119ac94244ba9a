"""The switch as a device, end to end: `python -m p4switch run --no-p4` on veth pairs to hosts
in fresh network namespaces, driven over P4Runtime by p4runtime-shell and by raw stubs."""
import queue
import socket
import subprocess
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

from device_env import PROGRAM, Network, compile_program, in_netns, running_switch
from p4rt_client import DELETE, INSERT, MODIFY, Client, load_p4info, update, write_errors
from p4switch.device.pcap import read_pcap

pytestmark = pytest.mark.emulation

ROUTER_MAC = "00:00:00:00:01:00"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """(p4info path, device config path) from `python -m p4switch compile`."""
    return compile_program(PROGRAM, tmp_path_factory.mktemp("compiled"))


@pytest.fixture
def network():
    net = Network(3)
    try:
        yield net
    finally:
        net.close()


@pytest.fixture
def switch(network, tmp_path):
    with running_switch(network, tmp_path, extra=["--pcap", str(tmp_path / "pcaps")]) as sw:
        yield sw


@pytest.fixture
def controller(switch, compiled):
    """A primary raw-stub client that has pushed the pipeline."""
    p4info_path, device_config_path = compiled
    client = Client(switch.address, switch.device_id, election_id=10)
    assert client.arbitrate().status.code == grpc.StatusCode.OK.value[0]
    with open(device_config_path, "rb") as f:
        client.set_pipeline(load_p4info(p4info_path), f.read())
    yield client
    client.close()


def udp_frame(src_host, dst_ip: str, ttl=64, payload=b"p4switch device test payload!!"):
    return Ether(src=src_host.mac, dst=ROUTER_MAC) / IP(
        src=src_host.ip, dst=dst_ip, ttl=ttl, id=7) / UDP(sport=1234, dport=5678) / payload


def routed(frame, dst_mac: str) -> bytes:
    """The frame after forward(dst_mac, port): MACs rewritten, TTL - 1, checksum redone."""
    out = frame.copy()
    out[Ether].src, out[Ether].dst = frame[Ether].dst, dst_mac
    out[IP].ttl -= 1
    del out[IP].chksum
    return bytes(out)


def ip_bytes(address: str) -> bytes:
    return bytes(int(part) for part in address.split("."))


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def canonical(value: bytes) -> bytes:
    """P4Runtime's canonical bytestring: no leading zero bytes (zero is one zero byte)."""
    return value.lstrip(b"\0") or b"\0"


# ---- the acceptance path: p4runtime-shell against --no-p4 ------------------------

def test_shell_setup_insert_read_multicast_and_routing(switch, network, compiled, tmp_path):
    import p4runtime_sh.shell as sh
    p4info_path, device_config_path = compiled
    h1, h2, h3 = network.hosts
    sh.setup(device_id=switch.device_id, grpc_addr=switch.address, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info_path, device_config_path))
    try:
        entry = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.forward")
        entry.match["hdr.ipv4.dstAddr"] = "10.0.2.0/24"
        entry.action["dstMac"] = h2.mac
        entry.action["port"] = str(h2.port)
        entry.insert()

        read = [e.msg() for e in sh.TableEntry("MyIngress.ipv4_lpm").read()]
        assert len(read) == 1
        (field,) = read[0].match
        assert (field.lpm.value, field.lpm.prefix_len) == (ip_bytes("10.0.2.0"), 24)
        params = {p.param_id: p.value for p in read[0].action.action.params}
        assert params == {1: canonical(mac_bytes(h2.mac)), 2: bytes([h2.port])}

        group = sh.MulticastGroupEntry(7)
        group.add(h2.port, 1).add(h3.port, 2)
        group.insert()
        groups = [g.msg().multicast_group_entry for g in sh.MulticastGroupEntry(7).read()]
        assert [(r.egress_port, r.instance) for r in groups[0].replicas] == [(2, 1), (3, 2)]

        mcast = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.multicast")
        mcast.match["hdr.ipv4.dstAddr"] = "10.0.9.0/24"
        mcast.action["group"] = "7"
        mcast.insert()
    finally:
        sh.teardown()

    frame = udp_frame(h1, "10.0.2.1")
    h1.send(bytes(frame))
    assert h2.receive(count=1) == [routed(frame, h2.mac)]

    frame = udp_frame(h1, "10.0.9.9")
    h1.send(bytes(frame))
    assert h2.receive(count=1) == [bytes(frame)]
    assert h3.receive(count=1) == [bytes(frame)]
    assert h1.receive(timeout=0.3) == []

    pcaps = tmp_path / "pcaps"
    assert read_pcap(str(pcaps / f"{h1.switch_interface}_in.pcap"))[0] == bytes(
        udp_frame(h1, "10.0.2.1"))
    assert read_pcap(str(pcaps / f"{h2.switch_interface}_out.pcap"))[0] == routed(
        udp_frame(h1, "10.0.2.1"), h2.mac)
    assert read_pcap(str(pcaps / f"{h3.switch_interface}_out.pcap")) == [bytes(frame)]
    log = open(switch.log_path).read()
    routed_frame = bytes(udp_frame(h1, "10.0.2.1"))
    assert f"received {len(routed_frame)} bytes on port 1 ({h1.switch_interface})" in log
    assert "MyIngress.ipv4_lpm" in log and "MyIngress.forward" in log
    assert f"port {h2.port}" in log


def test_shell_packet_out_and_packet_in(switch, network, compiled):
    import p4runtime_sh.shell as sh
    h1, h2, _ = network.hosts
    sh.setup(device_id=switch.device_id, grpc_addr=switch.address, election_id=(0, 2),
             config=sh.FwdPipeConfig(*compiled))
    try:
        frame = bytes(udp_frame(h1, "10.0.2.1"))
        sh.PacketOut(payload=frame, egress_port=str(h2.port)).send()
        assert h2.receive(count=1) == [frame]

        sniffer = sh.PacketIn()
        punt = sh.TableEntry("ipv4_lpm")(action="to_cpu")
        punt.match["hdr.ipv4.dstAddr"] = "10.0.5.0/24"
        punt.insert()
        punted = bytes(udp_frame(h1, "10.0.5.5"))
        h1.send(punted)
        (packet_in,) = list(sniffer.sniff(timeout=2))
        assert packet_in.packet.payload == punted
        assert [int.from_bytes(m.value, "big") for m in packet_in.packet.metadata] == [
            h1.port, 0]
    finally:
        sh.teardown()


def test_unrouted_packet_is_dropped_and_sigterm_exits_zero(switch, network, controller):
    h1, h2, h3 = network.hosts
    h1.send(bytes(udp_frame(h1, "10.0.2.1")))         # no route: default action drops
    assert h2.receive(timeout=0.5) == [] and h3.receive(timeout=0.1) == []
    assert switch.stop() == 0
    assert switch.stderr() == ""


def test_no_pipeline_forwards_nothing_and_refuses_requests(switch, network):
    h1, h2, _ = network.hosts
    h1.send(bytes(udp_frame(h1, "10.0.2.1")))
    assert h2.receive(timeout=0.5) == []
    client = Client(switch.address, switch.device_id, election_id=1)
    try:
        client.arbitrate()
        for call in (lambda: client.read(p4runtime_pb2.Entity(
                        table_entry=p4runtime_pb2.TableEntry())),
                     lambda: client.write(),
                     lambda: client.stub.GetForwardingPipelineConfig(
                         p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0))):
            with pytest.raises(grpc.RpcError) as e:
                call()
            assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        client.close()


# ---- arbitration ----------------------------------------------------------------------------

def test_backup_client_cannot_write_and_takes_over_by_arbitrating_higher(switch, controller):
    backup = Client(switch.address, switch.device_id, election_id=5, p4info=controller.p4info)
    try:
        status = backup.arbitrate()
        assert status.status.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
        assert status.election_id.low == 10
        entry = backup.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": (ip_bytes("10.0.3.0"), 24)},
                                   "forward", {"dstMac": mac_bytes("00:00:00:00:00:03"),
                                               "port": b"\x03"})
        with pytest.raises(grpc.RpcError) as e:
            backup.write(update(INSERT, table_entry=entry))
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as e:
            backup.set_pipeline(controller.p4info, b"anything")
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # Reads are for everyone; the refused write left the table empty.
        assert backup.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
            table_id=backup.table_id("ipv4_lpm")))) == []
        packet_out = p4runtime_pb2.StreamMessageRequest()
        packet_out.packet.payload = b"\x00" * 60
        backup.send_stream(packet_out)
        refused = backup.next("error").error
        assert refused.canonical_code == grpc.StatusCode.PERMISSION_DENIED.value[0]
        assert refused.packet_out.packet_out.payload == packet_out.packet.payload
        controller.close()
        orphaned = backup.next("arbitration").arbitration
        assert orphaned.status.code == grpc.StatusCode.NOT_FOUND.value[0]
        assert backup.arbitrate(election_id=11).status.code == grpc.StatusCode.OK.value[0]
        backup.election_id = 11
        backup.write(update(INSERT, table_entry=entry))
    finally:
        backup.close()


def test_duplicate_election_id_ends_the_stream(switch, controller):
    other = Client(switch.address, switch.device_id, election_id=10)
    try:
        other.send_stream(p4runtime_pb2.StreamMessageRequest(
            arbitration=p4runtime_pb2.MasterArbitrationUpdate(
                device_id=switch.device_id,
                election_id=p4runtime_pb2.Uint128(high=0, low=10))))
        other._reader.join(timeout=5)
        assert other.stream_status == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        other.close()


def test_stream_half_close_ends_cleanly(switch):
    client = Client(switch.address, switch.device_id, election_id=3)
    client.arbitrate()
    client.close()
    assert client.stream_status == grpc.StatusCode.OK


# ---- table entries -------------------------------------------------------------------------

def lpm_entry(client, prefix: str, plen: int, port: int, mac: str):
    """An ipv4_lpm entry in canonical bytestrings, as the switch reads it back."""
    return client.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": (ip_bytes(prefix), plen)},
                              "forward", {"dstMac": canonical(mac_bytes(mac)),
                                          "port": bytes([port])})


def read_table(client, table: str, **fields):
    entry = p4runtime_pb2.TableEntry(table_id=client.table_id(table), **fields)
    return [e.table_entry for e in client.read(p4runtime_pb2.Entity(table_entry=entry))]


def test_modify_and_delete_change_forwarding(switch, network, controller):
    h1, h2, h3 = network.hosts
    controller.write(update(INSERT, table_entry=lpm_entry(controller, "10.0.2.0", 24, 2, h2.mac)))
    frame = udp_frame(h1, "10.0.2.1")
    h1.send(bytes(frame))
    assert h2.receive(count=1) == [routed(frame, h2.mac)]

    controller.write(update(MODIFY, table_entry=lpm_entry(controller, "10.0.2.0", 24, 3, h3.mac)))
    h1.send(bytes(frame))
    assert h3.receive(count=1) == [routed(frame, h3.mac)]
    assert h2.receive(timeout=0.3) == []
    (read,) = read_table(controller, "ipv4_lpm")
    assert read == lpm_entry(controller, "10.0.2.0", 24, 3, h3.mac)

    controller.write(update(DELETE, table_entry=lpm_entry(controller, "10.0.2.0", 24, 3, h3.mac)))
    assert read_table(controller, "ipv4_lpm") == []
    h1.send(bytes(frame))
    assert h3.receive(timeout=0.5) == []


def test_padded_and_canonical_bytestrings_read_back_canonical(controller):
    entry = controller.table_entry(                         # padded forms
        "ipv4_lpm", {"hdr.ipv4.dstAddr": (b"\x0a\x00\x02\x00", 24)},
        "forward", {"dstMac": b"\x00\x00\x00\x00\x00\x02", "port": b"\x00\x02"})
    controller.write(update(INSERT, table_entry=entry))
    (read,) = read_table(controller, "ipv4_lpm")
    params = [p.value for p in read.action.action.params]
    assert params == [b"\x02", b"\x02"]
    assert read.match[0].lpm.value == b"\x0a\x00\x02\x00"


def test_wildcard_and_keyed_reads(controller):
    entries = [lpm_entry(controller, f"10.0.{n}.0", 24, n, f"00:00:00:00:00:0{n}")
               for n in (1, 2, 3)]
    controller.write(*[update(INSERT, table_entry=e) for e in entries])
    acl = controller.table_entry(
        "acl", {"hdr.ipv4.srcAddr": ("ternary", ip_bytes("10.0.1.0"), ip_bytes("255.255.255.0")),
                "hdr.ipv4.protocol": ("range", b"\x06", b"\x11")}, "deny", priority=20)
    controller.write(update(INSERT, table_entry=acl))
    everything = [e.table_entry for e in controller.read(
        p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))]
    assert sorted(map(bytes, map(p4runtime_pb2.TableEntry.SerializeToString, everything))) == \
        sorted(e.SerializeToString() for e in entries + [acl])
    keyed = read_table(controller, "ipv4_lpm", match=entries[1].match)
    assert keyed == [entries[1]]
    assert read_table(controller, "acl", match=acl.match, priority=20) == [acl]
    assert read_table(controller, "acl", match=acl.match, priority=21) == []


def test_default_entry_modify_read_and_reset(switch, network, controller):
    h1, h2, _ = network.hosts
    default = controller.table_entry("ipv4_lpm", {}, "forward",
                                     {"dstMac": canonical(mac_bytes(h2.mac)), "port": b"\x02"})
    default.is_default_action = True
    controller.write(update(MODIFY, table_entry=default))
    assert read_table(controller, "ipv4_lpm", is_default_action=True) == [default]
    frame = udp_frame(h1, "10.0.77.1")
    h1.send(bytes(frame))
    assert h2.receive(count=1) == [routed(frame, h2.mac)]
    with pytest.raises(grpc.RpcError) as e:
        controller.write(update(INSERT, table_entry=default))
    assert write_errors(e.value)[0][0] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    reset = p4runtime_pb2.TableEntry(table_id=default.table_id, is_default_action=True)
    controller.write(update(DELETE, table_entry=reset))
    (after,) = read_table(controller, "ipv4_lpm", is_default_action=True)
    assert after.action.action.action_id == controller.id_of("actions", "MyIngress.drop")


# ---- malformed requests: right codes, state unchanged ---------------------------------------

def failed_write_codes(controller, *updates):
    with pytest.raises(grpc.RpcError) as e:
        controller.write(*updates)
    assert e.value.code() == grpc.StatusCode.UNKNOWN
    return [code for code, _ in write_errors(e.value)]


CODE = {name: getattr(grpc.StatusCode, name).value[0] for name in (
    "OK", "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "PERMISSION_DENIED")}


def test_malformed_writes_get_the_right_codes_and_change_nothing(controller):
    good = lpm_entry(controller, "10.0.2.0", 24, 2, "00:00:00:00:00:02")
    controller.write(update(INSERT, table_entry=good))
    before = read_table(controller, "ipv4_lpm")

    too_wide = lpm_entry(controller, "10.0.3.0", 24, 2, "00:00:00:00:00:02")
    too_wide.action.action.params[1].value = b"\x02\x00"          # port is bit<9>
    bad_prefix = lpm_entry(controller, "10.0.3.1", 24, 2, "00:00:00:00:00:02")
    unknown_table = p4runtime_pb2.TableEntry()
    unknown_table.CopyFrom(good)
    unknown_table.table_id = 0x0dead
    missing_param = lpm_entry(controller, "10.0.4.0", 24, 2, "00:00:00:00:00:02")
    del missing_param.action.action.params[0]
    acl_no_priority = controller.table_entry(
        "acl", {"hdr.ipv4.protocol": ("range", b"\x06", b"\x11")}, "deny", priority=0)
    lpm_with_priority = lpm_entry(controller, "10.0.5.0", 24, 2, "00:00:00:00:00:02")
    lpm_with_priority.priority = 3
    wrong_kind = lpm_entry(controller, "10.0.6.0", 24, 2, "00:00:00:00:00:02")
    wrong_kind.match[0].exact.value = b"\x0a\x00\x06\x00"

    codes = failed_write_codes(
        controller,
        update(INSERT, table_entry=good),                 # duplicate
        update(INSERT, table_entry=too_wide),
        update(INSERT, table_entry=bad_prefix),
        update(INSERT, table_entry=unknown_table),
        update(INSERT, table_entry=missing_param),
        update(INSERT, table_entry=acl_no_priority),
        update(INSERT, table_entry=lpm_with_priority),
        update(INSERT, table_entry=wrong_kind),
        update(DELETE, table_entry=lpm_entry(controller, "10.0.8.0", 24, 2, "00:00:00:00:00:02")),
        update(MODIFY, table_entry=lpm_entry(controller, "10.0.8.0", 24, 2, "00:00:00:00:00:02")))
    assert codes == [CODE["ALREADY_EXISTS"], CODE["OUT_OF_RANGE"], CODE["INVALID_ARGUMENT"],
                     CODE["NOT_FOUND"], CODE["INVALID_ARGUMENT"], CODE["INVALID_ARGUMENT"],
                     CODE["INVALID_ARGUMENT"], CODE["INVALID_ARGUMENT"], CODE["NOT_FOUND"],
                     CODE["NOT_FOUND"]]
    assert read_table(controller, "ipv4_lpm") == before
    assert read_table(controller, "acl") == []


def test_partly_failing_batch_applies_the_good_updates(controller):
    first = lpm_entry(controller, "10.0.1.0", 24, 1, "00:00:00:00:00:01")
    second = lpm_entry(controller, "10.0.2.0", 24, 2, "00:00:00:00:00:02")
    codes = failed_write_codes(controller, update(INSERT, table_entry=first),
                               update(INSERT, table_entry=first),
                               update(INSERT, table_entry=second))
    assert codes == [CODE["OK"], CODE["ALREADY_EXISTS"], CODE["OK"]]
    assert sorted(e.SerializeToString() for e in read_table(controller, "ipv4_lpm")) == \
        sorted([first.SerializeToString(), second.SerializeToString()])


def test_unsupported_atomicity_and_wrong_device(controller):
    entry = lpm_entry(controller, "10.0.1.0", 24, 1, "00:00:00:00:00:01")
    with pytest.raises(grpc.RpcError) as e:
        controller.write(update(INSERT, table_entry=entry),
                         atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    request = p4runtime_pb2.ReadRequest(device_id=controller.device_id + 1)
    request.entities.add().table_entry.SetInParent()
    with pytest.raises(grpc.RpcError) as e:
        list(controller.stub.Read(request))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert read_table(controller, "ipv4_lpm") == []


def test_bad_pipeline_config_keeps_the_running_one(controller):
    controller.write(update(INSERT, table_entry=lpm_entry(controller, "10.0.1.0", 24, 1,
                                                          "00:00:00:00:00:01")))
    with pytest.raises(grpc.RpcError) as e:
        controller.set_pipeline(controller.p4info, b"not a device config")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(read_table(controller, "ipv4_lpm")) == 1


# ---- pipeline config -----------------------------------------------------------------------

def test_get_pipeline_config_response_types_and_reconcile(controller, compiled):
    Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
    Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
    with open(compiled[1], "rb") as f:
        device_config = f.read()
    controller.write(update(INSERT, table_entry=lpm_entry(controller, "10.0.1.0", 24, 1,
                                                          "00:00:00:00:00:01")))
    controller.set_pipeline(controller.p4info, device_config, action=Set.RECONCILE_AND_COMMIT,
                            cookie=42)
    assert len(read_table(controller, "ipv4_lpm")) == 1     # same program: state kept

    def get(kind):
        return controller.stub.GetForwardingPipelineConfig(
            Get(device_id=controller.device_id, response_type=kind)).config
    full = get(Get.ALL)
    assert full.p4info == controller.p4info and full.p4_device_config == device_config
    assert full.cookie.cookie == 42
    cookie_only = get(Get.COOKIE_ONLY)
    assert not cookie_only.HasField("p4info") and not cookie_only.p4_device_config
    assert get(Get.P4INFO_AND_COOKIE).p4info == controller.p4info
    assert get(Get.DEVICE_CONFIG_AND_COOKIE).p4_device_config == device_config

    controller.set_pipeline(controller.p4info, device_config, action=Set.VERIFY)
    assert len(read_table(controller, "ipv4_lpm")) == 1
    controller.set_pipeline(controller.p4info, device_config, action=Set.VERIFY_AND_SAVE)
    controller.set_pipeline(controller.p4info, b"", action=Set.COMMIT)
    assert read_table(controller, "ipv4_lpm") == []           # committed: fresh state
    caps = controller.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert caps.p4runtime_api_version.startswith("1.")


# ---- packet I/O ----------------------------------------------------------------------------

def test_packet_out_and_packet_in(switch, network, controller):
    h1, h2, _ = network.hosts
    frame = bytes(udp_frame(h1, "10.0.2.1"))
    header = controller._find("controller_packet_metadata", "packet_out")
    port_id = next(m.id for m in header.metadata if m.name == "egress_port")
    out = p4runtime_pb2.StreamMessageRequest()
    out.packet.payload = frame
    out.packet.metadata.add(metadata_id=port_id, value=b"\x02")
    controller.send_stream(out)
    assert h2.receive(count=1) == [frame]

    controller.write(update(INSERT, table_entry=controller.table_entry(
        "ipv4_lpm", {"hdr.ipv4.dstAddr": (ip_bytes("10.0.5.0"), 24)}, "to_cpu")))
    punted = bytes(udp_frame(h1, "10.0.5.5"))
    h1.send(punted)
    packet_in = controller.next("packet").packet
    assert packet_in.payload == punted
    in_header = controller._find("controller_packet_metadata", "packet_in")
    ingress_id = next(m.id for m in in_header.metadata if m.name == "ingress_port")
    metadata = {m.metadata_id: m.value for m in packet_in.metadata}
    assert int.from_bytes(metadata[ingress_id], "big") == h1.port


# ---- other entities ------------------------------------------------------------------------

def test_counters_registers_and_direct_counters(switch, network, controller):
    h1, h2, _ = network.hosts
    controller.write(update(INSERT, table_entry=lpm_entry(controller, "10.0.2.0", 24, 2, h2.mac)))
    acl = controller.table_entry(
        "acl", {"hdr.ipv4.srcAddr": ("ternary", ip_bytes(h1.ip), b"\xff\xff\xff\xff")},
        "allow", priority=1)
    controller.write(update(INSERT, table_entry=acl))
    frame = bytes(udp_frame(h1, "10.0.2.1"))
    for _ in range(3):
        h1.send(frame)
    assert len(h2.receive(count=3)) == 3

    counter = p4runtime_pb2.CounterEntry(counter_id=controller.id_of("counters", "port_packets"))
    counter.index.index = h1.port
    (read,) = controller.read(p4runtime_pb2.Entity(counter_entry=counter))
    assert (read.counter_entry.data.packet_count, read.counter_entry.data.byte_count) == (
        3, 3 * len(frame))
    all_cells = controller.read(p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(
        counter_id=counter.counter_id)))
    assert [c.counter_entry.index.index for c in all_cells] == list(range(64))
    assert sum(c.counter_entry.data.packet_count for c in all_cells) == 3

    direct = p4runtime_pb2.DirectCounterEntry(table_entry=acl)
    (read,) = controller.read(p4runtime_pb2.Entity(direct_counter_entry=direct))
    assert read.direct_counter_entry.data.packet_count == 3
    direct.data.packet_count, direct.data.byte_count = 100, 1000
    controller.write(update(MODIFY, direct_counter_entry=direct))
    (read,) = controller.read(p4runtime_pb2.Entity(direct_counter_entry=direct))
    assert (read.direct_counter_entry.data.packet_count,
            read.direct_counter_entry.data.byte_count) == (100, 1000)

    register = p4runtime_pb2.RegisterEntry(register_id=controller.id_of("registers", "last_seen"))
    register.index.index = h1.port
    (read,) = controller.read(p4runtime_pb2.Entity(register_entry=register))
    assert read.register_entry.data.bitstring == ip_bytes(h1.ip)
    register.data.bitstring = b"\x12\x34"
    controller.write(update(MODIFY, register_entry=register))
    (read,) = controller.read(p4runtime_pb2.Entity(register_entry=register))
    assert read.register_entry.data.bitstring == b"\x12\x34"
    register.index.index = 16
    with pytest.raises(grpc.RpcError):
        controller.read(p4runtime_pb2.Entity(register_entry=register))
    assert failed_write_codes(controller, update(MODIFY, register_entry=register)) == [
        CODE["OUT_OF_RANGE"]]


def test_clone_sessions_and_multicast_groups(controller):
    session = p4runtime_pb2.CloneSessionEntry(session_id=5, packet_length_bytes=64)
    session.replicas.add(egress_port=3, instance=1)
    pre = p4runtime_pb2.PacketReplicationEngineEntry(clone_session_entry=session)
    controller.write(update(INSERT, packet_replication_engine_entry=pre))
    (read,) = controller.read(p4runtime_pb2.Entity(
        packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            clone_session_entry=p4runtime_pb2.CloneSessionEntry(session_id=5))))
    assert read.packet_replication_engine_entry.clone_session_entry == session

    group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=9)
    group.replicas.add(port=b"\x00\x01", instance=0)      # the 1.4 bytes form
    group.replicas.add(egress_port=2, instance=0)         # the older uint32 form
    entry = p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=group)
    controller.write(update(INSERT, packet_replication_engine_entry=entry))
    assert failed_write_codes(controller, update(INSERT, packet_replication_engine_entry=entry)) \
        == [CODE["ALREADY_EXISTS"]]
    (read,) = controller.read(p4runtime_pb2.Entity(
        packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            multicast_group_entry=p4runtime_pb2.MulticastGroupEntry())))
    replicas = read.packet_replication_engine_entry.multicast_group_entry.replicas
    assert [(r.egress_port, r.instance) for r in replicas] == [(1, 0), (2, 0)]
    controller.write(update(DELETE, packet_replication_engine_entry=entry))
    assert failed_write_codes(controller, update(DELETE, packet_replication_engine_entry=entry)) \
        == [CODE["NOT_FOUND"]]


def test_digests_are_sent_once_configured(switch, network, controller):
    h1, _, _ = network.hosts
    controller.write(update(INSERT, table_entry=controller.table_entry(
        "ipv4_lpm", {"hdr.ipv4.dstAddr": (ip_bytes("10.0.6.0"), 24)}, "learn")))
    h1.send(bytes(udp_frame(h1, "10.0.6.1")))          # digest not configured: nothing sent
    with pytest.raises(queue.Empty):
        controller.next("digest", timeout=0.5)

    digest_id = controller.id_of("digests", "learn_t")
    config = p4runtime_pb2.DigestEntry(digest_id=digest_id)
    config.config.max_list_size = 1
    config.config.ack_timeout_ns = 60 * 10**9
    controller.write(update(INSERT, digest_entry=config))
    (read,) = controller.read(p4runtime_pb2.Entity(
        digest_entry=p4runtime_pb2.DigestEntry(digest_id=digest_id)))
    assert read.digest_entry == config
    h1.send(bytes(udp_frame(h1, "10.0.6.1")))
    digest = controller.next("digest").digest
    assert digest.digest_id == digest_id
    (data,) = digest.data
    assert [m.bitstring for m in data.struct.members] == [ip_bytes(h1.ip), bytes([h1.port])]
    h1.send(bytes(udp_frame(h1, "10.0.6.1")))          # same data, not acknowledged yet
    with pytest.raises(queue.Empty):
        controller.next("digest", timeout=0.5)
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = digest_id, digest.list_id
    controller.send_stream(ack)
    time.sleep(0.2)                                    # the ack travels on the stream
    h1.send(bytes(udp_frame(h1, "10.0.6.1")))
    again = controller.next("digest").digest
    assert again.list_id > digest.list_id and again.data == digest.data
    controller.write(update(DELETE, digest_entry=config))
    h1.send(bytes(udp_frame(h1, "10.0.6.1")))
    with pytest.raises(queue.Empty):
        controller.next("digest", timeout=0.5)


@pytest.mark.parametrize("given", ["source", "device_config"])
def test_program_given_on_the_command_line(network, compiled, tmp_path, given):
    """Started with a program (source or `compile -o` output), the switch serves its P4Info
    and takes entries without any SetForwardingPipelineConfig."""
    program = PROGRAM if given == "source" else compiled[1]
    h1, h2, _ = network.hosts
    with running_switch(network, tmp_path, device_id=3, program=program) as switch:
        client = Client(switch.address, switch.device_id, election_id=1)
        try:
            client.arbitrate()
            client.p4info = client.stub.GetForwardingPipelineConfig(
                p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=3)).config.p4info
            assert client.p4info == load_p4info(compiled[0])
            client.write(update(INSERT, table_entry=lpm_entry(client, "10.0.2.0", 24, 2, h2.mac)))
            frame = udp_frame(h1, "10.0.2.1")
            h1.send(bytes(frame))
            assert h2.receive(count=1) == [routed(frame, h2.mac)]
        finally:
            client.close()


def test_meters_indexed_and_direct(controller):
    meter = p4runtime_pb2.MeterEntry(meter_id=controller.id_of("meters", "port_meter"))
    meter.index.index = 3
    (read,) = controller.read(p4runtime_pb2.Entity(meter_entry=meter))
    assert not read.meter_entry.HasField("config")                 # not configured yet
    meter.config.cir, meter.config.cburst = 1000, 100
    meter.config.pir, meter.config.pburst = 2000, 200
    controller.write(update(MODIFY, meter_entry=meter))
    (read,) = controller.read(p4runtime_pb2.Entity(meter_entry=meter))
    assert read.meter_entry == meter
    bad = p4runtime_pb2.MeterEntry()
    bad.CopyFrom(meter)
    bad.config.pir = 10                                            # below cir
    assert failed_write_codes(controller, update(MODIFY, meter_entry=bad)) == [
        CODE["INVALID_ARGUMENT"]]
    (read,) = controller.read(p4runtime_pb2.Entity(meter_entry=meter))
    assert read.meter_entry == meter
    unset = p4runtime_pb2.MeterEntry(meter_id=meter.meter_id, index=meter.index)
    controller.write(update(MODIFY, meter_entry=unset))            # no config: back to none
    (read,) = controller.read(p4runtime_pb2.Entity(meter_entry=meter))
    assert not read.meter_entry.HasField("config")

    acl = controller.table_entry(
        "acl", {"hdr.ipv4.srcAddr": ("ternary", ip_bytes("10.0.1.1"), b"\xff\xff\xff\xff")},
        "allow", priority=5)
    acl.meter_config.cir, acl.meter_config.cburst = 10, 2
    acl.meter_config.pir, acl.meter_config.pburst = 20, 4
    controller.write(update(INSERT, table_entry=acl))
    (read,) = read_table(controller, "acl")
    assert read.meter_config == acl.meter_config
    direct = p4runtime_pb2.DirectMeterEntry(table_entry=read)
    direct.table_entry.ClearField("meter_config")
    direct.config.cir, direct.config.cburst, direct.config.pir, direct.config.pburst = 1, 1, 2, 2
    controller.write(update(MODIFY, direct_meter_entry=direct))
    (read,) = controller.read(p4runtime_pb2.Entity(direct_meter_entry=direct))
    assert read.direct_meter_entry.config == direct.config


def test_udp_between_host_stacks_through_the_switch(switch, network, controller):
    """Real host stacks (which check the IPv4 checksum the switch rewrote): a UDP datagram from
    h1 to h2 and the answer back, routed both ways by the switch."""
    h1, h2, _ = network.hosts
    for host in (h1, h2):
        controller.write(update(INSERT, table_entry=lpm_entry(
            controller, host.ip.rsplit(".", 1)[0] + ".0", 24, host.port, host.mac)))
    for host, peer in ((h1, h2), (h2, h1)):
        subprocess.run(["ip", "netns", "exec", host.namespace, "ip", "neigh", "replace",
                        peer.ip, "lladdr", ROUTER_MAC, "dev", "eth0"], check=True)

    def udp_socket(host):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((host.ip, 7000))
        sock.settimeout(3)
        return sock
    client, server = in_netns(h1.namespace, lambda: udp_socket(h1)), \
        in_netns(h2.namespace, lambda: udp_socket(h2))
    try:
        client.sendto(b"question", (h2.ip, 7000))
        data, sender = server.recvfrom(100)
        assert (data, sender) == (b"question", (h1.ip, 7000))
        server.sendto(b"answer", sender)
        assert client.recvfrom(100) == (b"answer", (h2.ip, 7000))
    finally:
        client.close()
        server.close()


def test_vlan_tags_stay_in_the_frames(switch, network, controller, tmp_path):
    """Offloads are off, so a VLAN tag is part of the frame both ways: a tagged PacketOut
    arrives tagged, and a tagged frame from a host is captured (and dropped) with its tag."""
    h1, h2, _ = network.hosts
    tagged = bytes(Ether(src=h1.mac, dst=h2.mac) / Dot1Q(vlan=42) /
                   IP(src=h1.ip, dst=h2.ip) / UDP(sport=1, dport=2) / (b"v" * 20))
    header = controller._find("controller_packet_metadata", "packet_out")
    out = p4runtime_pb2.StreamMessageRequest()
    out.packet.payload = tagged
    out.packet.metadata.add(metadata_id=header.metadata[0].id, value=bytes([h2.port]))
    controller.send_stream(out)
    assert h2.receive(count=1) == [tagged]
    h1.send(tagged)
    assert h2.receive(timeout=0.5) == []
    assert read_pcap(str(tmp_path / "pcaps" / f"{h1.switch_interface}_in.pcap")) == [tagged]
