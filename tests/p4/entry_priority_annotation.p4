// Const entries with the older @priority(N) annotation: the smaller number wins, and an
// entry without the annotation ranks by its position (1, 2, ...); on an exact table it has
// no effect.  The same control is instantiated twice, so its tables are checked for both
// instances.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> k;
    bit<8>  out1;
    bit<8>  out2;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Pick(in bit<16> k, out bit<8> result) {
    action set(bit<8> v) { result = v; }
    table t {
        key = { k : ternary; }
        actions = { set; }
        default_action = set(0xFF);
        const entries = {
            0x0011 &&& 0x00FF : set(1) @priority(3);
            0x1111            : set(2);
            0x1000 &&& 0xF100 : set(3) @priority(1);
        }
    }
    // An exact table: no two entries match one key, so @priority decides nothing.
    table exact_t {
        key = { k : exact; }
        actions = { set; }
        const entries = {
            0x0000 : set(0xEE) @priority(5);
        }
    }
    apply {
        if (!t.apply().hit) {
            exact_t.apply();
        }
    }
}

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Pick() first;
    Pick() second;
    apply {
        first.apply(hdr.h.k, hdr.h.out1);
        second.apply(hdr.h.k ^ 16w0x0100, hdr.h.out2);
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
