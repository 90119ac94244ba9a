// Header unions: the parser extracts one member; setValid on another member invalidates
// the first; emit writes whichever member is valid.
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> kind; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t {
    a_t a;
    b_t b;
}

struct headers_t {
    tag_t tag;
    u_t   u;
}
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.kind) {
            1       : parse_a;
            2       : parse_b;
            default : accept;
        }
    }
    state parse_a { pkt.extract(hdr.u.a); transition accept; }
    state parse_b { pkt.extract(hdr.u.b); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.u.a.isValid()) {
            bit<8> x = hdr.u.a.x;
            hdr.u.b.setValid();
            hdr.u.b.y = 8w0x01 ++ x;
            hdr.tag.kind = 2;
        } else if (hdr.u.b.isValid()) {
            bit<8> low = hdr.u.b.y[7:0];
            hdr.u.a.setValid();
            hdr.u.a.x = low;
            hdr.tag.kind = 1;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.tag); pkt.emit(hdr.u); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
