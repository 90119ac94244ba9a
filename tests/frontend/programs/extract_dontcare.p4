/* extract<H>(_): the parser skips a header it does not keep (its bits are consumed, a packet
 * too short for it still ends in PacketTooShort), then extracts the next one. */
#include <core.p4>
#include <v1model.p4>

header skip_t { bit<16> junk; }
header data_t { bit<8> kind; bit<8> value; }
struct headers_t { data_t data; }
struct meta_t { }

parser SkipParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract<skip_t>(_);
        pkt.extract(hdr.data);
        transition accept;
    }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control SkipIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            mark_to_drop(sm);
            return;
        }
        hdr.data.value = hdr.data.value + 1;
        sm.egress_spec = 2;
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control SkipDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.data); } }

V1Switch(SkipParser(), NoCheck(), SkipIngress(), NoEgress(), NoCheck(), SkipDeparser()) main;
