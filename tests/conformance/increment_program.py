"""A v1model program that copies its one byte to port 0 after adding 1 to it: the smallest
sample that passes (tests/conformance, tests/bmv2)."""

INCREMENT_P4 = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; }
struct H { h_t h; }
struct M {}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { hdr.h.x = hdr.h.x + 1; sm.egress_spec = 0; }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control CC(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
