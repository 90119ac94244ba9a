"""Codec of the aggregation packet (hosts <-> p4src): the 16-byte header of
contracts/wire.py (its byte layout is drawn there) followed by K signed 32-bit values, all in
network byte order, or by none when the header's flags have FLAG_NO_VALUES.  The single codec used by the worker, the tests and the scapy layer's
checks; it knows nothing about sockets.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from contracts.wire import FLAG_NO_VALUES, HEADER_FORMAT, HEADER_LEN

_HEADER = struct.Struct(HEADER_FORMAT)
_VALUE_DTYPE = np.dtype(">i4")


class ProtocolError(ValueError):
    """A payload that is not a well-formed aggregation packet."""


@dataclass(frozen=True)
class AggHeader:
    """The 16-byte aggregation header, fields as in docs/design.md."""

    msg_type: int
    version: int
    job_id: int
    slot: int
    contributor: int
    chunk_offset: int
    num_elements: int
    exponent: int = 0
    overflow: int = 0
    flags: int = 0               # FLAG_NO_VALUES | FLAG_TO_OWNER (contracts/wire.py)
    owner: int = 0               # with FLAG_TO_OWNER: the worker rank given the values

    @property
    def header_only(self) -> bool:
        return bool(self.flags & FLAG_NO_VALUES)

    def pack(self) -> bytes:
        _check_range("msg_type", self.msg_type, 4)
        _check_range("version", self.version, 1)
        _check_range("overflow", self.overflow, 1)
        _check_range("exponent", self.exponent, 8)
        _check_range("flags", self.flags, 2)
        for name in ("job_id", "slot", "contributor", "num_elements", "owner"):
            _check_range(name, getattr(self, name), 16)
        _check_range("chunk_offset", self.chunk_offset, 32)
        first = (self.msg_type << 4) | (self.version << 3) | (self.overflow << 2) | self.flags
        return _HEADER.pack(first, self.exponent, self.job_id, self.slot,
                            self.contributor, self.chunk_offset, self.num_elements, self.owner)

    @classmethod
    def unpack(cls, data: bytes) -> "AggHeader":
        if len(data) < HEADER_LEN:
            raise ProtocolError(f"aggregation header needs {HEADER_LEN} bytes, got {len(data)}")
        first, exponent, job_id, slot, contributor, offset, count, owner = \
            _HEADER.unpack_from(data)
        return cls(msg_type=first >> 4, version=(first >> 3) & 1, overflow=(first >> 2) & 1,
                   exponent=exponent, job_id=job_id, slot=slot, contributor=contributor,
                   chunk_offset=offset, num_elements=count, flags=first & 3, owner=owner)


@dataclass(frozen=True)
class AggPacket:
    """A header plus its K values (a NumPy int32 array in host order); a header-only packet
    (FLAG_NO_VALUES) has an empty array."""

    header: AggHeader
    values: np.ndarray

    def pack(self) -> bytes:
        if self.header.header_only:
            if len(self.values):
                raise ProtocolError("a FLAG_NO_VALUES packet carries no values")
            return self.header.pack()
        if len(self.values) != self.header.num_elements:
            raise ProtocolError(f"header says {self.header.num_elements} values, "
                                f"packet carries {len(self.values)}")
        return self.header.pack() + np.asarray(self.values, dtype=_VALUE_DTYPE).tobytes()

    @classmethod
    def unpack(cls, data: bytes) -> "AggPacket":
        header = AggHeader.unpack(data)
        expected = HEADER_LEN + (0 if header.header_only else 4 * header.num_elements)
        if len(data) != expected:
            raise ProtocolError(f"aggregation packet with num_elements={header.num_elements} "
                                f"must be {expected} bytes, got {len(data)}")
        values = np.frombuffer(data, dtype=_VALUE_DTYPE, offset=HEADER_LEN).astype(np.int32)
        return cls(header, values)



def _check_range(name: str, value: int, bits: int) -> None:
    if not 0 <= value < (1 << bits):
        raise ProtocolError(f"{name}={value} does not fit in {bits} bits")
