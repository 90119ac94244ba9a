// Functions: a value-returning function with early return, and one with inout parameters.
#include <core.p4>
#include <v1model.p4>

bit<8> max8(in bit<8> a, in bit<8> b) {
    if (a > b) {
        return a;
    }
    return b;
}

void swap8(inout bit<8> a, inout bit<8> b) {
    bit<8> t = a;
    a = b;
    b = t;
}

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> m;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.m = max8(hdr.h.a, hdr.h.b);
        swap8(hdr.h.a, hdr.h.b);
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
