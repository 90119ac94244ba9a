// exit (in a control and in an action) ends ingress but egress still runs; return ends
// only the apply block.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> r;
    bit<8> e;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_and_exit() {
        hdr.h.r = 0x11;
        exit;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) {
            hdr.h.r = 1;
            exit;
        }
        if (hdr.h.a == 2) {
            hdr.h.r = 2;
            return;
        }
        if (hdr.h.a == 3) {
            set_and_exit();
            hdr.h.r = 0xFF;
        }
        hdr.h.r = 4;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.e = 0xEE; }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
