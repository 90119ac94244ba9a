// Parser select: masks, ranges, tuples, don't-care and default, checked in order.
// The state the parser ends in is written into h.path.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> path;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> path; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b) {
            (8w0x10 &&& 8w0xF0, _) : masked;
            (8w0x20 .. 8w0x2F, 8w1) : range_and_value;
            (8w0x20 .. 8w0x2F, _)   : range_only;
            (_, 8w0xFF)             : second_only;
            default                 : fallback;
        }
    }
    state masked          { meta.path = 1; transition accept; }
    state range_and_value { meta.path = 2; transition accept; }
    state range_only      { meta.path = 3; transition accept; }
    state second_only     { meta.path = 4; transition accept; }
    state fallback        { meta.path = 5; transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.path = meta.path;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
