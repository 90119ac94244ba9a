"""Bit-level packet buffers: reading headers out of a received packet and writing them back.

`PacketReader` is what the compiled parser extracts from: fixed-width fields come out of one
big integer per header (`int.from_bytes` over a byte slice, then shifts), which is much faster
in Python than per-field byte handling; headers made only of 8/16/32/64-bit fields are read
with one `struct.Struct` instead (`unpack`), which costs no shifts of a wide integer.
`PacketWriter` is what the compiled deparser emits into: values are appended with their widths
and flushed to bytes whenever the bit count is a whole number of bytes, or as bytes already
packed (`emit_packed`).

Errors a parser can hit while reading are raised as `ParserException` carrying the P4 error
name (`PacketTooShort`, `HeaderTooShort`, ...); the compiled parser turns them into
`standard_metadata.parser_error`.
"""

from __future__ import annotations


class ParserException(Exception):
    """A parser error: `error_name` is the P4 `error` member (e.g. "PacketTooShort")."""

    def __init__(self, error_name: str):
        super().__init__(error_name)
        self.error_name = error_name


class PacketReader:
    """A received packet with a read position in bits."""

    __slots__ = ("data", "pos", "nbits")

    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0                       # bits consumed so far
        self.nbits = len(self.data) * 8

    def _peek(self, nbits: int) -> int:
        """The next `nbits` bits as an unsigned int, without moving (PacketTooShort)."""
        pos = self.pos
        end = pos + nbits
        if end > self.nbits:
            raise ParserException("PacketTooShort")
        if not (pos & 7) and not (nbits & 7):
            return int.from_bytes(self.data[pos >> 3:end >> 3], "big")
        first = pos >> 3
        last = (end + 7) >> 3
        chunk = int.from_bytes(self.data[first:last], "big")
        return (chunk >> ((last << 3) - end)) & ((1 << nbits) - 1)

    def extract(self, nbits: int) -> int:
        """Read the next `nbits` bits as an unsigned int and move past them."""
        value = self._peek(nbits)
        self.pos += nbits
        return value

    def unpack(self, layout) -> tuple:
        """Read the next `layout.size` bytes as the fields of a `struct.Struct` layout."""
        pos = self.pos
        if pos & 7:
            nbytes = layout.size
            return layout.unpack(self.extract(nbytes << 3).to_bytes(nbytes, "big"))
        end = pos + (layout.size << 3)
        if end > self.nbits:
            raise ParserException("PacketTooShort")
        self.pos = end
        return layout.unpack_from(self.data, pos >> 3)

    def lookahead(self, nbits: int) -> int:
        """The next `nbits` bits, leaving the position where it is."""
        return self._peek(nbits)

    def advance(self, nbits: int) -> None:
        """Skip `nbits` bits (PacketTooShort past the end, as bmv2 does)."""
        if self.pos + nbits > self.nbits:
            raise ParserException("PacketTooShort")
        self.pos += nbits

    def remaining_bits(self) -> int:
        return self.nbits - self.pos

    def payload(self) -> bytes:
        """The bytes not consumed by the parser (the position rounded down to a byte)."""
        return self.data[self.pos >> 3:]

    @property
    def bytes_consumed(self) -> int:
        return self.pos >> 3


class PacketWriter:
    """Accumulates emitted header bits; `getvalue()` gives the bytes."""

    __slots__ = ("out", "acc", "accbits")

    def __init__(self):
        self.out = bytearray()
        self.acc = 0          # pending bits that do not yet make a whole byte
        self.accbits = 0

    def emit(self, value: int, nbits: int) -> None:
        """Append the low `nbits` bits of `value` (callers pass values already in range)."""
        if not self.accbits and not (nbits & 7):
            self.out += value.to_bytes(nbits >> 3, "big")
            return
        acc = (self.acc << nbits) | value
        total = self.accbits + nbits
        whole = total >> 3
        rest = total & 7
        if whole:
            self.out += (acc >> rest).to_bytes(whole, "big")
            acc &= (1 << rest) - 1
        self.acc = acc
        self.accbits = rest

    def emit_packed(self, data: bytes) -> None:
        """Append whole bytes of header fields (pending bits stay in front of them)."""
        if self.accbits:
            self.emit(int.from_bytes(data, "big"), len(data) << 3)
        else:
            self.out += data

    def emit_bytes(self, data: bytes) -> None:
        """Append raw bytes (the payload); pending bits are flushed first, zero-padded."""
        self._flush()
        self.out += data

    def _flush(self) -> None:
        if self.accbits:
            pad = 8 - self.accbits
            self.out.append((self.acc << pad) & 0xFF)
            self.acc = 0
            self.accbits = 0

    def finish(self, payload: bytes) -> bytes:
        """The packet: the emitted headers (pending bits zero-padded), then `payload`."""
        if self.accbits:
            self._flush()
        out = self.out
        out += payload
        return bytes(out)

    def getvalue(self) -> bytes:
        self._flush()
        return bytes(self.out)
