"""v1model.p4's V1MODEL_VERSION: the port type name PortId_t, and counter<I>, meter<I> and
register<T, I>, are declared by v1model only from version 20200408 on; by default (20180101,
as with p4c) a program may declare PortId_t itself and counter, meter and register<T> take a
bit<32> index."""

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


# counter, meter and register: generic in their index type (counter<I>, meter<I>,
# register<T, I>) only from version 20200408; before it they take a bit<32> index.
INDEXED_EXTERNS = """
#include <v1model.p4>
header h_t { bit<8> i; bit<8> v; }
struct h_s { h_t h; }
struct m_t { bit<2> colour; }
parser P(packet_in pkt, out h_s hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout h_s hdr, inout m_t meta) { apply { } }
control I(inout h_s hdr, inout m_t meta, inout standard_metadata_t sm) {
    DECLARATIONS
    apply { USES }
}
control D(packet_out pkt, in h_s hdr) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""

OLD_FORM = (
    "register<bit<8>>(4) r; counter(4, CounterType.packets) c; meter(4, MeterType.packets) m;",
    "bit<8> x; r.read(x, (bit<32>)hdr.h.i); r.write((bit<32>)hdr.h.i, x); "
    "c.count((bit<32>)hdr.h.i); m.execute_meter((bit<32>)hdr.h.i, meta.colour);")

NEW_FORM = (
    "register<bit<8>, bit<8>>(4) r; counter<bit<8>>(4, CounterType.packets) c; "
    "meter<bit<8>>(4, MeterType.packets) m;",
    "bit<8> x; r.read(x, hdr.h.i); r.write(hdr.h.i, x); "
    "c.count(hdr.h.i); m.execute_meter(hdr.h.i, meta.colour);")

NEW_VERSION = {"V1MODEL_VERSION": "20200408"}


def indexed_program(form, declarations=None):
    return INDEXED_EXTERNS.replace("DECLARATIONS", declarations or form[0]).replace("USES", form[1])


def index_types(program):
    """Extern name -> the type of the index parameter of its indexing method."""
    result = {}
    for name, method in (("register", "write"), ("counter", "count"), ("meter", "execute_meter")):
        decl = program.find(name)
        [m] = [d for d in decl.methods if d.name == method]
        result[name] = str(m.params[0].type)
    return result


def test_default_version_has_the_old_form_indexed_by_bit32():
    program = load_text(indexed_program(OLD_FORM), "old.p4")
    assert index_types(program) == {"register": "bit<32>", "counter": "bit<32>", "meter": "bit<32>"}


@pytest.mark.parametrize("declaration, generic", [
    ("register<bit<8>, bit<8>>(4) r;", "register<T, I>"),
    ("counter<bit<8>>(4, CounterType.packets) c;", "counter<I>"),
    ("meter<bit<8>>(4, MeterType.packets) m;", "meter<I>"),
])
def test_default_version_refuses_the_generic_form_naming_V1MODEL_VERSION(declaration, generic):
    with pytest.raises(CompileError) as info:
        load_text(INDEXED_EXTERNS.replace("DECLARATIONS", declaration).replace("USES", ""), "new.p4")
    message = str(info.value)
    assert message.startswith("new.p4:11:5: ")
    assert (f"v1model.p4 declares {generic} only from V1MODEL_VERSION 20200408 on "
            "(this program has 20180101): #define V1MODEL_VERSION 20200408 before "
            "#include <v1model.p4>") in message
    assert "\n" not in message


def test_default_version_refuses_an_index_narrower_than_bit32():
    with pytest.raises(CompileError, match="argument 'index' of 'register.read' has type bit<8>, "
                                           "expected bit<32>"):
        load_text(indexed_program(OLD_FORM).replace("(bit<32>)hdr.h.i", "hdr.h.i"), "old.p4")


def test_version_20200408_has_the_generic_form_indexed_by_its_type_argument():
    program = load_text(indexed_program(NEW_FORM), "new.p4", defines=NEW_VERSION)
    assert index_types(program) == {"register": "I", "counter": "I", "meter": "I"}
    text = "#define V1MODEL_VERSION 20200408\n" + indexed_program(NEW_FORM)
    assert load_text(text, "new.p4").pipeline.registers[0].element_width == 8


def test_version_20200408_indexes_by_the_type_argument_not_bit32():
    """counter<bit<8>> counts with a bit<8> index; a bit<32> one does not fit it."""
    with pytest.raises(CompileError, match="argument 'index' of 'counter.count' has type bit<32>, "
                                           "expected bit<8>"):
        load_text(indexed_program(NEW_FORM).replace("c.count(hdr.h.i)", "c.count((bit<32>)hdr.h.i)"),
                  "new.p4", defines=NEW_VERSION)
