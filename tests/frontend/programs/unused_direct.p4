/* A direct counter and a direct meter no table uses: p4c warns (and drops them), and P4Info
 * leaves them out. The action called directly from the apply block is in P4Info though no
 * table lists it (p4c keeps every used action), without its parameter (bound by the call). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }

parser UParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control UIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) spare_counter;
    direct_meter<bit<2>>(MeterType.packets) spare_meter;
    action bump(bit<8> by) { hdr.h.a = hdr.h.a + by; }
    action unused_action() { hdr.h.a = 0; }
    apply {
        bump(3);
        sm.egress_spec = 1;
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control UDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(UParser(), NoCheck(), UIngress(), NoEgress(), NoCheck(), UDeparser()) main;
