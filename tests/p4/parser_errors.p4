// Parser errors reach ingress in standard_metadata.parser_error: PacketTooShort and a
// program-defined error raised by verify(); a select no case matches ends the parse with no
// error, as on bmv2 (which never sets NoMatch). Ingress writes a code into a.err.
#include <core.p4>
#include <v1model.p4>

error { BadVersion }

header a_t {
    bit<8> x;
    bit<8> err;
}
header b_t { bit<32> y; }

struct headers_t { a_t a; b_t b; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        transition select(hdr.a.x) {
            1 : parse_b;
            2 : check_version;
            0 : accept;
        }
    }
    state parse_b {
        pkt.extract(hdr.b);
        transition accept;
    }
    state check_version {
        verify(hdr.a.err == 4, error.BadVersion);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            hdr.a.err = 0xE0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.a.err = 0xE1;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.a.err = 0xE2;
        } else if (sm.parser_error == error.BadVersion) {
            hdr.a.err = 0xE3;
        } else {
            hdr.a.err = 0xEF;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.b); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
