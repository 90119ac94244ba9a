"""P4Runtime binary strings (spec section "Bytestrings") <-> Python ints.

The server accepts the canonical form (shortest, no leading zero bytes; zero is one zero byte)
and the byte-padded form (ceil(width/8) bytes); it answers in canonical form. A value that does
not fit its width is refused with OUT_OF_RANGE, an empty string with INVALID_ARGUMENT.
"""
from .errors import invalid, out_of_range


def decode(data: bytes, width: int, what: str) -> int:
    """The integer a P4Runtime bytestring encodes, checked against `width` bits."""
    if not data:
        raise invalid(f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >> width:
        raise out_of_range(f"{what}: value 0x{data.hex()} does not fit in {width} bits")
    return value


def encode(value: int) -> bytes:
    """Canonical bytestring of a non-negative integer."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode_padded(value: int, width: int) -> bytes:
    """Byte-padded bytestring: exactly ceil(width/8) bytes (used for packet metadata on the wire)."""
    return value.to_bytes((width + 7) // 8, "big")
