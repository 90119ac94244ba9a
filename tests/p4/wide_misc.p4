// More over 64 bits: saturating arithmetic on bit<100>/int<100>, random() of a bit<200>
// (checked to stay in its range; the parity tests compare the values drawn), a hash whose
// base and maximum are bit<120>, a for loop over a tuple, packet_in.length() and a
// varbit in a hash's data.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<100> a;
    bit<100> b;
    int<100> c;
    int<100> d;
    bit<200> r;
    bit<120> h;
    bit<32>  len;
    bit<8>   sum;
    bit<8>   in_range;
}
header v_t { bit<8> n; varbit<64> opt; }
struct headers_t { h_t h; v_t v; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        bit<32> len = pkt.length();
        pkt.extract(hdr.h);
        hdr.h.len = len;
        pkt.extract(hdr.v, (bit<32>)pkt.lookahead<bit<8>>() * 8);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = hdr.h.a |+| hdr.h.b;
        hdr.h.b = hdr.h.b |-| 100w7;
        int<100> c = hdr.h.c;
        hdr.h.c = c |+| hdr.h.d;
        hdr.h.d = hdr.h.d |-| c;
        random(hdr.h.r, 200w5, 200w0xFFFFFFFFFFFFFFFFFFFFFFFFFFF);
        hdr.h.in_range = hdr.h.r >= 5 && hdr.h.r <= 200w0xFFFFFFFFFFFFFFFFFFFFFFFFFFF ? 8w1 : 8w0;
        hdr.h.r = 0;
        hash(hdr.h.h, HashAlgorithm.crc16, 120w0xFFFFFFFFFFFFFFFFFFFFFFFFFFFF00,
             { hdr.v.opt, hdr.h.len }, 120w1000);
        tuple<bit<8>, bit<8>, bit<8>> t = { 1, 2, hdr.v.n };
        bit<8> s = 0;
        for (bit<8> x in t) { s = s + x; }
        hdr.h.sum = s;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.v); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
