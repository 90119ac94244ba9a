// A sub-parser applied from a parser state: its out header by reference (reset first), an
// inout scalar copied back when it accepts and also when it rejects (as on bmv2), a verify()
// error and an explicit reject inside it ending the whole parse.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; }
struct headers_t { eth_t eth; ip_t ip; }
struct meta_t { bit<8> seen; }

parser IpParser(packet_in pkt, out ip_t ip, inout bit<8> seen) {
    state start {
        pkt.extract(ip);
        verify(ip.ihl == 5, error.HeaderTooShort);
        seen = seen + 1;
        transition select(ip.version) {
            4       : accept;
            default : reject;
        }
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    IpParser() ipp;
    state start {
        pkt.extract(hdr.eth);
        meta.seen = 10;
        transition select(hdr.eth.type) {
            0x0800  : ip;
            default : accept;
        }
    }
    state ip {
        ipp.apply(pkt, hdr.ip, meta.seen);
        meta.seen = meta.seen + 100;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            sm.egress_spec = 1;
        } else if (sm.parser_error == error.HeaderTooShort) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }
        hdr.eth.src = (bit<48>)meta.seen;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ip); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
