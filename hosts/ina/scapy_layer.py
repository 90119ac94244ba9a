"""Scapy layer for the aggregation header and its values, for tests and reading pcaps.

Importing this module binds `AggregationHeader` to UDP destination or source port 9100,
so `Ether(raw_bytes)` dissects aggregation traffic in captures and tests can build frames
as `Ether()/IP()/UDP(sport=..., dport=AGG_UDP_PORT)/AggregationHeader(...)`.
The field layout is the one in contracts/wire.py (docs/design.md).
"""

from __future__ import annotations

from scapy.fields import BitField, ByteField, FieldListField, IntField, ShortField, SignedIntField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from contracts.wire import AGG_UDP_PORT, FLAG_NO_VALUES


class AggregationHeader(Packet):
    """16-byte aggregation header followed by `num_elements` big-endian int32 values."""

    name = "Aggregation"
    fields_desc = [
        BitField("msg_type", 1, 4),
        BitField("version", 0, 1),
        BitField("overflow", 0, 1),
        BitField("flags", 0, 2),           # FLAG_NO_VALUES, FLAG_TO_OWNER
        ByteField("exponent", 0),
        ShortField("job_id", 0),
        ShortField("slot", 0),
        ShortField("contributor", 0),
        IntField("chunk_offset", 0),
        ShortField("num_elements", None),
        ShortField("owner", 0),
        FieldListField("values", [], SignedIntField("value", 0),
                       count_from=lambda pkt: 0 if pkt.flags & FLAG_NO_VALUES
                       else pkt.num_elements),
    ]

    def post_build(self, packet: bytes, payload: bytes) -> bytes:
        # num_elements defaults to the number of values given.
        if self.num_elements is None:
            count = len(self.values)       # (header-only packets name K themselves)
            packet = packet[:12] + count.to_bytes(2, "big") + packet[14:]
        return packet + payload

    def mysummary(self) -> str:
        return self.sprintf("Agg type=%msg_type% job=%job_id% slot=%slot% v=%version% "
                            "contrib=%contributor% off=%chunk_offset% n=%num_elements%")


bind_layers(UDP, AggregationHeader, dport=AGG_UDP_PORT)
bind_layers(UDP, AggregationHeader, sport=AGG_UDP_PORT)
