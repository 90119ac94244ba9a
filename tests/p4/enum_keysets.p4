// Masks and ranges on keys of a serializable enum type: their operands are values of the
// enum's representation type (bit<8> here), enum members included.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind { LOW = 0x01, HIGH = 0x81, OTHER = 0x40 }

header h_t {
    Kind   kind;
    bit<8> by_mask;
    bit<8> by_range;
    bit<8> by_select;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            8w0x80 &&& 8w0x80 : high_bit;
            default : accept;
        }
    }
    state high_bit { hdr.h.by_select = 1; transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mask_hit(bit<8> v) { hdr.h.by_mask = v; }
    action range_hit(bit<8> v) { hdr.h.by_range = v; }
    table by_mask {
        key = { hdr.h.kind : ternary; }
        actions = { mask_hit; }
        default_action = mask_hit(0xFF);
        const entries = {
            ((bit<8>)Kind.HIGH) &&& 0x0F : mask_hit(1);
            Kind.OTHER &&& 8w0xF0 : mask_hit(2);
        }
    }
    table by_range {
        key = { hdr.h.kind : range; }
        actions = { range_hit; }
        default_action = range_hit(0xFF);
        const entries = {
            Kind.LOW .. 8w0x3F : range_hit(1);
        }
    }
    apply {
        by_mask.apply();
        by_range.apply();
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
