// Values over 128 bits: bit<256> and int<200> arithmetic wraps, shifts (constant and
// variable amounts, past the width), division, signed and unsigned comparisons,
// slices, slice assignment, concatenation, casts both ways and saturating arithmetic.
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<256> a;
    bit<256> b;
    int<200> c;
    int<200> d;
    bit<16>  s;
}

header out_t {
    bit<256> add;
    bit<256> sub;
    bit<256> mul;
    bit<256> div;
    bit<256> mod;
    bit<256> logic;     // (a & b) ^ (~a | b)
    bit<256> shl;       // a << s
    bit<256> shr;       // a >> s
    bit<256> shl_c;     // a << 200
    int<200> sadd;
    int<200> smul;
    int<200> ssubv;     // c - d
    int<200> sshl;      // c << s
    int<200> sshr;      // c >> s
    int<200> neg;
    bit<8>   flags;     // a < b, a == b, c < d, c >= d, a[255:255] != 0, c > 0, ...
    bit<64>  lo;        // a[63:0]
    bit<100> mid;       // a[227:128]
    bit<130> hi;        // b[255:126]
    bit<256> cat;       // a[127:0] ++ b[127:0]
    bit<256> up;        // (bit<256>)s
    int<200> sext;      // (int<200>)(int<16>)s
    bit<16>  down;      // (bit<16>)a
    bit<128> down128;   // (bit<128>)c
    bit<256> usat;      // a |+| b
    bit<256> usub;      // a |-| b
    int<200> ssat;      // c |+| d
    int<200> ssub;      // c |-| d
    bit<256> patched;   // a with bits 199..72 set from b[127:0]
    bit<2>   pad;
}

struct headers_t { in_t i; out_t o; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.i); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<256> a = hdr.i.a;
        bit<256> b = hdr.i.b;
        int<200> c = hdr.i.c;
        int<200> d = hdr.i.d;
        hdr.o.setValid();
        hdr.o.add = a + b;
        hdr.o.sub = a - b;
        hdr.o.mul = a * b;
        hdr.o.div = a / b;
        hdr.o.mod = a % b;
        hdr.o.logic = (a & b) ^ (~a | b);
        hdr.o.shl = a << hdr.i.s;
        hdr.o.shr = a >> hdr.i.s;
        hdr.o.shl_c = a << 200;
        hdr.o.sadd = c + d;
        hdr.o.smul = c * d;
        hdr.o.ssubv = c - d;
        hdr.o.sshl = c << hdr.i.s;
        hdr.o.sshr = c >> hdr.i.s;
        hdr.o.neg = -c;
        bit<8> f = 0;
        if (a < b) { f = f | 1; }
        if (a == b) { f = f | 2; }
        if (c < d) { f = f | 4; }
        if (c >= d) { f = f | 8; }
        if (a[255:255] != 0) { f = f | 16; }
        if (c > 0) { f = f | 32; }
        if (a != b && b > 256w1) { f = f | 64; }
        if (d <= -1) { f = f | 128; }
        hdr.o.flags = f;
        hdr.o.lo = a[63:0];
        hdr.o.mid = a[227:128];
        hdr.o.hi = b[255:126];
        hdr.o.cat = a[127:0] ++ b[127:0];
        hdr.o.up = (bit<256>)hdr.i.s;
        hdr.o.sext = (int<200>)(int<16>)hdr.i.s;
        hdr.o.down = (bit<16>)a;
        hdr.o.down128 = (bit<128>)(bit<200>)c;
        hdr.o.usat = a |+| b;
        hdr.o.usub = a |-| b;
        hdr.o.ssat = c |+| d;
        hdr.o.ssub = c |-| d;
        hdr.o.patched = a;
        hdr.o.patched[199:72] = b[127:0];
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.i); pkt.emit(hdr.o); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
