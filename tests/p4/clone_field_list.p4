// clone_preserving_field_list: an I2E clone carries the @field_list metadata into egress.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> v;
    bit<8> itype;
}

struct headers_t { h_t h; }
struct meta_t {
    @field_list(2)
    bit<8> tag;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.tag = 0x42;
        sm.egress_spec = 1;
        clone_preserving_field_list(CloneType.I2E, 5, 2);
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.itype = (bit<8>)sm.instance_type;
        if (sm.instance_type == 1) {
            hdr.h.v = meta.tag;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
