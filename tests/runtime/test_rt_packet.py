"""Unit tests of the bit-level packet reader and writer."""

import pytest

from p4switch.runtime.packet import PacketReader, PacketWriter, ParserException


def test_extract_byte_aligned_and_unaligned_fields():
    r = PacketReader(bytes([0x45, 0xAB, 0xCD, 0xEF]))
    assert r.extract(4) == 0x4
    assert r.extract(4) == 0x5
    assert r.extract(3) == 0b101           # 0xAB = 1010 1011
    assert r.extract(13) == 0b0101111001101
    assert r.extract(8) == 0xEF
    assert r.remaining_bits() == 0


def test_lookahead_does_not_move_and_advance_does():
    r = PacketReader(b"\x12\x34\x56")
    assert r.lookahead(12) == 0x123
    assert r.pos == 0
    r.advance(8)
    assert r.extract(16) == 0x3456


def test_too_short_raises_packet_too_short_and_keeps_position():
    r = PacketReader(b"\x01\x02")
    r.extract(8)
    with pytest.raises(ParserException) as err:
        r.extract(16)
    assert err.value.error_name == "PacketTooShort"
    assert r.pos == 8
    with pytest.raises(ParserException):
        r.advance(9)


def test_payload_is_what_the_parser_did_not_consume():
    r = PacketReader(b"abcdef")
    r.extract(16)
    assert r.payload() == b"cdef"


def test_writer_packs_mixed_widths_msb_first():
    w = PacketWriter()
    w.emit(0x4, 4)
    w.emit(0x5, 4)
    w.emit(0b101, 3)
    w.emit(0x1FFF, 13)
    w.emit(0xABCD, 16)
    assert w.getvalue() == bytes([0x45, 0xBF, 0xFF, 0xAB, 0xCD])


def test_writer_pads_partial_byte_before_raw_bytes():
    w = PacketWriter()
    w.emit(0b1, 1)
    w.emit_bytes(b"\xff")
    assert w.getvalue() == b"\x80\xff"


def test_reader_and_writer_round_trip_random_fields():
    import random
    rng = random.Random(7)
    widths = [rng.randint(1, 70) for _ in range(50)]
    widths.append((-sum(widths)) % 8 or 8)
    values = [rng.getrandbits(w) for w in widths]
    w = PacketWriter()
    for v, n in zip(values, widths):
        w.emit(v, n)
    data = w.getvalue()
    r = PacketReader(data)
    assert [r.extract(n) for n in widths] == values
