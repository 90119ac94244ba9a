"""P4Info lists the actions a control calls directly as p4c does: an action called from the
apply block is listed, one called only from another action's body is not (p4c inlines it
into its caller), and one called from both places is listed once."""

import p4switch

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action inner(inout bit<8> v) { v = v + 1; }
    action outer() { inner(hdr.h.a); inner(hdr.h.a); }
    action shared(inout bit<8> v) { v = v + 16; }
    action both() { shared(hdr.h.b); }
    apply {
        outer();
        both();
        shared(hdr.h.b);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_actions_called_only_from_actions_are_not_listed():
    program = p4switch.compile_source(PROGRAM, "called.p4")
    assert sorted(a.preamble.name for a in program.p4info.actions) == [
        "I.both", "I.outer", "I.shared"]


def test_the_callee_still_runs():
    program = p4switch.compile_source(PROGRAM, "called.p4")
    # outer adds 2 to a; both and the direct call add 16 each to b
    assert p4switch.Switch(program).process_packet(0, bytes([1, 1])) == [(1, bytes([3, 33]))]
