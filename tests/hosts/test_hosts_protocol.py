"""The aggregation header codec (hosts/ina/protocol.py) and the scapy layer (hosts/ina/scapy_layer.py)."""

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from contracts.wire import (AGG_UDP_PORT, HEADER_LEN, MSG_CONTRIBUTION, MSG_RESULT, packet_size,
                            worker_port)
from hosts.ina.protocol import AggHeader, AggPacket, ProtocolError
from hosts.ina.scapy_layer import AggregationHeader


def sample_header(**changes):
    fields = dict(msg_type=MSG_CONTRIBUTION, version=1, job_id=0x1234, slot=0x0203,
                  contributor=5, chunk_offset=0x01020304, num_elements=4, exponent=0x85,
                  overflow=1)
    fields.update(changes)
    return AggHeader(**fields)


def test_header_bytes_follow_the_design_layout():
    raw = sample_header().pack()
    assert len(raw) == HEADER_LEN
    # msg_type 1 in the high nibble, version bit 3, overflow bit 2, reserved 0.
    assert raw == bytes([0x1C, 0x85, 0x12, 0x34, 0x02, 0x03, 0x00, 0x05,
                         0x01, 0x02, 0x03, 0x04, 0x00, 0x04, 0x00, 0x00])


def test_packet_round_trip_with_big_endian_signed_values():
    values = np.array([1, -1, 2**31 - 1, -2**31], dtype=np.int32)
    raw = AggPacket(sample_header(msg_type=MSG_RESULT, version=0, overflow=0), values).pack()
    assert len(raw) == packet_size(4) == 32
    assert raw[16:20] == b"\x00\x00\x00\x01" and raw[20:24] == b"\xff\xff\xff\xff"
    back = AggPacket.unpack(raw)
    assert back.header == sample_header(msg_type=MSG_RESULT, version=0, overflow=0)
    assert back.values.dtype == np.int32
    assert back.values.tolist() == values.tolist()


def test_flags_and_owner_and_header_only_packets():
    from contracts.wire import FLAG_NO_VALUES, FLAG_TO_OWNER
    header = sample_header(flags=FLAG_NO_VALUES | FLAG_TO_OWNER, owner=0xBEEF)
    raw = AggPacket(header, np.zeros(0, dtype=np.int32)).pack()
    # flags in the low two bits of byte 0, owner in the last two bytes; no values follow
    assert raw == bytes([0x1F, 0x85, 0x12, 0x34, 0x02, 0x03, 0x00, 0x05,
                         0x01, 0x02, 0x03, 0x04, 0x00, 0x04, 0xBE, 0xEF])
    back = AggPacket.unpack(raw)
    assert back.header == header and back.header.header_only and len(back.values) == 0
    with pytest.raises(ProtocolError, match="must be 16 bytes"):
        AggPacket.unpack(raw + bytes(16))
    with pytest.raises(ProtocolError, match="carries no values"):
        AggPacket(header, np.zeros(4, dtype=np.int32)).pack()
    with pytest.raises(ProtocolError, match="flags=4 does not fit in 2 bits"):
        sample_header(flags=4).pack()
    layer = Ether(bytes(Ether() / IP() / UDP(sport=9100, dport=20001) / raw))[AggregationHeader]
    assert (layer.flags, layer.owner, layer.values) == (3, 0xBEEF, [])


def test_bad_packets_and_fields_are_rejected():
    raw = AggPacket(sample_header(), np.zeros(4, dtype=np.int32)).pack()
    with pytest.raises(ProtocolError, match="needs 16 bytes"):
        AggHeader.unpack(raw[:10])
    with pytest.raises(ProtocolError, match="must be 32 bytes"):
        AggPacket.unpack(raw[:-4])
    with pytest.raises(ProtocolError, match="version=2 does not fit in 1 bits"):
        sample_header(version=2).pack()
    with pytest.raises(ProtocolError, match="header says 4 values"):
        AggPacket(sample_header(), np.zeros(3, dtype=np.int32)).pack()


def test_constants():
    assert AGG_UDP_PORT == 9100
    assert worker_port(7) == 20007


def test_scapy_layer_builds_the_same_bytes_as_the_codec():
    values = [3, -4, 5, -6]
    layer = AggregationHeader(msg_type=1, version=1, overflow=1, exponent=0x85, job_id=0x1234,
                              slot=0x0203, contributor=5, chunk_offset=0x01020304,
                              values=values)
    expected = AggPacket(sample_header(), np.array(values, dtype=np.int32)).pack()
    assert bytes(layer) == expected


def test_scapy_dissects_contributions_and_results_in_frames():
    payload = AggPacket(sample_header(), np.array([7, -8, 9, -10], dtype=np.int32)).pack()
    up = Ether() / IP(src="10.0.0.1", dst="10.0.255.254") / UDP(sport=20001, dport=9100) / payload
    down = Ether() / IP(src="10.0.255.254", dst="10.0.0.1") / UDP(sport=9100, dport=20001) / payload
    for frame in (up, down):
        parsed = Ether(bytes(frame))
        agg = parsed[AggregationHeader]
        assert (agg.msg_type, agg.version, agg.overflow, agg.exponent) == (1, 1, 1, 0x85)
        assert (agg.job_id, agg.slot, agg.contributor) == (0x1234, 0x0203, 5)
        assert (agg.chunk_offset, agg.num_elements) == (0x01020304, 4)
        assert agg.values == [7, -8, 9, -10]
    other = Ether(bytes(Ether() / IP() / UDP(sport=1234, dport=4321) / payload))
    assert AggregationHeader not in other


def test_pcap_round_trip_dissects_aggregation_packets(tmp_path):
    from scapy.utils import rdpcap, wrpcap
    payload = AggPacket(sample_header(num_elements=2), np.array([1, -2], dtype=np.int32)).pack()
    frames = [Ether() / IP() / UDP(sport=20001, dport=9100) / payload,
              Ether() / IP() / UDP(sport=53, dport=53) / b"dns"]
    wrpcap(str(tmp_path / "agg.pcap"), frames)
    first, second = rdpcap(str(tmp_path / "agg.pcap"))
    assert first[AggregationHeader].values == [1, -2]
    assert first[AggregationHeader].chunk_offset == 0x01020304
    assert AggregationHeader not in second
