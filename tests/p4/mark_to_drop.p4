// mark_to_drop in ingress and in egress.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; }

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.k == 1) {
            mark_to_drop(sm);
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.k == 2) {
            mark_to_drop(sm);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
