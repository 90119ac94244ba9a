// Tuples: variables initialised from lists, read by index, assigned whole, compared,
// passed to and returned from a function, a tuple of a header, in log_msg, and a list as
// digest data.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<16> b; int<8> c; bit<8> same; bit<8> sum; bit<16> swapped; }
header tag_t { bit<8> v; }
struct headers_t { h_t h; tag_t tag; }
struct meta_t { }
struct pair_t { bit<8> a; bit<16> b; }

tuple<bit<16>, bit<8>> swap(in tuple<bit<8>, bit<16>> t) {
    return { t[1], t[0] };
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.tag); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        tuple<bit<8>, bit<16>> t = { hdr.h.a, hdr.h.b };
        tuple<bit<8>, bit<16>> u = { 8w7, 16w0x0102 };
        tuple<int<8>, bool, tag_t> v = { hdr.h.c, hdr.h.a > 8w10, hdr.tag };
        hdr.h.same = t == u ? 8w1 : 8w0;
        if (t != u) {
            u = t;
        }
        hdr.h.sum = u[0] + (bit<8>)u[1] + (bit<8>)v[0] + (v[1] ? 8w100 : 8w0) + v[2].v;
        tuple<bit<16>, bit<8>> w = swap(t);
        hdr.h.swapped = w[0] ^ (bit<16>)w[1];
        log_msg("t={} v={}", { t, v });
        digest<pair_t>(1, { t[0], t[1] });
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.tag); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
