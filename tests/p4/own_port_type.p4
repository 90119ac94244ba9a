/* A program that names its own port type PortId_t, as programs written for the default v1model
 * version (20180101) may: v1model then declares no PortId_t of its own. The first byte of the
 * packet is the output port, given as an action parameter of that type. */
#include <core.p4>
#include <v1model.p4>

typedef bit<9> PortId_t;

header route_t {
    bit<8> dest;
    bit<8> seen_port;
}

struct headers_t { route_t route; }
struct meta_t { PortId_t chosen; }

parser RouteParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.route);
        transition accept;
    }
}

control NoChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control RouteIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action send(PortId_t port) {
        meta.chosen = port;
        sm.egress_spec = meta.chosen;
        hdr.route.seen_port = (bit<8>)sm.ingress_port;
    }
    action discard() { mark_to_drop(sm); }
    table routes {
        key = { hdr.route.dest: exact; }
        actions = { send; discard; }
        default_action = discard();
    }
    apply { routes.apply(); }
}

control RouteEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control RouteDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.route); }
}

V1Switch(RouteParser(), NoChecksum(), RouteIngress(), RouteEgress(), NoChecksum(),
         RouteDeparser()) main;
