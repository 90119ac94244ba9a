"""End to end: parsers (stacks, varbit, lookahead, value sets, errors) and checksums."""

from scapy.all import IP, UDP, Ether, Raw

from rt_helpers import switch

ERRORS = """
    apply {
        if (standard_metadata.parser_error == error.NoError) { standard_metadata.egress_spec = 1; }
        else if (standard_metadata.parser_error == error.PacketTooShort) { standard_metadata.egress_spec = 2; }
        else if (standard_metadata.parser_error == error.NoMatch) { standard_metadata.egress_spec = 3; }
        else if (standard_metadata.parser_error == error.StackOutOfBounds) { standard_metadata.egress_spec = 4; }
        else if (standard_metadata.parser_error == error.HeaderTooShort) { standard_metadata.egress_spec = 5; }
        else if (standard_metadata.parser_error == error.BadVersion) { standard_metadata.egress_spec = 6; }
        else { standard_metadata.egress_spec = 7; }
    }"""

STACK_TYPES = """
error { BadVersion }
header label_t { bit<7> value; bit<1> bos; }
header tail_t { bit<8> t; }
struct headers { label_t[3] labels; tail_t tail; }
struct metadata { }
"""
STACK_PARSER = """
    state start {
        packet.extract(hdr.labels.next);
        transition select(hdr.labels.last.bos) {
            1: parse_tail;
            default: start;
        }
    }
    state parse_tail {
        packet.extract(hdr.tail);
        verify(hdr.tail.t != 0xEE, error.BadVersion);
        transition select(hdr.tail.t) {
            0x00 .. 0x7F: accept;
            0xF0 &&& 0xF0: accept;
        }
    }"""


def label(value, bos):
    return bytes([(value << 1) | bos])


def test_header_stack_parsing_and_parser_errors():
    sw = switch(STACK_TYPES, STACK_PARSER, ERRORS)
    two = label(5, 0) + label(6, 1) + b"\x10payload"
    assert sw.process_packet(0, two) == [(1, two)]
    # Too many labels: the fourth extract overflows the stack.
    assert sw.process_packet(0, label(1, 0) * 4) == [(4, label(1, 0) * 4)]
    # Headers extracted before an error are still emitted; the rest is payload.
    assert sw.process_packet(0, label(1, 0)) == [(2, label(1, 0))]
    # No select case matches: as on bmv2 (p4c's bmv2 back end never sets error.NoMatch) the
    # parse ends there with no error.
    assert sw.process_packet(0, label(1, 1) + b"\x90") == [(1, label(1, 1) + b"\x90")]
    assert sw.process_packet(0, label(1, 1) + b"\xF5") == [(1, label(1, 1) + b"\xF5")]
    assert sw.process_packet(0, label(1, 1) + b"\xEE") == [(6, label(1, 1) + b"\xEE")]


def test_stack_push_pop_and_indexing():
    sw = switch(STACK_TYPES, STACK_PARSER, """
        apply {
            if (hdr.tail.t == 1) {
                hdr.labels.pop_front(1);
            } else {
                hdr.labels.push_front(1);
                hdr.labels[0].setValid();
                hdr.labels[0].value = 9;
                hdr.labels[0].bos = 0;
            }
            hdr.tail.t = (bit<8>)hdr.labels[1].value;
            standard_metadata.egress_spec = 1;
        }""")
    data = label(5, 0) + label(6, 1)
    assert sw.process_packet(0, data + b"\x01") == [(1, label(6, 1) + b"\x00")]
    assert sw.process_packet(0, data + b"\x02") == [(1, label(9, 0) + data + b"\x05")]


def test_varbit_two_argument_extract_and_too_long_option():
    sw = switch("""
        header len_t { bit<8> nbytes; }
        header opt_t { varbit<32> data; }
        header tail_t { bit<8> t; }
        struct headers { len_t len; opt_t opt; tail_t tail; }
        struct metadata { }""", """
        state start {
            packet.extract(hdr.len);
            packet.extract(hdr.opt, (bit<32>)hdr.len.nbytes << 3);
            packet.extract(hdr.tail);
            transition accept;
        }""", """
        apply {
            if (standard_metadata.parser_error == error.HeaderTooShort) {
                standard_metadata.egress_spec = 5;
            } else {
                hdr.tail.t = hdr.tail.t + 1;
                standard_metadata.egress_spec = 1;
            }
        }""")
    assert sw.process_packet(0, b"\x03abc\x10xyz") == [(1, b"\x03abc\x11xyz")]
    assert sw.process_packet(0, b"\x00\x10") == [(1, b"\x00\x11")]
    assert sw.process_packet(0, b"\x05abcdef") == [(5, b"\x05abcdef")]
    # A failed varbit extract consumes nothing: the bytes stay in the payload.
    assert sw.process_packet(0, b"\x03ab") == [(1, b"\x03ab")]


def test_lookahead_advance_and_value_set():
    sw = switch("""
        header h_t { bit<8> kind; bit<8> v; }
        struct headers { h_t h; }
        struct metadata { bit<8> peeked; }""", """
        value_set<bit<8>>(4) special;
        state start {
            meta.peeked = packet.lookahead<bit<8>>();
            transition select(meta.peeked) {
                special: skip;
                default: parse_h;
            }
        }
        state skip { packet.advance(8); transition parse_h; }
        state parse_h { packet.extract(hdr.h); transition accept; }""", """
        apply { hdr.h.v = meta.peeked; standard_metadata.egress_spec = 1; }""")
    assert sw.process_packet(0, b"\x07\x01\x02") == [(1, b"\x07\x07\x02")]
    sw.value_set("special").add(7)
    # The skipped byte is not emitted: the deparser emits h, then the rest.
    assert sw.process_packet(0, b"\x07\x01\x02") == [(1, b"\x01\x07")]


def test_header_union():
    sw = switch("""
        header a_t { bit<8> x; }
        header b_t { bit<16> y; }
        header_union ab_t { a_t a; b_t b; }
        header k_t { bit<8> kind; }
        struct headers { k_t k; ab_t u; }
        struct metadata { }""", """
        state start {
            packet.extract(hdr.k);
            transition select(hdr.k.kind) { 1: pa; default: pb; }
        }
        state pa { packet.extract(hdr.u.a); transition accept; }
        state pb { packet.extract(hdr.u.b); transition accept; }""", """
        apply {
            if (hdr.u.a.isValid()) {
                bit<8> x = hdr.u.a.x;
                hdr.u.b.setValid();            /* makes a invalid */
                hdr.u.b.y = (bit<16>)x + 1;
            }
            standard_metadata.egress_spec = 1;
        }""")
    assert sw.process_packet(0, b"\x01\x05") == [(1, b"\x01\x00\x06")]
    assert sw.process_packet(0, b"\x02\x12\x34") == [(1, b"\x02\x12\x34")]


IPV4_TYPES = """
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { }
"""
IPV4_FIELDS = """{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
    hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
    hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }"""


def test_checksum_error_flag_from_verify_checksum():
    sw = switch(IPV4_TYPES, """
        state start { packet.extract(hdr.ethernet); packet.extract(hdr.ipv4); transition accept; }""",
        """apply { standard_metadata.egress_spec = 1 + (bit<9>)standard_metadata.checksum_error; }""",
        verify=f"""apply {{
            verify_checksum(hdr.ipv4.isValid(), {IPV4_FIELDS}, hdr.ipv4.hdrChecksum,
                            HashAlgorithm.csum16);
        }}""")
    good = bytes(Ether() / IP(dst="1.2.3.4") / UDP())
    assert sw.process_packet(0, good)[0][0] == 1
    bad = bytearray(good)
    bad[14 + 10] ^= 0xFF
    assert sw.process_packet(0, bytes(bad))[0][0] == 2


def test_update_checksum_with_payload_covers_the_payload():
    sw = switch("""
        header h_t { bit<16> csum; }
        struct headers { h_t h; }
        struct metadata { }""",
        "state start { packet.extract(hdr.h); transition accept; }",
        "apply { standard_metadata.egress_spec = 1; }",
        compute="""apply {
            update_checksum_with_payload(true, { 16w0x1234 }, hdr.h.csum, HashAlgorithm.csum16);
        }""")
    words = 0x1234 + 0x0102 + 0x0300
    expected = (~words) & 0xFFFF
    assert sw.process_packet(0, b"\x00\x00\x01\x02\x03") == [
        (1, expected.to_bytes(2, "big") + b"\x01\x02\x03")]


def test_sub_parser_fills_its_out_headers_from_scratch():
    sw = switch("""
        header a_t { bit<8> v; }
        struct inner_t { a_t a; a_t b; }
        struct headers { a_t first; inner_t inner; }
        struct metadata { }
        parser Inner(packet_in packet, out inner_t inner) {
            state start {
                packet.extract(inner.a);
                transition select(inner.a.v) { 0: accept; default: more; }
            }
            state more { packet.extract(inner.b); transition accept; }
        }""", """
        Inner() inner_parser;
        state start {
            packet.extract(hdr.first);
            hdr.inner.b.setValid();        /* forgotten: inner's out parameter starts invalid */
            inner_parser.apply(packet, hdr.inner);
            transition accept;
        }""", "apply { standard_metadata.egress_spec = 1; }")
    assert sw.process_packet(0, b"\x01\x00\x09") == [(1, b"\x01\x00\x09")]
    assert sw.process_packet(0, b"\x01\x05\x09\x07") == [(1, b"\x01\x05\x09\x07")]
