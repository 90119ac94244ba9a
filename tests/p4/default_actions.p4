// Default actions: an initial default with arguments, replaced by the control plane.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> res;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action hit_action(bit<8> v) { hdr.h.res = v; sm.egress_spec = 1; }
    action miss_action(bit<8> v, bit<9> port) { hdr.h.res = v; sm.egress_spec = port; }

    table t {
        key = { hdr.h.k : exact; }
        actions = { hit_action; miss_action; }
        default_action = miss_action(0xD0, 2);
    }

    apply { t.apply(); }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
