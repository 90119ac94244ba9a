/* P4Info details p4c writes (table-entries-ser-enum, issue3488-1): a key of a serializable
 * enum type puts the enum in type_info (the match field keeps only its width), and an
 * annotation on an entry of a table's action list is copied onto that action ref. */
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind { DATA = 1, CONTROL = 0xc0 }
enum bit<16> Unused { A = 1 }

header data_t { Kind kind; bit<8> value; }
struct headers_t { data_t data; }
struct meta_t { Unused never_a_key; }

parser KindParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.data);
        transition accept;
    }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control KindIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action to_port(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table by_kind {
        key = { hdr.data.kind : exact; }
        actions = { to_port; @note("spare") drop; }
        const entries = { Kind.CONTROL : to_port(7); }
        default_action = drop();
    }
    apply { by_kind.apply(); }
}

control NoEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control KindDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.data); } }

V1Switch(KindParser(), NoCheck(), KindIngress(), NoEgress(), NoCheck(), KindDeparser()) main;
