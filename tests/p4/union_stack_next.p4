// A stack of header unions filled through `next`: extract(us.next.a) puts member a of the
// element at nextIndex and advances nextIndex, so two extracts fill elements 0 and 1.
// tag.kinds bit i says whether element i carries the 16-bit member b (else the 8-bit a).
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> kinds; }
header a_t { bit<8> v; }
header b_t { bit<16> v; }
header_union ab_t {
    a_t a;
    b_t b;
}

struct headers_t {
    tag_t   tag;
    ab_t[2] ab;
}
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.kinds) {
            0: a_a;
            1: b_a;
            2: a_b;
            3: b_b;
            default: accept;
        }
    }
    state a_a { pkt.extract(hdr.ab.next.a); pkt.extract(hdr.ab.next.a); transition accept; }
    state b_a { pkt.extract(hdr.ab.next.b); pkt.extract(hdr.ab.next.a); transition accept; }
    state a_b { pkt.extract(hdr.ab.next.a); pkt.extract(hdr.ab.next.b); transition accept; }
    state b_b { pkt.extract(hdr.ab.next.b); pkt.extract(hdr.ab.next.b); transition accept; }
}

control C(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        // element i's member gets i + 1 added, so the output shows where each one landed
        if (hdr.ab[0].a.isValid()) { hdr.ab[0].a.v = hdr.ab[0].a.v + 1; }
        if (hdr.ab[0].b.isValid()) { hdr.ab[0].b.v = hdr.ab[0].b.v + 1; }
        if (hdr.ab[1].a.isValid()) { hdr.ab[1].a.v = hdr.ab[1].a.v + 2; }
        if (hdr.ab[1].b.isValid()) { hdr.ab[1].b.v = hdr.ab[1].b.v + 2; }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), C(), I(), E(), C(), D()) main;
