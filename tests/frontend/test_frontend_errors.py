"""Compile errors: exact `FILE:LINE:COL: message` for the mistakes users make."""

import os

import pytest

from p4switch.frontend import CompileError, load, load_source

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")

PRELUDE = """#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct M { bit<8> x; }
"""


def error_of(body: str, filename="e.p4", **kw) -> str:
    with pytest.raises(CompileError) as info:
        load_source(PRELUDE + body, filename, **kw)
    return str(info.value)


def test_undeclared_name():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { m.x = y; }
}""") == "e.p4:6:19: 'y' is not declared"


def test_width_mismatch_in_assignment():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { hdr.h.a = hdr.h.b; }
}""") == "e.p4:6:23: cannot assign a value of type bit<16> to 'hdr.h.a' of type bit<8>"


def test_width_mismatch_in_operator():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { m.x = hdr.h.a + hdr.h.b; }
}""") == "e.p4:6:19: '+' on values of different widths: bit<8> and bit<16>"


def test_wrong_argument_count_for_action():
    assert error_of("""control C(inout H hdr, inout M m) {
    action set(bit<8> v) { m.x = v; }
    apply { set(1, 2); }
}""") == "e.p4:7:13: 'set' expects 1 argument, got 2"


def test_wrong_argument_count_for_extern_overloads():
    assert error_of("""control C(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { mark_to_drop(sm, sm); }
}""") == "e.p4:6:13: 'mark_to_drop' expects 0 or 1 arguments, got 2"


def test_argument_type_mismatch():
    assert error_of("""control C(inout H hdr, inout M m) {
    action set(bit<8> v) { m.x = v; }
    apply { set(hdr.h.b); }
}""") == "e.p4:7:17: argument 'v' of 'set' has type bit<16>, expected bit<8>"


def test_assign_to_in_parameter():
    assert error_of("""control C(in H hdr, inout M m) {
    apply { hdr.h.a = 1; }
}""") == "e.p4:6:13: cannot assign to 'hdr.h.a': parameter 'hdr' is read-only (in)"


def test_unknown_field():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { m.x = hdr.h.c; }
}""") == "e.p4:6:19: h_t has no field 'c'"


def test_bad_include():
    with pytest.raises(CompileError) as info:
        load_source('#include <v1model.p4>\n  #include "missing.p4"\n', "inc.p4")
    assert str(info.value) == "inc.p4:2:12: cannot find include file 'missing.p4'"


def test_error_inside_included_file_reports_that_file(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "hdr.p4").write_text("// headers\n\nheader h_t {\n    bit<8> a;\n    foo_t b;\n}\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <v1model.p4>\n#include "sub/hdr.p4"\n')
    with pytest.raises(CompileError) as info:
        load(str(main))
    assert str(info.value) == f"{sub / 'hdr.p4'}:5:5: type 'foo_t' is not declared"


def test_include_dirs_are_searched(tmp_path):
    (tmp_path / "defs.p4").write_text("const bit<8> ANSWER = 42;\n")
    program = load_source('#include <core.p4>\n#include "defs.p4"\n#include "empty_v1switch.p4"\n',
                          "x.p4", include_dirs=[str(tmp_path), INCLUDE_DIR])
    assert program.find("ANSWER").value.const_value == 42


def test_program_without_main_is_reported_at_its_end():
    assert error_of("control C(inout H hdr, inout M m) {\n    apply { }\n}\n") == \
        "e.p4:8:1: the program has no main V1Switch instantiation (e.g. 'V1Switch(...) main;')"


def test_preprocessor_error_directive():
    with pytest.raises(CompileError) as info:
        load_source("#include <core.p4>\n#ifndef K\n#error K must be defined\n#endif\n", "pp.p4")
    assert str(info.value) == "pp.p4:3:1: #error K must be defined"


def test_syntax_error():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { m.x = 1 }
}""") == "e.p4:6:21: syntax error: expected ';', found '}'"


def test_syntax_error_unexpected_token_in_expression():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { m.x = (1 + ; }
}""") == "e.p4:6:24: syntax error: expected an expression, found ';'"


def test_unsupported_construct_is_named():
    assert error_of("""control C(inout H hdr, inout M m) { apply { } }
package Other(C c);
Other(C()) main;
""") == "e.p4:7:1: unsupported: package Other is not supported by p4switch (only v1model's V1Switch)"


def test_unsupported_abstract_method_implementation():
    assert error_of("""extern Thing {
    Thing();
    abstract bit<8> pick(in bit<8> x);
}
control C(inout H hdr, inout M m) {
    Thing() t = { bit<8> pick(in bit<8> x) { return x; } };
    apply { }
}""") == "e.p4:10:5: unsupported: abstract method implementation in instance 't' is not supported by p4switch"


def test_missing_start_state():
    assert error_of("""parser P(packet_in p, out H hdr) {
    state begin { transition accept; }
}""") == "e.p4:5:1: parser P has no 'start' state"


def test_transition_to_unknown_state():
    assert error_of("""parser P(packet_in p, out H hdr) {
    state start { transition parse_x; }
}""") == "e.p4:6:30: state 'parse_x' is not declared in parser P"


def test_int_without_width_in_generic_argument():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { hash(m.x, HashAlgorithm.crc16, 0, { hdr.h.a }, 8w255); }
}""") == ("e.p4:6:44: cannot infer the width of argument 'base' of 'hash'; "
          "give it a width, e.g. (bit<32>)0")


def test_default_action_must_be_listed():
    assert error_of("""control C(inout H hdr, inout M m) {
    action a() { }
    action b() { }
    table t { key = { hdr.h.a : exact; } actions = { a; } default_action = b(); }
    apply { t.apply(); }
}""") == "e.p4:8:76: default action 'b' is not in the actions of table t"


def test_unknown_match_kind():
    assert error_of("""control C(inout H hdr, inout M m) {
    action a() { }
    table t { key = { hdr.h.a : fuzzy; } actions = { a; } }
    apply { t.apply(); }
}""") == "e.p4:7:33: unknown match kind 'fuzzy'"


def test_slice_out_of_range():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { m.x = hdr.h.b[16:9]; }
}""") == "e.p4:6:19: slice [16:9] is out of range for bit<16>"


def test_non_constant_table_entry_key():
    assert error_of("""control C(inout H hdr, inout M m) {
    action a() { }
    table t { key = { hdr.h.a : exact; } actions = { a; } const entries = { m.x : a(); } }
    apply { t.apply(); }
}""") == "e.p4:7:77: a keyset value must be a compile-time constant"


def test_break_outside_loop():
    assert error_of("""control C(inout H hdr, inout M m) {
    apply { break; }
}""") == "e.p4:6:13: break outside a loop"


def test_unreadable_file():
    with pytest.raises(CompileError) as info:
        load(os.path.join("no", "such", "file.p4"))
    assert "no/such/file.p4: cannot read" in str(info.value)


@pytest.mark.parametrize("body, message", [
    ("control C(inout H hdr, inout M m) { action a() {} action a() {} apply { } }",
     "e.p4:5:51: 'a' is already declared"),
    ("control C(inout H hdr, inout M m) { apply { m.x = (bit<8>)hdr.h; } }",
     "e.p4:5:51: cannot cast a value of type h_t to bit<8>"),
    ("control C(inout H hdr, inout M m) { apply { hdr.h = { a = 1 }; } }",
     "e.p4:5:53: missing field 'b' of h_t"),
    ("control C(inout H hdr, inout M m) { apply { m.x = {#}; } }",
     "e.p4:5:51: '{#}' needs a header type from its context"),
    ("control C(inout H hdr, inout M m) { action a() {} table t { actions = { a; } } "
     "action b() { t.apply(); } apply { } }",
     "e.p4:5:93: tables can only be applied in a control's apply block"),
    ("action a() {} parser P(packet_in p, out H hdr) { state start { a(); transition accept; } }",
     "e.p4:5:64: actions cannot be called from a parser"),
    ("control C(inout H hdr, inout M m) { apply { if (m.x) { } } }",
     "e.p4:5:49: if condition must be bool, not bit<8>"),
    ("parser P(packet_in p, out H hdr) { state start { p.extract(hdr); transition accept; } }",
     "e.p4:5:60: extract needs a header, not H"),
    ("control C(inout H hdr, inout M m) { apply { foo_t x; } }",
     "e.p4:5:45: type 'foo_t' is not declared"),
    ("control C(inout H hdr, inout M m) { const bit<8> K = m.x; apply { } }",
     "e.p4:5:54: initializer of constant 'K' must be a compile-time constant"),
    ("control C(inout H hdr, inout M m) { apply { int<8> s = 1; m.x = m.x + s; } }",
     "e.p4:5:65: '+' on values of different signedness: bit<8> and int<8>"),
    ("control C(inout H hdr, inout M m) { apply { hdr.h.b = m.x ++ 1; } }",
     "e.p4:5:62: '++' needs operands with a width; '1' has none"),
    ("control C(inout H hdr, inout M m) { apply { hdr.h.setValid(); m.x = hdr.h.isValid(); } }",
     "e.p4:5:69: cannot assign a value of type bool to 'm.x' of type bit<8>"),
    ("parser P(packet_in p, out H hdr) { state start { p.extract(hdr.h); exit; } }",
     "e.p4:5:68: exit is not allowed in a parser"),
])
def test_type_errors(body, message):
    assert error_of(body) == message


@pytest.mark.parametrize("body, message", [
    ("control C(inout H hdr, inout M m) { register<bit<8>, bit<8>, bit<8>>(4) r; apply { } }",
     "e.p4:5:37: register expects 2 type arguments, got 3"),
    ("control C(inout H hdr, inout M m) { register<bit<8>, bit<32>>(4) r; apply { r.read(1, 2); } }",
     "e.p4:5:84: out argument 'result' of 'register.read' must be writable; '1' is not: it is not a variable"),
])
def test_type_errors_of_register_from_v1model_20200408(body, message):
    assert error_of(body, defines={"V1MODEL_VERSION": "20200408"}) == message


def test_damaged_programs_give_compile_errors_not_crashes():
    """Deleting or repeating a token anywhere must give a CompileError (or a valid program),
    never a Python exception from inside the front end."""
    import random
    import re
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "features.p4")
    with open(path) as f:
        source = f.read()
    spans = [m.span() for m in re.finditer(r"\w+|[^\w\s]", source)]
    rng = random.Random(7)
    outcomes = {"error": 0, "ok": 0}
    for _ in range(40):
        start, end = rng.choice(spans)
        if rng.random() < 0.5:
            damaged = source[:start] + source[end:]
        else:
            damaged = source[:start] + source[start:end] + source[start:]
        try:
            load_source(damaged, "damaged.p4")
            outcomes["ok"] += 1
        except CompileError as e:
            assert re.match(r"[^:]+\.p4:\d+:\d+: \S", str(e)), str(e)
            outcomes["error"] += 1
    assert outcomes["error"] > 20


def test_block_with_wrong_signature_in_v1switch():
    with pytest.raises(CompileError) as info:
        load_source("""#include <v1model.p4>
struct H {}
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) { state start { transition accept; } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), C(), I(), C(), D()) main;
""", "main.p4")
    assert str(info.value) == ("main.p4:8:20: argument 'ig' of 'V1Switch' has type C, expected "
                               "Ingress<H, M> (C has 2 parameters, Ingress<H, M> has 3)")


def test_block_parameter_direction_must_match_the_package():
    # p4c rejects this too ("different directions"): v1model's VerifyChecksum takes inout
    with pytest.raises(CompileError) as info:
        load_source("""#include <v1model.p4>
struct H {}
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) { state start { transition accept; } }
control V(in H h, inout M m) { apply { } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), V(), I(), I(), C(), D()) main;
""", "main.p4")
    assert str(info.value) == ("main.p4:9:15: argument 'vr' of 'V1Switch' has type V, expected "
                               "VerifyChecksum<H, M> (parameter 'h' is in, VerifyChecksum<H, M> "
                               "has inout)")


def test_entry_priority_annotation_errors():
    table = """control C(inout H hdr, inout M m) {
    action a() { }
    table t { key = { hdr.h.a : ternary; } actions = { a; }
        const entries = { %s } }
    apply { t.apply(); }
}"""
    assert error_of(table % "priority = 2: 1 &&& 1 : a() @priority(1);") == \
        "e.p4:8:55: an entry cannot have both 'priority =' and @priority"
    assert error_of(table % "1 &&& 1 : a() @priority(0);") == \
        "e.p4:8:41: @priority must be a positive integer, got 0"
    assert error_of(table % "1 &&& 1 : a() @priority(hdr.h.a);") == \
        "e.p4:8:51: entry priority must be a compile-time constant"
    assert error_of(table % "priority = 2: 1 &&& 1 : a(); 2 &&& 2 : a() @priority(1);") == \
        "e.p4:7:5: table t: entries mix 'priority =' with @priority"


def test_headers_must_be_whole_bytes_to_extract_or_emit():
    odd = "header odd_t { bit<8> a; bit<1> v; }\nstruct OH { odd_t o; }\n"
    assert error_of(odd + """parser P(packet_in pk, out OH hdr) {
    state start { pk.extract(hdr.o); transition accept; }
}""") == "e.p4:8:30: unsupported: extract of header odd_t, whose fixed-size fields are 9 bits, " \
        "not a whole number of bytes"
    # inside a struct passed to emit, too
    assert error_of(odd + """control D(packet_out pk, in OH hdr) { apply { pk.emit(hdr); } }""") == \
        "e.p4:7:55: unsupported: emit of header odd_t, whose fixed-size fields are 9 bits, " \
        "not a whole number of bytes"


def test_extract_into_dont_care_needs_the_header_type():
    assert error_of("""parser P(packet_in p, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(_); transition accept; }
}""").endswith("extract into '_' needs the header type: extract<H>(_)")
