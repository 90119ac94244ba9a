// Saturating arithmetic |+| and |-| on bit<8> and int<8>.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> add;
    bit<8> sub;
    int<8> sa;
    int<8> sb;
    int<8> sadd;
    int<8> ssub;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.add = hdr.h.a |+| hdr.h.b;
        hdr.h.sub = hdr.h.b |-| hdr.h.a;
        hdr.h.sadd = hdr.h.sa |+| hdr.h.sb;
        hdr.h.ssub = hdr.h.sb |-| hdr.h.sa;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
