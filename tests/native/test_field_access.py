"""Header fields at every bit position: the C back end reads and writes a header that starts
at a byte boundary at constant offsets (p4n_field_get/put), and reads one that does not (after
advance() by part of a byte) bit by bit (p4n_get_bits).  One program parses the same header
both ways, with fields of 1 to 64 bits at every shift, one of them over nine bytes, and emits
it at a byte boundary (the only place a header can be emitted); the packets out are computed
here from the bits, independently of both back ends."""
from __future__ import annotations

import random

import pytest

import p4switch
from p4switch.program import compile_source
from tests.native.parity import make_pair

# (name, width) of odd_t, in order: 456 bits; a field's bytes (shift + width, rounded up)
# are 1 to 9 (`wide` at bit 68: shift 4, nine bytes), of whole bytes or not.
ODD_FIELDS = [("a", 3), ("b", 13), ("mac", 48), ("p", 4), ("wide", 64), ("f", 1), ("g", 7),
              ("w32", 32), ("t", 4), ("u20", 20), ("u52", 52), ("u60", 60), ("u24", 24),
              ("z", 4), ("c24", 24), ("c40", 40), ("c56", 56)]
ODD_BITS = sum(w for _, w in ODD_FIELDS)

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header first_t { bit<8> sel; }
header odd_t { %s }
struct headers_t { first_t first; odd_t odd; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.first);
        transition select(hdr.first.sel) { 0: odd; default: skip; }
    }
    state skip { pkt.advance(4); transition odd; }
    state odd { pkt.extract(hdr.odd); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.odd.a = hdr.odd.a + 1;
        hdr.odd.b = hdr.odd.b ^ 0x1555;
        hdr.odd.mac = ~hdr.odd.mac;
        hdr.odd.wide = hdr.odd.wide + 0x0101010101010101;
        hdr.odd.f = ~hdr.odd.f;
        hdr.odd.g = hdr.odd.g + 3;
        hdr.odd.w32 = hdr.odd.w32 - 1;
        hdr.odd.u20 = hdr.odd.u20 + 1;
        hdr.odd.u52 = hdr.odd.u52 + 1;
        hdr.odd.u60 = hdr.odd.u60 + 1;
        hdr.odd.c24 = hdr.odd.c24 + 1;
        hdr.odd.c40 = hdr.odd.c40 + 1;
        hdr.odd.c56 = hdr.odd.c56 + 1;
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.first); pkt.emit(hdr.odd); }
}
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
""" % " ".join(f"bit<{w}> {n};" for n, w in ODD_FIELDS)

CHANGES = {"a": lambda v: v + 1, "b": lambda v: v ^ 0x1555, "mac": lambda v: ~v,
           "wide": lambda v: v + 0x0101010101010101, "f": lambda v: ~v, "g": lambda v: v + 3,
           "w32": lambda v: v - 1,
           **{name: (lambda v: v + 1) for name in ("u20", "u52", "u60", "c24", "c40", "c56")}}


def expected(packet: bytes) -> bytes:
    """The packet the program sends, from the bits: first_t, odd_t changed, then the packet
    from the byte the parser stopped in (v1model's payload: whole bytes)."""
    nbits = len(packet) * 8
    bits = int.from_bytes(packet, "big")

    def take(at: int, width: int) -> int:
        return (bits >> (nbits - at - width)) & ((1 << width) - 1)

    out, at = [(take(0, 8), 8)], 8
    if packet[0] != 0:
        at += 4                 # advance(4)
    for name, width in ODD_FIELDS:
        value = CHANGES.get(name, lambda v: v)(take(at, width)) & ((1 << width) - 1)
        out.append((value, width))
        at += width
    value = 0
    for field, width in out:
        value = (value << width) | field
    return value.to_bytes(1 + ODD_BITS // 8, "big") + packet[at >> 3:]


@pytest.fixture(scope="module")
def program():
    return compile_source(PROGRAM, "field_access")


@pytest.mark.parametrize("sel", [0, 1], ids=["aligned", "after-advance-4"])
def test_fields_at_every_shift_match_the_bits(program, sel):
    python, native, _ = make_pair(program)
    assert native.backend == "c"
    rng = random.Random(sel)
    header_bytes = 1 + ((4 if sel else 0) + ODD_BITS + 7) // 8
    for n in range(300):
        extra = rng.randrange(0, 5)
        body = bytes(rng.randrange(256) for _ in range(header_bytes - 1 + extra))
        if n < 4:       # all zeros and all ones, where a wrong mask or carry shows
            body = bytes([0x00 if n % 2 else 0xFF]) * len(body)
        packet = bytes([sel]) + body
        want = [(1, expected(packet))]
        assert python.process_packet(0, packet) == want, packet.hex()
        assert native.process_packet(0, packet) == want, packet.hex()


def test_too_short_for_the_header_is_the_same_on_both(program):
    python, native, _ = make_pair(program)
    for sel, size in ((0, ODD_BITS // 8), (1, (4 + ODD_BITS) // 8)):
        packet = bytes([sel]) + bytes(size - 1)
        assert python.process_packet(0, packet) == native.process_packet(0, packet)


def test_the_c_back_end_reads_aligned_headers_at_constant_offsets(program):
    from p4switch.backend.c.binding import c_source
    source = c_source(program)
    assert "p4n_field_get(_h, 68, 64)" in source        # wide: nine bytes at shift 4
    assert "p4n_field_put(_o, 68, 64," in source
    assert "p4n_get_bits(c->data, c->pos" in source      # and bit by bit after advance(4)
    assert p4switch.Switch(program, backend="c").backend == "c"
