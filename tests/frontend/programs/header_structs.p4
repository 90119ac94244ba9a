/* P4-16 allows struct-typed fields in headers: they are serialized in place, field by field.
 * The parser also looks ahead at a header and at a struct before extracting anything. */
#include <core.p4>
#include <v1model.p4>

struct pair_t { bit<4> hi; bit<4> lo; }
struct addr_t { pair_t top; bit<8> rest; }
header tagged_t { bit<8> tag; addr_t addr; bit<8> sum; }
header peek_t { bit<8> tag; bit<8> first; }
struct peek_s { bit<8> tag; bit<4> hi; bit<4> lo; }

struct headers_t { tagged_t t; }
struct meta_t { bit<8> peeked_tag; bit<4> peeked_hi; }

parser StructParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t sm) {
    state start {
        peek_t h = pkt.lookahead<peek_t>();
        peek_s s = pkt.lookahead<peek_s>();
        meta.peeked_tag = h.tag;
        meta.peeked_hi = s.hi;
        transition select(h.tag) {
            0x54: tagged;
            default: accept;
        }
    }
    state tagged { pkt.extract(hdr.t); transition accept; }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control StructIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (!hdr.t.isValid()) {
            return;
        }
        // Swap the nibbles of the nested struct, and record what the parser saw.
        pair_t p = hdr.t.addr.top;
        hdr.t.addr.top = { p.lo, p.hi };
        hdr.t.sum = hdr.t.addr.rest + (bit<8>)meta.peeked_hi + meta.peeked_tag;
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control StructDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.t); } }

V1Switch(StructParser(), NoCheck(), StructIngress(), NoEgress(), NoCheck(),
         StructDeparser()) main;
