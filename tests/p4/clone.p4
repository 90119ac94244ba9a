// Clones: ingress-to-egress and egress-to-egress, seen through standard_metadata.instance_type.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> kind;
    bit<8> itype;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.kind == 1) {
            clone(CloneType.I2E, 5);
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.kind == 2 && sm.instance_type == 0) {
            clone(CloneType.E2E, 6);
        }
        hdr.h.itype = (bit<8>)sm.instance_type;
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
