/* Operands and arguments are evaluated left to right: in `x OP f(x)` and `first(x, f(x))`,
 * where f writes x through an inout parameter, x is read before the call (p4c's issue2205
 * cases). Each result lands in a field of its own; f sets its argument to 0x10, returns 2. */
#include <core.p4>
#include <v1model.p4>

header data_t {
    bit<8>  a;     // a + f(a)
    bit<8>  b;     // b == f(b) ? 1 : 0
    bit<16> c;     // c ++ f(c)
    bit<8>  d;     // d - f(d), then d itself (written by the call)
    bit<8>  e;     // f(e) + e: the call runs first, so e is already 0x10
    bit<8>  g;     // first(g, f(g)): the first argument is g before the call
}
struct headers_t { data_t data; }
struct meta_t { }

bit<8> f(inout bit<8> x) {
    x = 0x10;
    return 2;
}

bit<8> first(in bit<8> p, in bit<8> q) {
    return p;
}

parser EvalParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.data);
        transition accept;
    }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control EvalIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> a = hdr.data.a;
        hdr.data.a = a + f(a);
        bit<8> b = hdr.data.b;
        hdr.data.b = b == f(b) ? 8w1 : 8w0;
        bit<8> c = hdr.data.c[7:0];
        hdr.data.c = c ++ f(c);
        hdr.data.d = hdr.data.d - f(hdr.data.d);
        bit<8> e = hdr.data.e;
        hdr.data.e = f(e) + e;
        bit<8> g = hdr.data.g;
        hdr.data.g = first(g, f(g));
        sm.egress_spec = 1;
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control EvalDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.data); } }

V1Switch(EvalParser(), NoCheck(), EvalIngress(), NoEgress(), NoCheck(), EvalDeparser()) main;
