/* Action selector built in a table property, header unions and their stacks, lastIndex. */
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
header u1_t { bit<8> x; }
header u2_t { bit<16> y; }
header_union u_t { u1_t u1; u2_t u2; }
struct H { h_t h; h_t[3] hs; u_t[2] us; }
struct M { bit<14> sel; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.hs.next);
        transition select(hdr.hs.lastIndex) { 2: next; default: start; }
    }
    state next {
        pk.extract(hdr.us[0].u1);
        pk.extract(hdr.h);
        transition select(hdr.h.a) { 0: accept; }
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set(bit<9> p) { sm.egress_spec = p; }
    table t {
        key = { hdr.h.a : exact; hdr.h.b : selector; }
        actions = { set; }
        implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);
    }
    apply {
        t.apply();
        if (hdr.us[0].isValid() && hdr.us[0].u1.isValid()) { hdr.us[1].u2.setValid(); }
        hdr.hs[1] = hdr.hs[0];
        hdr.hs.push_front(2);
        m.sel = (bit<14>)hdr.hs.size;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out p, in H hdr) { apply { p.emit(hdr.hs); p.emit(hdr.us); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
