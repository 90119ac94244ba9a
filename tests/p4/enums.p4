// Enums: a serializable enum cast from a header field and switched on (with default),
// and a plain enum held in a local variable.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Op { ADD = 1, SUB = 2 }
enum Side { LEFT, RIGHT }

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> r;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        Op op = (Op)hdr.h.op;
        switch (op) {
            Op.ADD: { hdr.h.r = hdr.h.a + hdr.h.b; }
            Op.SUB: { hdr.h.r = hdr.h.a - hdr.h.b; }
            default: { hdr.h.r = 0xFF; }
        }
        Side side = Side.RIGHT;
        if (hdr.h.a > hdr.h.b) {
            side = Side.LEFT;
        }
        if (side == Side.LEFT) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
