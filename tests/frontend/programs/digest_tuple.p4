/* digest of a list: `digest(1, {a, b})` sends a digest whose data is a tuple (no struct
 * declared for it); each call is a digest of its own, digest_0, digest_1, ... as p4c names
 * them (its P4Info; its bmv2 JSON gives each call a learn list). */
#include <core.p4>
#include <v1model.p4>

header pair_t { bit<8> a; bit<16> b; }
struct headers_t { pair_t p; }
struct meta_t { }

parser DParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control DIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.p.a == 1) {
            digest(1, {hdr.p.a, hdr.p.b});
        } else if (hdr.p.a == 2) {
            digest(1, {hdr.p.a + 10, hdr.p.b + 1});
        }
        sm.egress_spec = 1;
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control DDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(DParser(), NoCheck(), DIngress(), NoEgress(), NoCheck(), DDeparser()) main;
