// varbit: a variable-length field extracted with a length computed from an earlier field.
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> len; }
header opt_t { varbit<32> data; }
header tail_t { bit<8> t; }

struct headers_t { len_t l; opt_t o; tail_t tail; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.l);
        pkt.extract(hdr.o, (bit<32>)hdr.l.len << 3);
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.tail.t = hdr.tail.t + 1;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.l); pkt.emit(hdr.o); pkt.emit(hdr.tail); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
