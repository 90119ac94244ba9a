// 128-bit values: IPv6 LPM on the destination, a 128-bit action parameter, a ternary match
// on the 128-bit source, a slice of an address, and 128-bit addition with a carry across the
// middle 64-bit boundary.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header ipv6_t {
    bit<4>   version;
    bit<8>   trafficClass;
    bit<20>  flowLabel;
    bit<16>  payloadLen;
    bit<8>   nextHdr;
    bit<8>   hopLimit;
    bit<128> srcAddr;
    bit<128> dstAddr;
}
struct headers_t { ethernet_t eth; ipv6_t ipv6; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x86DD  : parse_ipv6;
            default : accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_nhop(bit<48> dmac, bit<9> port, bit<128> newSrc) {
        sm.egress_spec = port;
        hdr.eth.dst = dmac;
        hdr.ipv6.srcAddr = newSrc;
        hdr.ipv6.hopLimit = hdr.ipv6.hopLimit - 1;
    }
    action tag() {
        hdr.ipv6.flowLabel = (bit<20>)hdr.ipv6.dstAddr[127:112];
        hdr.ipv6.dstAddr = hdr.ipv6.dstAddr + 1;
        sm.egress_spec = 4;
    }
    table ipv6_lpm {
        key = { hdr.ipv6.dstAddr : lpm; }
        actions = { set_nhop; tag; drop; }
        default_action = drop();
    }
    table acl {
        key = { hdr.ipv6.srcAddr : ternary; }
        actions = { drop; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.ipv6.isValid()) {
            if (!acl.apply().hit) {
                ipv6_lpm.apply();
            }
        } else {
            drop();
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv6); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
