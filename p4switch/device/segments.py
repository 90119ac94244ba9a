"""Segmentation offload at a switch port: frames as the kernel hands them to a packet socket
with a virtio-net header (PACKET_VNET_HDR), made into the frames that go on the wire.

With segmentation offload (`p4switch run --segmentation-offload`) a host's TCP stack leaves
a send of several segments whole (TSO/GSO) and the kernel hands it to the switch's socket as
one frame with a header that says how to cut it.  The C back end's packet loop forwards such
a frame whole with its header (runtime/io.c), and the kernel of the next hop cuts it where it
must.  The Python loop is the readable reference of what that means on the wire: `wire_frames`
cuts a TCP/IPv4 frame into the segments a NIC would send (`gso_size` bytes of payload each,
IP length, id and checksum and TCP sequence number, flags and checksum of each), and finishes
the checksum of a frame the sender left partial (NEEDS_CSUM), as the sender's NIC would have.

struct virtio_net_hdr (linux/virtio_net.h), in the machine's byte order for packet sockets:
u8 flags, u8 gso_type, u16 hdr_len, u16 gso_size, u16 csum_start, u16 csum_offset.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

VNET_HDR = struct.Struct("=BBHHHH")
VNET_HDR_SIZE = VNET_HDR.size                 # 10
NO_VNET_HDR = bytes(VNET_HDR_SIZE)            # no offload: what the switch's own frames carry
F_NEEDS_CSUM = 1
GSO_NONE, GSO_TCPV4, GSO_UDP, GSO_TCPV6 = 0, 1, 3, 4
GSO_ECN = 0x80
_VLAN_TPIDS = (0x8100, 0x88a8)
_TCP_FIN, _TCP_PSH, _TCP_CWR = 0x01, 0x08, 0x80


class SegmentationError(ValueError):
    """A frame whose virtio-net header cannot be carried out (one line)."""


@dataclass(frozen=True)
class VnetHeader:
    flags: int = 0
    gso_type: int = GSO_NONE
    hdr_len: int = 0
    gso_size: int = 0
    csum_start: int = 0
    csum_offset: int = 0

    @classmethod
    def unpack(cls, data: bytes) -> "VnetHeader":
        return cls(*VNET_HDR.unpack_from(data))

    def pack(self) -> bytes:
        return VNET_HDR.pack(self.flags, self.gso_type, self.hdr_len, self.gso_size,
                             self.csum_start, self.csum_offset)


def ones_complement_sum(data: bytes, start: int = 0) -> int:
    """The 16-bit ones' complement sum of big-endian words (RFC 1071), folded."""
    if len(data) % 2:
        data = data + b"\0"
    # 2^16 = 1 modulo 0xffff, so the sum of the words is the number they spell, modulo
    # 0xffff (one big-integer remainder instead of a loop in Python); a nonzero sum that is
    # a multiple of 0xffff folds to 0xffff
    value = int.from_bytes(data, "big") + start
    folded = value % 0xffff
    return 0xffff if folded == 0 and value else folded


def checksum(data: bytes, start: int = 0) -> int:
    return ~ones_complement_sum(data, start) & 0xffff


def _ip_offset(frame: bytes) -> int:
    offset = 12
    while int.from_bytes(frame[offset:offset + 2], "big") in _VLAN_TPIDS:
        offset += 4
    if int.from_bytes(frame[offset:offset + 2], "big") != 0x0800:
        raise SegmentationError("a segmentation-offload frame that is not IPv4")
    return offset + 2


def finish_checksum(frame: bytes, header: VnetHeader) -> bytes:
    """`frame` with the checksum the sender left to the NIC filled in: the ones' complement of
    the sum from csum_start on (the field holds the pseudo-header's sum), 0 sent as 0xffff."""
    at = header.csum_start + header.csum_offset
    if at + 2 > len(frame):
        raise SegmentationError(f"checksum at byte {at} of a {len(frame)}-byte frame")
    value = checksum(frame[header.csum_start:]) or 0xffff
    return frame[:at] + value.to_bytes(2, "big") + frame[at + 2:]


def tcp4_segments(frame: bytes, gso_size: int) -> list[bytes]:
    """The segments of a TCP/IPv4 frame of several segments' payload, each of `gso_size` bytes
    (the last the rest): as tcp_gso_segment makes them (IP id counting up, FIN and PSH on the
    last only, CWR on the first only), every checksum complete."""
    if gso_size <= 0:
        raise SegmentationError("a TCP segmentation frame with gso_size 0")
    ip = _ip_offset(frame)
    ihl = (frame[ip] & 0x0f) * 4
    if frame[ip + 9] != 6:
        raise SegmentationError("a TCPv4 segmentation frame that is not TCP")
    tcp = ip + ihl
    thl = (frame[tcp + 12] >> 4) * 4
    headers, payload = frame[:tcp + thl], frame[tcp + thl:]
    ip_id = int.from_bytes(frame[ip + 4:ip + 6], "big")
    seq = int.from_bytes(frame[tcp + 4:tcp + 8], "big")
    flags = frame[tcp + 13]
    pieces = [payload[i:i + gso_size] for i in range(0, len(payload), gso_size)] or [b""]
    segments = []
    for n, piece in enumerate(pieces):
        last = n == len(pieces) - 1
        seg = bytearray(headers + piece)
        seg[ip + 2:ip + 4] = (ihl + thl + len(piece)).to_bytes(2, "big")
        seg[ip + 4:ip + 6] = ((ip_id + n) & 0xffff).to_bytes(2, "big")
        seg[ip + 10:ip + 12] = b"\0\0"
        seg[ip + 10:ip + 12] = checksum(bytes(seg[ip:ip + ihl])).to_bytes(2, "big")
        seg[tcp + 4:tcp + 8] = ((seq + n * gso_size) & 0xffffffff).to_bytes(4, "big")
        seg[tcp + 13] = flags & ~((0 if last else _TCP_FIN | _TCP_PSH) | (_TCP_CWR if n else 0))
        seg[tcp + 16:tcp + 18] = b"\0\0"
        length = thl + len(piece)
        pseudo = ones_complement_sum(bytes(seg[ip + 12:ip + 20]) + bytes([0, 6])
                                     + length.to_bytes(2, "big"))
        seg[tcp + 16:tcp + 18] = checksum(bytes(seg[tcp:]), pseudo).to_bytes(2, "big")
        segments.append(bytes(seg))
    return segments


def wire_frames(received: bytes) -> list[bytes]:
    """The frames on the wire for what a packet socket with PACKET_VNET_HDR received (the
    header, then the frame)."""
    if len(received) < VNET_HDR_SIZE:
        raise SegmentationError(f"a {len(received)}-byte read has no virtio-net header")
    header = VnetHeader.unpack(received)
    frame = received[VNET_HDR_SIZE:]
    kind = header.gso_type & ~GSO_ECN
    if kind == GSO_NONE:
        return [finish_checksum(frame, header) if header.flags & F_NEEDS_CSUM else frame]
    if kind == GSO_TCPV4:
        return tcp4_segments(frame, header.gso_size)
    raise SegmentationError(f"segmentation offload of gso_type {header.gso_type} is not "
                            "supported (TCP over IPv4 only)")
