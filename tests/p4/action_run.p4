// switch (t.apply().action_run) with a default branch, and t.apply().hit / .miss.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> which;
    bit<8> hit;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a1() { }
    action a2() { }
    action a3() { }

    table t {
        key = { hdr.h.k : exact; }
        actions = { a1; a2; a3; NoAction; }
        default_action = NoAction();
    }
    table t2 {
        key = { hdr.h.k : exact; }
        actions = { NoAction; }
    }
    table t3 {
        key = { hdr.h.k : exact; }
        actions = { NoAction; }
    }

    apply {
        switch (t.apply().action_run) {
            a1: { hdr.h.which = 1; }
            a2: { hdr.h.which = 2; }
            default: { hdr.h.which = 9; }
        }
        if (t2.apply().hit) {
            hdr.h.hit = 1;
        }
        if (t3.apply().miss) {
            hdr.h.hit = hdr.h.hit + 0x10;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
