// One table per match kind (exact, lpm, ternary with priorities, range, optional) and a
// table with a two-field key; each hit writes its action parameter into an output byte.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  e;
    bit<32> ip;
    bit<8>  t;
    bit<16> r;
    bit<8>  o;
    bit<8>  out_e;
    bit<8>  out_l;
    bit<8>  out_t;
    bit<8>  out_r;
    bit<8>  out_o;
    bit<8>  out_m;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_e(bit<8> v) { hdr.h.out_e = v; }
    action set_l(bit<8> v) { hdr.h.out_l = v; }
    action set_t(bit<8> v) { hdr.h.out_t = v; }
    action set_r(bit<8> v) { hdr.h.out_r = v; }
    action set_o(bit<8> v) { hdr.h.out_o = v; }
    action set_m(bit<8> v) { hdr.h.out_m = v; }

    table t_exact   { key = { hdr.h.e : exact; }    actions = { set_e; NoAction; } default_action = NoAction(); }
    table t_lpm     { key = { hdr.h.ip : lpm; }     actions = { set_l; NoAction; } default_action = NoAction(); }
    table t_ternary { key = { hdr.h.t : ternary; }  actions = { set_t; NoAction; } default_action = NoAction(); }
    table t_range   { key = { hdr.h.r : range; }    actions = { set_r; NoAction; } default_action = NoAction(); }
    table t_opt     { key = { hdr.h.o : optional; } actions = { set_o; NoAction; } default_action = NoAction(); }
    table t_multi {
        key = { hdr.h.e : exact; hdr.h.t : ternary; hdr.h.isValid() : exact; }
        actions = { set_m; NoAction; }
        default_action = NoAction();
    }

    apply {
        t_exact.apply();
        t_lpm.apply();
        t_ternary.apply();
        t_range.apply();
        t_opt.apply();
        t_multi.apply();
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
