// A parser value_set filled by the control plane selects the parser state.
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<16> type; }
header inner_t { bit<8> v; }

struct headers_t {
    tag_t   tag;
    inner_t inner;
}
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) known;

    state start {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.type) {
            known   : parse_inner;
            default : accept;
        }
    }
    state parse_inner {
        pkt.extract(hdr.inner);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.inner.isValid()) {
            hdr.inner.v = hdr.inner.v + 1;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.tag); pkt.emit(hdr.inner); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
