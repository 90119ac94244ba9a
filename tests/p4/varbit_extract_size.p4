// extract(h, n) of a varbit header: n must be whole bytes (ParserInvalidArgument), available
// (PacketTooShort) and at most the field's maximum (HeaderTooShort), checked in that order
// as bmv2 does; the ingress writes the parser error it sees into the length byte's place.
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> bits; }
header opt_t { varbit<24> data; }
struct headers_t { len_t len; opt_t opt; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)hdr.len.bits);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.ParserInvalidArgument) { hdr.len.bits = 0xA1; }
        else if (sm.parser_error == error.HeaderTooShort) { hdr.len.bits = 0xA2; }
        else if (sm.parser_error == error.PacketTooShort) { hdr.len.bits = 0xA3; }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.len); pkt.emit(hdr.opt); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
