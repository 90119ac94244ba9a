"""ATP's packets as the hosts build and read them: the 16-byte aggregation header
(contracts/wire.py), ATP's 12 bytes (p4src/headers.p4 atp_t) and K big-endian int32 values.

A worker's fragment (msg_type CONTRIBUTION) carries its index at its rack switch (the
header's contributor field; bitmap0 its bit), its rack, the aggregator it hashed to (the
slot field) and the element offset; the parameter server's acknowledgement (RESULT) the
same aggregator and offset, the sum, and whether any part of it was ECN-marked.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np

from contracts.wire import (ATP_HEADER_FORMAT, ATP_HEADER_LEN, ATP_LEVEL_RACK, HEADER_FORMAT,
                            HEADER_LEN, MSG_CONTRIBUTION, MSG_RESULT)

_HEADER = struct.Struct(HEADER_FORMAT)
_ATP = struct.Struct(ATP_HEADER_FORMAT)
WIRE_DTYPE = np.dtype(">i4")
PREFIX_LEN = HEADER_LEN + ATP_HEADER_LEN


def aggregator_of(job: int, offset: int, aggregators: int) -> int:
    """The aggregator of fragment `offset` of job `job` (ATP: a hash of job and sequence),
    the same at every worker."""
    return zlib.crc32(struct.pack("!HI", job, offset)) % aggregators


@dataclass(frozen=True)
class AtpPacket:
    msg_type: int
    job: int
    aggregator: int
    index: int                 # the sender's index at its switch (contributor field)
    offset: int                # element offset of the first value
    k: int
    values: np.ndarray         # K int32
    level: int = ATP_LEVEL_RACK
    resend: bool = False
    collision: bool = False
    ecn: bool = False
    overflow: bool = False
    rack: int = 0
    bitmap0: int = 0
    bitmap1: int = 0

    def pack(self) -> bytes:
        first = (self.msg_type << 4) | (int(self.overflow) << 2)
        flags = ((self.level << 6) | (int(self.resend) << 5) | (int(self.collision) << 4)
                 | (int(self.ecn) << 3))
        return (_HEADER.pack(first, 0, self.job, self.aggregator, self.index, self.offset,
                             self.k, 0)
                + _ATP.pack(flags, self.rack, 0, self.bitmap0, self.bitmap1)
                + np.asarray(self.values, dtype=WIRE_DTYPE).tobytes())


def unpack(data: bytes) -> AtpPacket | None:
    """The packet in `data`, or None when it is not a whole ATP packet."""
    if len(data) < PREFIX_LEN:
        return None
    first, _, job, aggregator, index, offset, k, _ = _HEADER.unpack_from(data)
    flags, rack, _, bitmap0, bitmap1 = _ATP.unpack_from(data, HEADER_LEN)
    if k == 0 or len(data) != PREFIX_LEN + 4 * k or first >> 4 not in (MSG_CONTRIBUTION,
                                                                       MSG_RESULT):
        return None
    values = np.frombuffer(data, dtype=WIRE_DTYPE, count=k, offset=PREFIX_LEN)
    return AtpPacket(first >> 4, job, aggregator, index, offset, k, values,
                     level=flags >> 6, resend=bool(flags & 0x20),
                     collision=bool(flags & 0x10), ecn=bool(flags & 0x08),
                     overflow=bool(first & 0x04), rack=rack, bitmap0=bitmap0,
                     bitmap1=bitmap1)
