"""End to end: multicast, clones, resubmit, recirculate, truncation, drops, CPU port."""

from rt_helpers import switch

TYPES = """
header h_t { bit<8> op; bit<8> x; }
struct headers { h_t h; }
struct metadata {
    @field_list(1) bit<8> tag;
    @field_list(2) bit<8> passes;
    bit<8> not_kept;
}
"""
PARSER = "state start { packet.extract(hdr.h); transition accept; }"


def test_multicast_copies_in_replica_order_with_rid_and_instance_type():
    sw = switch(TYPES, PARSER,
                "apply { standard_metadata.mcast_grp = (bit<16>)hdr.h.op; }",
                egress="""apply {
                    hdr.h.op = (bit<8>)standard_metadata.instance_type;
                    hdr.h.x = (bit<8>)standard_metadata.egress_rid;
                }""")
    sw.pre.set_multicast_group(1, [(2, 5), (3, 6), (1, 7)])
    assert sw.process_packet(0, b"\x01\x00tail") == [
        (2, b"\x05\x05tail"), (3, b"\x05\x06tail"), (1, b"\x05\x07tail")]
    # An unconfigured group replicates to nobody.
    assert sw.process_packet(0, b"\x02\x00tail") == []


def test_ingress_clone_is_the_original_packet_with_preserved_fields_first():
    sw = switch(TYPES, PARSER, """
        apply {
            meta.tag = 0x77;
            meta.not_kept = 0x55;
            hdr.h.x = 0xEE;
            clone_preserving_field_list(CloneType.I2E, 5, 1);
            standard_metadata.egress_spec = 1;
        }""", egress="""apply {
            if (standard_metadata.instance_type == 1) {
                hdr.h.op = meta.tag;
                hdr.h.x = hdr.h.x + meta.not_kept;
            }
        }""")
    sw.pre.set_clone_session(5, [(4, 0)])
    # The clone re-parses the packet as received (x = 0x10), carries tag but not not_kept.
    assert sw.process_packet(0, b"\x01\x10rest") == [(4, b"\x77\x10rest"), (1, b"\x01\xeerest")]


def test_clone_session_truncation_and_missing_session():
    sw = switch(TYPES, PARSER, """
        apply { clone(CloneType.I2E, 9); standard_metadata.egress_spec = 1; }""")
    assert sw.process_packet(0, b"\x01\x02abcdef") == [(1, b"\x01\x02abcdef")]
    sw.pre.set_clone_session(9, [(3, 0)], truncate=4)
    assert sw.process_packet(0, b"\x01\x02abcdef") == [(3, b"\x01\x02ab"),
                                                        (1, b"\x01\x02abcdef")]


def test_egress_clone_copies_egress_headers_and_original_can_still_drop():
    sw = switch(TYPES, PARSER, "apply { standard_metadata.egress_spec = 1; }", egress="""
        apply {
            if (standard_metadata.instance_type == 0) {
                hdr.h.x = 0x42;
                clone(CloneType.E2E, 6);
                if (hdr.h.op == 9) { mark_to_drop(standard_metadata); }
            } else {
                hdr.h.op = (bit<8>)standard_metadata.instance_type;
            }
        }""")
    sw.pre.set_clone_session(6, [(7, 0)])
    assert sw.process_packet(0, b"\x01\x00z") == [(1, b"\x01\x42z"), (7, b"\x02\x42z")]
    assert sw.process_packet(0, b"\x09\x00z") == [(7, b"\x02\x42z")]


def test_resubmit_runs_ingress_again_on_the_original_packet():
    sw = switch(TYPES, PARSER, """
        apply {
            if (standard_metadata.instance_type == 0) {
                meta.passes = 1;
                hdr.h.op = 0xFF;       /* lost: resubmit takes the packet as received */
                resubmit_preserving_field_list(2);
            } else {
                hdr.h.x = meta.passes + (bit<8>)standard_metadata.instance_type;
            }
            standard_metadata.egress_spec = 2;
        }""")
    assert sw.process_packet(3, b"\x01\x00") == [(2, b"\x01\x07")]


def test_recirculate_sends_the_deparsed_packet_back_to_ingress():
    sw = switch(TYPES, PARSER, """
        apply { standard_metadata.egress_spec = 1; }""", egress="""
        apply {
            hdr.h.op = (bit<8>)standard_metadata.instance_type;
            if (hdr.h.x < 3) {
                hdr.h.x = hdr.h.x + 1;
                recirculate_preserving_field_list(0);
            }
        }""")
    assert sw.process_packet(0, b"\x00\x00") == [(1, b"\x04\x03")]
    assert sw.trace.count("Recirculating packet") == 3


def test_endless_recirculation_is_cut_off():
    sw = switch(TYPES, PARSER, "apply { standard_metadata.egress_spec = 1; }",
                egress="apply { recirculate_preserving_field_list(0); }")
    assert sw.process_packet(0, b"\x00\x00") == []


def test_drop_port_and_mark_to_drop_and_truncate():
    sw = switch(TYPES, PARSER, """
        apply {
            if (hdr.h.op == 0) { standard_metadata.egress_spec = 511; }
            else if (hdr.h.op == 1) { standard_metadata.egress_spec = 2; mark_to_drop(standard_metadata); }
            else { standard_metadata.egress_spec = 2; truncate(3); }
        }""")
    assert sw.process_packet(0, b"\x00\x00abc") == []
    assert sw.process_packet(0, b"\x01\x00abc") == []
    assert sw.process_packet(0, b"\x02\x00abc") == [(2, b"\x02\x00a")]


def test_packets_to_the_cpu_port_go_to_packet_in():
    import p4switch
    from rt_helpers import build
    prog = build(TYPES, PARSER, "apply { standard_metadata.egress_spec = (bit<9>)hdr.h.op; }")
    sw = p4switch.Switch(prog, cpu_port=64)
    got = []
    sw.packet_in = lambda port, data: got.append((port, data))
    assert sw.process_packet(1, b"\x40\x01") == []
    assert got == [(64, b"\x40\x01")]
    assert sw.process_packet(1, b"\x02\x01") == [(2, b"\x02\x01")]


def test_old_style_resubmit_and_clone3_preserve_the_listed_metadata():
    sw = switch(TYPES, PARSER, """
        apply {
            if (standard_metadata.instance_type == 0) {
                meta.passes = 3;
                meta.not_kept = 4;
                meta.tag = 5;
                clone3(CloneType.I2E, 2, { meta.tag });
                resubmit({ meta.passes });
            } else {
                hdr.h.x = meta.passes + meta.not_kept + meta.tag;
            }
            standard_metadata.egress_spec = 1;
        }""", egress="""apply {
            if (standard_metadata.instance_type == 1) { hdr.h.op = meta.tag + meta.passes; }
        }""")
    sw.pre.set_clone_session(2, [(6, 0)])
    # The clone keeps only tag (5); the resubmitted packet only passes (3).
    assert sw.process_packet(0, b"\x00\x00") == [(6, b"\x05\x00"), (1, b"\x00\x03")]


def test_ports_must_be_nine_bit_numbers():
    import pytest
    from p4switch.runtime.errors import InvalidArgument
    sw = switch(TYPES, PARSER, "apply { standard_metadata.egress_spec = 1; }")
    with pytest.raises(InvalidArgument):
        sw.process_packet(512, b"\x00\x00")
    assert sw.process_packet(511, b"\x00\x00") == [(1, b"\x00\x00")]
