"""Unit tests of the device parts that need no pipeline: arbitration, bytestrings, packet-I/O
headers, pcap files, Write error reports and the `run` command line."""
import grpc
import pytest
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.device import bytestrings, packet_io
from p4switch.device.arbitration import Arbitration
from p4switch.device.errors import P4RuntimeError, write_error_status
from p4switch.device.pcap import PcapWriter, read_pcap
from p4switch.device.run import UsageError, parse_args


def arbitration_request(device_id=0, election=(0, 1), role=""):
    request = p4runtime_pb2.MasterArbitrationUpdate(device_id=device_id)
    if election is not None:
        request.election_id.high, request.election_id.low = election
    if role:
        request.role.name = role
    return request


def codes(updates):
    return {stream: update.status.code for stream, update in updates}


OK, ALREADY_EXISTS, NOT_FOUND = 0, 6, 5


class TestArbitration:
    def test_no_primary_yet_leaves_election_id_unset(self):
        updates = Arbitration(0).arbitrate("a", arbitration_request(election=None))
        assert not updates[0][1].HasField("election_id")

    def test_first_client_is_primary_and_hears_ok(self):
        arb = Arbitration(device_id=3)
        updates = arb.arbitrate("a", arbitration_request(3, (0, 5)))
        assert codes(updates) == {"a": OK}
        assert updates[0][1].election_id.low == 5
        assert arb.is_primary("", 5) and not arb.is_primary("", 4)

    def test_higher_election_id_takes_over_and_everyone_is_told(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(0, 5)))
        updates = arb.arbitrate("b", arbitration_request(election=(0, 9)))
        assert codes(updates) == {"a": ALREADY_EXISTS, "b": OK}
        assert all(u.election_id.low == 9 for _, u in updates)
        assert arb.is_primary("", 9) and not arb.is_primary("", 5)

    def test_lower_election_id_is_backup_and_only_it_hears(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(1, 0)))
        updates = arb.arbitrate("b", arbitration_request(election=(0, 7)))
        assert codes(updates) == {"b": ALREADY_EXISTS}
        assert updates[0][1].election_id.high == 1

    def test_primary_leaving_leaves_no_primary_until_someone_arbitrates_high_enough(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(0, 9)))
        arb.arbitrate("b", arbitration_request(election=(0, 2)))
        updates = arb.leave("a")
        assert codes(updates) == {"b": NOT_FOUND}
        assert updates[0][1].election_id.low == 9        # the highest seen
        assert not arb.is_primary("", 2)
        # Below the highest election id ever seen: still a backup.
        assert codes(arb.arbitrate("b", arbitration_request(election=(0, 8)))) == {
            "b": NOT_FOUND}
        assert codes(arb.arbitrate("b", arbitration_request(election=(0, 9)))) == {"b": OK}
        assert arb.is_primary("", 9)
        assert arb.leave("b") == []  # nobody left to tell

    def test_primary_downgrading_itself_tells_everyone(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(0, 9)))
        arb.arbitrate("b", arbitration_request(election=(0, 2)))
        assert codes(arb.arbitrate("a", arbitration_request(election=(0, 3)))) == {
            "a": NOT_FOUND, "b": NOT_FOUND}

    def test_rearbitrating_stream_must_keep_device_and_role(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(0, 9), role="r"))
        for request in (arbitration_request(device_id=1, election=(0, 9), role="r"),
                        arbitration_request(election=(0, 9), role="other")):
            with pytest.raises(P4RuntimeError) as e:
                arb.arbitrate("a", request)
            assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION

    def test_backup_leaving_tells_nobody(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(0, 9)))
        arb.arbitrate("b", arbitration_request(election=(0, 2)))
        assert arb.leave("b") == []

    def test_duplicate_election_id_refused(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(0, 9)))
        with pytest.raises(P4RuntimeError) as e:
            arb.arbitrate("b", arbitration_request(election=(0, 9)))
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT

    def test_wrong_device_refused(self):
        with pytest.raises(P4RuntimeError) as e:
            Arbitration(0).arbitrate("a", arbitration_request(device_id=1))
        assert e.value.code == grpc.StatusCode.NOT_FOUND

    def test_roles_elect_separately(self):
        arb = Arbitration(0)
        arb.arbitrate("a", arbitration_request(election=(0, 9), role="r1"))
        updates = arb.arbitrate("b", arbitration_request(election=(0, 2), role="r2"))
        assert codes(updates) == {"b": OK}
        assert arb.is_primary("r2", 2) and arb.is_primary("r1", 9)

    def test_role_config_refused(self):
        request = arbitration_request(role="r1")
        request.role.config.type_url = "example/role-config"
        with pytest.raises(P4RuntimeError) as e:
            Arbitration(0).arbitrate("a", request)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT

    def test_client_without_election_id_is_never_primary(self):
        arb = Arbitration(0)
        updates = arb.arbitrate("a", arbitration_request(election=None))
        assert codes(updates) == {"a": NOT_FOUND}
        with pytest.raises(P4RuntimeError) as e:
            arb.check_primary("", None, "Write")
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED


class TestBytestrings:
    def test_canonical_and_padded_accepted(self):
        assert bytestrings.decode(b"\x01\x02", 9, "f") == 0x102
        assert bytestrings.decode(b"\x00\x00\x00\x05", 9, "f") == 5

    def test_too_wide_is_out_of_range(self):
        with pytest.raises(P4RuntimeError) as e:
            bytestrings.decode(b"\x02\x00", 9, "f")
        assert e.value.code == grpc.StatusCode.OUT_OF_RANGE

    def test_empty_is_invalid(self):
        with pytest.raises(P4RuntimeError) as e:
            bytestrings.decode(b"", 8, "f")
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT

    def test_encode_is_canonical(self):
        assert bytestrings.encode(0) == b"\x00"
        assert bytestrings.encode(0x0a000001) == b"\x0a\x00\x00\x01"
        assert bytestrings.encode(0x100) == b"\x01\x00"
        assert bytestrings.encode_padded(5, 9) == b"\x00\x05"


def controller_header(name, fields):
    header = p4info_pb2.ControllerPacketMetadata()
    header.preamble.name = name
    for i, (field_name, width) in enumerate(fields, 1):
        header.metadata.add(id=i, name=field_name, bitwidth=width)
    return header


class TestPacketIo:
    header = controller_header("packet_out", [("egress_port", 9), ("_pad", 7)])

    def test_packet_out_header_prepended(self):
        packet = p4runtime_pb2.PacketOut(payload=b"\xaa\xbb")
        packet.metadata.add(metadata_id=1, value=b"\x01\x03")
        assert packet_io.pack_packet_out(self.header, packet) == b"\x81\x80\xaa\xbb"

    def test_packet_out_metadata_too_wide(self):
        packet = p4runtime_pb2.PacketOut(payload=b"")
        packet.metadata.add(metadata_id=1, value=b"\x02\x00")
        with pytest.raises(P4RuntimeError) as e:
            packet_io.pack_packet_out(self.header, packet)
        assert e.value.code == grpc.StatusCode.OUT_OF_RANGE

    def test_packet_out_unknown_metadata(self):
        packet = p4runtime_pb2.PacketOut(payload=b"")
        packet.metadata.add(metadata_id=7, value=b"\x01")
        with pytest.raises(P4RuntimeError):
            packet_io.pack_packet_out(self.header, packet)

    def test_packet_in_metadata_parsed(self):
        header = controller_header("packet_in", [("ingress_port", 9), ("reason", 7)])
        packet = packet_io.unpack_packet_in(header, b"\x81\x85payload")
        assert packet.payload == b"payload"
        assert [(m.metadata_id, m.value) for m in packet.metadata] == [
            (1, b"\x01\x03"), (2, b"\x05")]

    def test_short_packet_in_refused(self):
        header = controller_header("packet_in", [("ingress_port", 16)])
        with pytest.raises(P4RuntimeError):
            packet_io.unpack_packet_in(header, b"\x01")


def test_pcap_round_trip(tmp_path):
    path = tmp_path / "x.pcap"
    writer = PcapWriter(str(path))
    frames = [b"\x01" * 60, b"\x02\x03" * 40]
    for frame in frames:
        writer.write(frame, timestamp=1700000000.25)
    writer.close()
    data = path.read_bytes()
    assert data[:4] == b"\xd4\xc3\xb2\xa1"                # little-endian magic
    assert data[20:24] == b"\x01\x00\x00\x00"            # link type Ethernet
    assert data[24:28] == (1700000000).to_bytes(4, "little")
    assert data[28:32] == (250000).to_bytes(4, "little")
    assert read_pcap(str(path)) == frames


def test_write_error_status_has_one_error_per_update():
    status = write_error_status([None, P4RuntimeError(grpc.StatusCode.NOT_FOUND, "gone")])
    parsed = status_pb2.Status.FromString(status.SerializeToString())
    assert parsed.code == 2
    errors = []
    for detail in parsed.details:
        error = p4runtime_pb2.Error()
        assert detail.Unpack(error)
        errors.append((error.canonical_code, error.message))
    assert errors == [(0, ""), (5, "gone")]


class TestCommandLine:
    def test_simple_switch_grpc_spellings(self):
        args = parse_args(["--no-p4", "-i", "1@veth1", "--interface", "2@veth2",
                           "--device-id", "4", "--log-console", "--pcap", "/tmp/p",
                           "--", "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255"])
        assert args.ports == {1: "veth1", 2: "veth2"}
        assert (args.device_id, args.cpu_port, args.pcap) == (4, 255, "/tmp/p")
        assert args.grpc_server_addr == "127.0.0.1:50001"
        assert args.log_console and args.program is None

    def test_defaults(self):
        args = parse_args(["prog.p4", "-I", "inc", "-D", "K=64", "-D", "FLAG"])
        assert args.grpc_server_addr == "127.0.0.1:9559"
        assert args.define_map == {"K": "64", "FLAG": "1"}
        assert args.include_dirs == ["inc"] and args.cpu_port is None

    @pytest.mark.parametrize("argv", [
        [],                                          # neither program nor --no-p4
        ["prog.p4", "--no-p4"],                      # both
        ["--no-p4", "-i", "veth1"],                  # no port number
        ["--no-p4", "-i", "1@a", "-i", "1@b"],       # port twice
        ["--no-p4", "--grpc-server-addr", "nowhere"],
        ["--no-p4", "--log-console", "--log-file", "x"],
        ["--no-p4", "--cpu-port", "1", "-i", "1@a"],
    ])
    def test_bad_usage(self, argv):
        with pytest.raises(UsageError):
            parse_args(argv)


class _ExplodingSwitch:
    def process_packet(self, port, data):
        raise ZeroDivisionError("boom")


class _EchoSwitch:
    def process_packet(self, port, data):
        return [(port + 1, data[::-1])]


class _Lines(list):
    def __call__(self, message):
        self.append(message)

    def begin_packet(self, message):
        self.append("BEGIN " + message)

    def end_packet(self):
        self.append("END")


def test_datapath_survives_a_failing_pipeline_and_transmits_outputs():
    from p4switch.device.datapath import Datapath
    sent, log = [], _Lines()
    datapath = Datapath(transmit=lambda port, frame: sent.append((port, frame)), log=log)
    assert datapath.inject(1, b"ab", origin="eth1") == 0          # no pipeline yet
    assert log == ["BEGIN received 2 bytes on port 1 (eth1)", "dropped: no pipeline has been set",
                   "END"]
    datapath.switch = _ExplodingSwitch()
    assert datapath.inject(1, b"ab", origin="eth1") == 0
    assert log[-2:] == ["dropped: the pipeline failed on this packet: ZeroDivisionError: boom",
                        "END"]
    datapath.switch = _EchoSwitch()
    assert datapath.inject(4, b"abc", origin="eth4") == 1
    assert sent == [(5, b"cba")]
    assert log[-2:] == ["BEGIN received 3 bytes on port 4 (eth4)", "END"]


class TestDigestLists:
    def make_lists(self):
        from p4switch.device.digests import DigestLists
        self.now = 0
        return DigestLists(clock=lambda: self.now)

    def test_data_encoded_as_struct_of_bitstrings(self):
        lists = self.make_lists()
        digest_list = lists.make(7, [0x0a000001, 3], ack_timeout_ns=0)
        assert digest_list.digest_id == 7 and digest_list.list_id == 1
        (data,) = digest_list.data
        assert [m.bitstring for m in data.struct.members] == [b"\x0a\x00\x00\x01", b"\x03"]

    def test_tuple_digests_encode_a_tuple(self):
        lists = self.make_lists()
        (data,) = lists.make(9, [1, 0xABCD], ack_timeout_ns=0, as_tuple=True).data
        assert data.WhichOneof("data") == "tuple"
        assert [m.bitstring for m in data.tuple.members] == [b"\x01", b"\xab\xcd"]

    def test_unacknowledged_data_is_not_sent_again_until_the_timeout(self):
        lists = self.make_lists()
        first = lists.make(7, [1, 2], ack_timeout_ns=1000)
        assert lists.make(7, [1, 2], ack_timeout_ns=1000) is None
        assert lists.make(7, [1, 3], ack_timeout_ns=1000).list_id == first.list_id + 1
        assert lists.make(8, [1, 2], ack_timeout_ns=1000) is not None     # another digest
        self.now = 1000
        assert lists.make(7, [1, 2], ack_timeout_ns=1000) is not None

    def test_ack_releases_the_data(self):
        lists = self.make_lists()
        first = lists.make(7, [1, 2], ack_timeout_ns=10**9)
        lists.ack(7, first.list_id + 100)                 # another list: no effect
        assert lists.make(7, [1, 2], ack_timeout_ns=10**9) is None
        lists.ack(7, first.list_id)
        assert lists.make(7, [1, 2], ack_timeout_ns=10**9) is not None

    def test_zero_timeout_never_suppresses(self):
        lists = self.make_lists()
        assert lists.make(7, [1], 0) is not None and lists.make(7, [1], 0) is not None
