"""P4Info of tables with entries in the program: `entries` give has_initial_entries;
`const entries` give has_initial_entries and is_const_table; no entries give neither."""

import p4switch

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> v; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.v = v; }
    table fixed {
        key = { hdr.h.k: exact; }
        actions = { set; NoAction; }
        const entries = { 1 : set(10); }
    }
    table seeded {
        key = { hdr.h.k: exact; }
        actions = { set; NoAction; }
        entries = { 2 : set(20); }
    }
    table empty {
        key = { hdr.h.k: exact; }
        actions = { set; NoAction; }
    }
    apply { fixed.apply(); seeded.apply(); empty.apply(); sm.egress_spec = 1; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_initial_and_const_entries_flags():
    program = p4switch.compile_source(PROGRAM, "entries.p4")
    flags = {t.preamble.name: (t.has_initial_entries, t.is_const_table)
             for t in program.p4info.tables}
    assert flags == {"I.fixed": (True, True), "I.seeded": (True, False),
                     "I.empty": (False, False)}
    sw = p4switch.Switch(program)
    assert sw.process_packet(0, bytes([1, 0])) == [(1, bytes([1, 10]))]
    assert sw.process_packet(0, bytes([2, 0])) == [(1, bytes([2, 20]))]


def test_initial_default_action_also_for_the_implicit_noaction():
    # None of the three tables declares default_action: the default is NoAction (P4-16),
    # and P4Info says so in initial_default_action, as p4c writes it; no const default.
    program = p4switch.compile_source(PROGRAM, "entries.p4")
    no_action = next(a.preamble.id for a in program.p4info.actions
                     if a.preamble.name == "NoAction")
    for table in program.p4info.tables:
        assert table.initial_default_action.action_id == no_action, table.preamble.name
        assert not table.initial_default_action.arguments
        assert table.const_default_action_id == 0
