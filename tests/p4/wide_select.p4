// Over 128 bits in a parser select (mask, range and constant keysets), a switch statement,
// register indices, a for loop over a range and a ternary; expectations in the STF.
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>
header h_t { bit<136> a; bit<136> b; bit<8> o; }
struct headers_t { h_t h; h_t[2] s; }
struct meta_t { bit<136> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition select(hdr.h.a) {
        136w0x10 &&& 136w0xF0: one;
        136w0x100 .. 136w0x1FF: two;
        136w0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF: three;
        default: accept; } }
    state one { hdr.h.o = 1; transition accept; }
    state two { hdr.h.o = 2; transition accept; }
    state three { hdr.h.o = 3; transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>, bit<136>>(4) r;
    apply {
        switch (hdr.h.b) {
            136w1: { hdr.h.o = hdr.h.o + 10; }
            136w0xABCDEF0123456789ABCDEF0123456789AB: { hdr.h.o = hdr.h.o + 20; }
            default: { hdr.h.o = hdr.h.o + 30; }
        }
        r.write(hdr.h.b, 8w7);
        bit<8> x; r.read(x, hdr.h.b);
        hdr.h.o = hdr.h.o + x;
        for (bit<136> i in 136w1 .. 136w3) { meta.m = meta.m + i; }
        hdr.h.b = meta.m + (hdr.h.a == hdr.h.b ? 136w100 : 136w200);
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
