/* Top-level actions with directional parameters bound in the actions list, sub-control apply. */
#include <core.p4>
#include <v1model.p4>
#undef FOO
#define IS_X(m) (m.instance_type == 6)
header h_t { bit<32> a; bit<8> b; }
struct H { h_t h; }
struct M { bit<32> p; }
action my_drop(inout standard_metadata_t smeta) { mark_to_drop(smeta); }
parser Pr(packet_in packet, out H hdr, inout M meta, inout standard_metadata_t sm) {
    const bit<16> ET = 16w0x0800;
    state start { packet.extract(hdr.h); transition select(hdr.h.b) { 1: accept; default: reject; } }
}
control fill(out bit<32> addr, in bit<8> b0, in bit<8> b1, in bit<8> b2, in bit<8> b3) {
    apply { addr = b0 ++ b1 ++ b2 ++ b3; }
}
control ing(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata) {
    fill() f;
    const bit<32> K = 0xe50b;
    action do_resubmit(bit<32> x) { hdr.h.a = x; resubmit({}); clone3(CloneType.I2E, 5, {}); }
    action set_out (bit<24> bd) { }
    table t {
        key = { hdr.h.a: lpm; }
        actions = { do_resubmit; set_out; my_drop(standard_metadata); }
        default_action = my_drop(standard_metadata);
    }
    apply {
        if (IS_X(standard_metadata)) {
            f.apply(hdr.h.a, 10, 252, 129, 2);
            meta.p = K;
        } else if (hdr.h.b != 0) {
            t.apply();
        } else {
            recirculate({});
        }
    }
}
control eg(inout H hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control vc(inout H hdr, inout M meta) { apply { } }
control dp(packet_out packet, in H hdr) { apply { packet.emit(hdr.h); } }
V1Switch(Pr(), vc(), ing(), eg(), vc(), dp()) main;
