// Statements and expressions: switch on a bit<8> value with shared labels and default,
// struct initialisation from a list, whole-header assignment (which makes the target valid),
// bool locals and the conditional operator.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> a;
    bit<8> b;
    bit<8> r;
}

struct pair_t {
    bit<8> first;
    bit<8> second;
}

struct headers_t {
    h_t h;
    h_t copy;
}
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        switch (hdr.h.k) {
            1: { hdr.h.r = 0x10; }
            2:
            3: { hdr.h.r = 0x23; }
            default: { hdr.h.r = 0xFF; }
        }
        pair_t p = { hdr.h.b, hdr.h.a };
        hdr.h.a = p.first;
        hdr.h.b = p.second;
        bool big = hdr.h.a > 0x7F;
        sm.egress_spec = big ? 9w2 : 9w1;
        if (hdr.h.k == 3) {
            hdr.copy = hdr.h;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.copy); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
