// Bit slices (read and assign), concatenation, shifts by constants and by a field.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> x;
    bit<8>  y;
    bit<8>  mid;
    bit<24> cat;
    bit<16> shl;
    bit<16> shr;
    bit<4>  lo;
    bit<4>  hi;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.mid = hdr.h.x[11:4];
        hdr.h.cat = hdr.h.y ++ hdr.h.x;
        hdr.h.shl = hdr.h.x << 4;
        hdr.h.shr = hdr.h.x >> hdr.h.y[3:0];
        hdr.h.lo = hdr.h.y[3:0];
        hdr.h.hi = hdr.h.y[7:4];
        hdr.h.x[3:0] = 0xF;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
