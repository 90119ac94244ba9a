// Signed int<W>: wrapping add, arithmetic shift right, signed comparison, negation,
// sign-extending cast.
#include <core.p4>
#include <v1model.p4>

header h_t {
    int<8>  a;
    int<8>  b;
    int<8>  sum;
    int<8>  shr;
    bit<8>  lt;
    int<8>  neg;
    bit<16> ext;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.sum = hdr.h.a + hdr.h.b;
        hdr.h.shr = hdr.h.a >> 1;
        hdr.h.lt = (hdr.h.a < hdr.h.b) ? 8w1 : 8w0;
        hdr.h.neg = -hdr.h.a;
        hdr.h.ext = (bit<16>)(int<16>)hdr.h.a;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
