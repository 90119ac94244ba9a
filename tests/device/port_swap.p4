/* A two-port wire for the impairment tests: every frame of EtherType 0x88B5 (the tests' own)
 * received on port 1 leaves on port 2 unchanged, and the other way round; other frames are
 * dropped, so that stray traffic never reaches the tx impairments the tests count. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser WireParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control WireIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.ethernet.etherType != 0x88B5) {
            mark_to_drop(standard_metadata);
        } else if (standard_metadata.ingress_port == 1) {
            standard_metadata.egress_spec = 2;
        } else if (standard_metadata.ingress_port == 2) {
            standard_metadata.egress_spec = 1;
        } else {
            mark_to_drop(standard_metadata);
        }
    }
}

control WireEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) { apply { } }

control NoChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

control WireDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); }
}

V1Switch(WireParser(), NoVerify(), WireIngress(), WireEgress(), NoChecksum(),
         WireDeparser()) main;
