// Resubmit: the original packet goes through ingress again, with one metadata field kept.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> v;
    bit<8> itype;
}

struct headers_t { h_t h; }
struct meta_t {
    @field_list(1)
    bit<8> kept;
    bit<8> lost;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.instance_type == 0) {
            meta.kept = 7;
            meta.lost = 9;
            hdr.h.v = 0xEE;
            resubmit_preserving_field_list(1);
        } else {
            hdr.h.v = meta.kept + meta.lost;
            hdr.h.itype = (bit<8>)sm.instance_type;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
