// Const entries (exact, masked, default) where the first listed wins, and a const
// default action on another table.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> out1;
    bit<8> out2;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set1(bit<8> v) { hdr.h.out1 = v; }
    action set2(bit<8> v) { hdr.h.out2 = v; }

    table classify {
        key = { hdr.h.k : ternary; }
        actions = { set1; }
        const entries = {
            8w0x01            : set1(0xA1);
            8w0x00 &&& 8w0xF0 : set1(0xA2);
            8w0x10 &&& 8w0xF0 : set1(0xA3);
            _                 : set1(0xA4);
        }
    }

    table fixed_default {
        key = { hdr.h.k : exact; }
        actions = { set2; }
        const default_action = set2(0xBB);
    }

    apply {
        classify.apply();
        fixed_default.apply();
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
