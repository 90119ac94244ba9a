// An action selector bmv2 can run (named, so that p4c's P4Info can name it): a route points at
// a group of next hops, the selector picks one per flow by crc16 of the flow's addresses,
// protocol and ports modulo the group's size (members in the order the group lists them), or
// at one member. A miss runs no action: bmv2 gives a table with an action profile no default
// entry (p4c warns "Target does not support default_action ... (due to action profiles)"),
// so the declared drop() does not run and the packet leaves on port 0 unchanged.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> totalLen; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> protocol; bit<16> checksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header ports_t { bit<16> srcPort; bit<16> dstPort; }
struct headers_t { ethernet_t eth; ipv4_t ipv4; ports_t l4; }
struct meta_t { }

parser EcmpParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 6: l4; 17: l4; default: accept; }
    }
    state l4 { pkt.extract(hdr.l4); transition accept; }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control EcmpIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action next_hop(bit<48> mac, bit<9> port) {
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        sm.egress_spec = port;
    }
    table routes {
        key = {
            hdr.ipv4.dstAddr: lpm;
            hdr.ipv4.srcAddr: selector;
            hdr.ipv4.dstAddr: selector;
            hdr.ipv4.protocol: selector;
            hdr.l4.srcPort: selector;
            hdr.l4.dstPort: selector;
        }
        actions = { next_hop; drop; }
        default_action = drop();
        @name("next_hops") implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w16);
    }
    apply {
        // the selector hashes the ports: only with the l4 header valid (an invalid header's
        // fields are unspecified; bmv2 would hash what an earlier packet left there)
        if (hdr.l4.isValid()) {
            routes.apply();
        } else {
            drop();
        }
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control EcmpDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv4); pkt.emit(hdr.l4); }
}

V1Switch(EcmpParser(), NoCheck(), EcmpIngress(), NoEgress(), NoCheck(), EcmpDeparser()) main;
