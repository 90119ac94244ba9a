// A direct meter on a table: each entry has its own meter; the action reads the colour.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> color;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) police;

    action metered() {
        police.read(hdr.h.color);
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { metered; NoAction; }
        default_action = NoAction();
        meters = police;
    }
    apply {
        t.apply();
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
