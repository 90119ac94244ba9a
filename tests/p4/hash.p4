// hash() with each algorithm over a 28-bit field list (not byte aligned: packed MSB first,
// zero-padded at the end), and base + (hash mod max).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a;
    bit<8>  b;
    bit<4>  c;
    bit<4>  d;
    bit<16> crc16;
    bit<32> crc32;
    bit<16> csum;
    bit<16> xor;
    bit<32> ident;
    bit<16> based;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hash(hdr.h.crc16, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w0x10000);
        hash(hdr.h.crc32, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 64w0x100000000);
        hash(hdr.h.csum, HashAlgorithm.csum16, 16w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w0x10000);
        hash(hdr.h.xor, HashAlgorithm.xor16, 16w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w0x10000);
        hash(hdr.h.ident, HashAlgorithm.identity, 32w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 64w0x100000000);
        hash(hdr.h.based, HashAlgorithm.crc16, 16w100, { hdr.h.a, hdr.h.b, hdr.h.c }, 16w1000);
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
