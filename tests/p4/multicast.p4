// Multicast: ingress picks the group; egress writes egress_rid and egress_port into the packet.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> grp;
    bit<16> rid;
    bit<8>  port;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.grp == 0) {
            sm.egress_spec = 1;
        } else {
            sm.mcast_grp = hdr.h.grp;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.port = (bit<8>)sm.egress_port;
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
