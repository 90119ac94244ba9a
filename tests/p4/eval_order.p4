// The order in which an expression's operands and calls run: left to right, as P4-16
// says and p4c's samples (issue2205) expect: an operand left of a call with inout
// arguments, or of a table apply, is read before the call changes it; one right of it
// after; && and ?: run a call only when it decides; a list's values are taken left to
// right.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> x;    // x + inc(x)
    bit<8> y;    // inc(y) + y
    bit<8> z;    // twice(z) + bump(z)
    bit<8> g;    // g > 100 && inc(g) > 0
    bit<8> w;    // w > 5 ? inc(w) : w + 50
    bit<8> p0;   // { a, inc(a) }
    bit<8> p1;
    bit<8> q0;   // { inc(b), b }
    bit<8> q1;
    bit<8> k;    // (t.apply().hit ? 1 : 0) + k, t's action adds 16 to k
}

struct headers_t { h_t h; }
struct meta_t { }
struct pair_t { bit<8> first; bit<8> second; }

bit<8> inc(inout bit<8> v) { v = v + 1; return v; }
bit<8> twice(in bit<8> v) { return v + v; }
bit<8> bump(inout bit<8> v) { v = v + 10; return 1; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action add16() { hdr.h.k = hdr.h.k + 16; }
    table t {
        key = { hdr.h.k: exact; }
        actions = { add16; NoAction; }
        default_action = NoAction();
    }
    apply {
        hdr.h.x = hdr.h.x + inc(hdr.h.x);
        hdr.h.y = inc(hdr.h.y) + hdr.h.y;
        hdr.h.z = twice(hdr.h.z) + bump(hdr.h.z);
        if (hdr.h.g > 100 && inc(hdr.h.g) > 0) {
            hdr.h.g = hdr.h.g + 1;
        }
        hdr.h.w = hdr.h.w > 5 ? inc(hdr.h.w) : hdr.h.w + 50;
        bit<8> a = hdr.h.p0;
        pair_t p = { a, inc(a) };
        hdr.h.p0 = p.first;
        hdr.h.p1 = p.second;
        bit<8> b = hdr.h.q0;
        pair_t q = { inc(b), b };
        hdr.h.q0 = q.first;
        hdr.h.q1 = q.second;
        hdr.h.k = (t.apply().hit ? 8w1 : 8w0) + hdr.h.k;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
