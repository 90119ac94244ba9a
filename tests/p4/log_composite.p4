// log_msg of composite values: a header (valid and invalid), a struct holding a header,
// a bool, an int<8>, an error and a bit<100>; a header stack; a header with a varbit field;
// a tuple and a bit<256>. Both back ends write the same text ({a = 1, b = 2}; {#} for an
// invalid header); the packet goes out unchanged.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<16> b; }
header v_t { bit<8> len; varbit<32> opt; }
struct inner_t { h_t h; bool flag; int<8> n; error e; bit<100> wide; }
struct headers_t { h_t h; h_t missing; h_t[2] stack; v_t v; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.stack.next);
        bit<8> len = pkt.lookahead<bit<8>>();
        pkt.extract(hdr.v, (bit<32>)len * 8);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        inner_t s = { hdr.h, hdr.h.a > 3, -5, error.NoMatch, 100w0xFFFFFFFFFFFFFFFFFFF };
        log_msg("h={} missing={}", { hdr.h, hdr.missing });
        log_msg("s={}", { s });
        log_msg("stack={} v={}", { hdr.stack, hdr.v });
        tuple<bit<8>, int<8>, bool> t = { 1, -1, true };
        bit<256> big = (bit<256>)hdr.h.b << 200;
        log_msg("t={} big={} extra={}", { t, big });
        log_msg("fields of h: {} {}", hdr.h);
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.stack); pkt.emit(hdr.v); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
