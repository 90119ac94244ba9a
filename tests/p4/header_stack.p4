// Header stacks: parsing with next/last in a loop, push_front, pop_front, setValid.
#include <core.p4>
#include <v1model.p4>

header e_t {
    bit<1> bos;
    bit<7> v;
}

struct headers_t { e_t[4] s; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.s.next);
        transition select(hdr.s.last.bos) {
            1       : accept;
            default : start;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.s[0].v == 0x7F) {
            hdr.s.pop_front(1);
        } else {
            hdr.s.push_front(1);
            hdr.s[0].setValid();
            hdr.s[0].bos = 0;
            hdr.s[0].v = 0x55;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.s); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
