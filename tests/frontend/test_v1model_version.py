"""v1model.p4's V1MODEL_VERSION: the port type name PortId_t is declared by v1model only from
version 20200408 on; by default (20180101, as with p4c) a program may declare it itself."""

import pytest

from p4switch.frontend import CompileError
from p4switch.frontend.driver import load_text

USES_V1MODEL_PORT_TYPE = """
#include <v1model.p4>
struct h_t { }
struct m_t { PortId_t port; }
parser P(packet_in pkt, out h_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control C(inout h_t hdr, inout m_t meta) { apply { } }
control I(inout h_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { meta.port = sm.ingress_port; sm.egress_spec = meta.port; }
}
control D(packet_out pkt, in h_t hdr) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""

DECLARES_ITS_OWN = "typedef bit<9> PortId_t;\n" + USES_V1MODEL_PORT_TYPE.replace(
    "#include <v1model.p4>", "")


def ingress_port_width(program):
    standard_metadata = program.find("standard_metadata_t")
    field = next(f for f in standard_metadata.fields if f.name == "ingress_port")
    return field.type.width


def test_default_version_leaves_port_type_to_the_program():
    program = load_text("#include <v1model.p4>\n" + DECLARES_ITS_OWN, "own.p4")
    assert ingress_port_width(program) == 9


def test_default_version_declares_no_port_type():
    with pytest.raises(CompileError, match="PortId_t"):
        load_text(USES_V1MODEL_PORT_TYPE, "uses.p4")


def test_version_20200408_declares_port_type():
    program = load_text(USES_V1MODEL_PORT_TYPE, "uses.p4", defines={"V1MODEL_VERSION": "20200408"})
    assert ingress_port_width(program) == 9
    with pytest.raises(CompileError, match="'PortId_t' is already declared"):
        load_text("#include <v1model.p4>\n" + DECLARES_ITS_OWN, "own.p4",
                  defines={"V1MODEL_VERSION": "20200408"})
