/* Registers in the forms v1model 20200408 allows: a struct value type (cells hold the
 * struct's bits), an index type named by a typedef (Index_t), and the one-type-argument
 * register<T> whose index type defaults to bit<32>. */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

typedef bit<4> Index_t;
struct stats_t { bit<8> packets; bit<8> last; }
header req_t { bit<8> slot; bit<8> value; bit<8> packets; bit<8> last; bit<8> total; }
struct headers_t { req_t req; }
struct meta_t { }

parser RegParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.req); transition accept; }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control RegIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<stats_t, Index_t>(16) stats;
    register<bit<8>>(4) totals;
    apply {
        Index_t i = (Index_t)hdr.req.slot;
        stats_t s;
        stats.read(s, i);
        s.packets = s.packets + 1;
        s.last = hdr.req.value;
        stats.write(i, s);
        bit<8> t;
        totals.read(t, (bit<32>)hdr.req.slot);
        t = t + hdr.req.value;
        totals.write((bit<32>)hdr.req.slot, t);
        hdr.req.packets = s.packets;
        hdr.req.last = s.last;
        hdr.req.total = t;
        sm.egress_spec = 1;
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control RegDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.req); } }

V1Switch(RegParser(), NoCheck(), RegIngress(), NoEgress(), NoCheck(), RegDeparser()) main;
