// A control instantiated twice inside ingress with different constructor arguments; each
// instance has its own table ("Ing.first.t", "Ing.second.t").
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> v;
}

struct headers_t { h_t h; }
struct meta_t { }

control Adder(inout h_t h)(bit<8> step) {
    action set_v(bit<8> v) { h.v = v; }
    table t {
        key = { h.k : exact; }
        actions = { set_v; NoAction; }
        default_action = NoAction();
    }
    apply {
        h.v = h.v + step;
        t.apply();
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Adder(1) first;
    Adder(10) second;
    apply {
        first.apply(hdr.h);
        second.apply(hdr.h);
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
