"""Controller packet headers: PacketOut metadata -> packet_out header bytes, and packet_in
header bytes -> PacketIn metadata, as laid out by P4Info controller_packet_metadata
(fields in header order, most significant bit first)."""
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import invalid


def header_length(header: p4info_pb2.ControllerPacketMetadata) -> int:
    """Length in bytes of a controller header."""
    bits = sum(m.bitwidth for m in header.metadata)
    if bits % 8:
        raise invalid(f"controller header {header.preamble.name} is {bits} bits, "
                      "not a whole number of bytes")
    return bits // 8


def pack_packet_out(header: p4info_pb2.ControllerPacketMetadata,
                    packet: p4runtime_pb2.PacketOut) -> bytes:
    """The packet_out header followed by the payload. Metadata not given is zero."""
    given = {}
    for item in packet.metadata:
        field = next((m for m in header.metadata if m.id == item.metadata_id), None)
        if field is None:
            raise invalid(f"PacketOut metadata id {item.metadata_id} is not a field of "
                          f"{header.preamble.name}")
        given[item.metadata_id] = bytestrings.decode(item.value, field.bitwidth,
                                                     f"PacketOut metadata {field.name}")
    value = 0
    for field in header.metadata:
        value = (value << field.bitwidth) | given.get(field.id, 0)
    return value.to_bytes(header_length(header), "big") + packet.payload


def unpack_packet_in(header: p4info_pb2.ControllerPacketMetadata,
                     frame: bytes) -> p4runtime_pb2.PacketIn:
    """A PacketIn from a frame that starts with the packet_in header."""
    length = header_length(header)
    if len(frame) < length:
        raise invalid(f"packet of {len(frame)} bytes is shorter than the "
                      f"{header.preamble.name} header ({length} bytes)")
    value = int.from_bytes(frame[:length], "big")
    remaining = length * 8
    packet = p4runtime_pb2.PacketIn(payload=frame[length:])
    for field in header.metadata:
        remaining -= field.bitwidth
        field_value = (value >> remaining) & ((1 << field.bitwidth) - 1)
        packet.metadata.add(metadata_id=field.id, value=bytestrings.encode(field_value))
    return packet
