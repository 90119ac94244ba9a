/* A table keyed on a value of type error (p4c's issue1062 construct): the parser's outcome
 * picks the action. Const entries name errors; the control plane matches an error by its
 * 32-bit code (NoError 0, PacketTooShort 1, as core.p4 declares them, then the program's). */
#include <core.p4>
#include <v1model.p4>

error { BadKind }

header data_t { bit<8> kind; bit<8> value; bit<8> tag; }
struct headers_t { data_t data; }
struct meta_t { error err; }

parser ErrParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.data);
        verify(hdr.data.kind != 0xff, error.BadKind);
        transition accept;
    }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control ErrIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action to_port(bit<9> port) { sm.egress_spec = port; }
    action mark(bit<8> tag) {
        hdr.data.setValid();
        hdr.data.tag = tag;
        sm.egress_spec = 3;
    }
    table by_error {
        key = { meta.err : exact; }
        actions = { to_port; mark; }
        const default_action = to_port(9);
    }
    table by_error_const {
        key = { meta.err : exact; }
        actions = { to_port; mark; }
        const entries = {
            error.BadKind : mark(0xbd);
            error.PacketTooShort : mark(0x51);
        }
        default_action = to_port(1);
    }
    apply {
        meta.err = sm.parser_error;
        if (!by_error.apply().hit) {
            by_error_const.apply();
        }
    }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control ErrDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.data); } }

V1Switch(ErrParser(), NoCheck(), ErrIngress(), NoEgress(), NoCheck(), ErrDeparser()) main;
