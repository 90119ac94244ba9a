/* P4-16 1.2.5 loops, list<T>, explicit package type arguments, compound assignment with a side-effecting index. */
#include <core.p4>
#define V1MODEL_VERSION 20180101
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header word_t { bit<32> x; }
struct metadata_t { }
struct headers_t { ethernet_t ethernet; word_t[8] rest; }
parser parserImpl(packet_in packet, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t stdmeta) {
    state start { packet.extract<ethernet_t>(hdr.ethernet); transition accept; }
}
bit<8> postincr(inout bit<8> x) {
    bit<8> rv = x;
    x += 1;
    return rv;
}
control ingressImpl(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t stdmeta) {
    @name("ingressImpl.n") bit<8> n_0;
    @name("ingressImpl.i") bit<8> i_0;
    apply {
        n_0 = 8w0;
        for (@name("ingressImpl.i") bit<8> i_1 in (list<bit<8>>){8w1,8w2,8w4,8w8,8w16}) {
            n_0 = n_0 + i_1;
        }
        for (i_0 = 8w0; i_0 < 8w8; i_0 = i_0 + 8w1) {
            n_0 = n_0 + 8w1;
            if (n_0 == 3) { break; } else { continue; }
        }
        hdr.ethernet.srcAddr[7:0] = n_0;
        hdr.rest[postincr(n_0) & 7].x |= 5;
        stdmeta.egress_spec = 9w1;
    }
}
control egressImpl(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t stdmeta) { apply { } }
control deparserImpl(packet_out packet, in headers_t hdr) { apply { packet.emit<ethernet_t>(hdr.ethernet); } }
control verifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
V1Switch<headers_t, metadata_t>(parserImpl(), verifyChecksum(), ingressImpl(), egressImpl(), verifyChecksum(), deparserImpl()) main;
