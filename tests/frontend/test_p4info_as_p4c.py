"""Our P4Info equals the one p4c writes (tests/frontend/programs/X.p4.p4info.txtpb, written
by hand in p4c's style) entity by entity, and the warnings p4c gives are given."""

import glob
import os
import re
import sys

import pytest

from p4switch import compile_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts"))
from p4info_diff import differences, parse  # noqa: E402

EXPECTED = sorted(glob.glob(os.path.join(HERE, "programs", "*.p4.p4info.txtpb")))


@pytest.mark.parametrize("expected", EXPECTED, ids=[os.path.basename(p) for p in EXPECTED])
def test_p4info_is_p4cs(expected):
    program = compile_file(expected[:-len(".p4info.txtpb")])
    with open(expected) as f:
        assert differences(parse(f.read()), program.p4info) == []


def test_unused_direct_externs_only_warn():
    program = compile_file(os.path.join(HERE, "programs", "unused_direct.p4"))
    assert [w.split(": ", 1)[1] for w in program.ast.pipeline.warnings] == [
        "warning: direct_counter UIngress.spare_counter is not used by any table",
        "warning: direct_meter UIngress.spare_meter is not used by any table"]
    assert program.ast.pipeline.warnings[0].split(": ")[0].endswith("unused_direct.p4:18:5")


def test_the_comparison_sees_a_difference():
    program = compile_file(os.path.join(HERE, "programs", "unused_direct.p4"))
    with open(os.path.join(HERE, "programs", "unused_direct.p4.p4info.txtpb")) as f:
        expected = parse(f.read().replace('alias: "bump"', 'alias: "bumped"'))
    assert differences(expected, program.p4info) == [
        'actions UIngress.bump: preamble.alias: expected "bumped", got "bump"']


def test_initial_default_action_id_reads_as_the_message_form():
    # p4c's newest files write the initial default as a bare id; the proto here has the
    # message form, so both spellings of the same P4Info compare equal.
    with open(os.path.join(HERE, "programs", "ipv4_forward.p4.p4info.txtpb")) as f:
        text = f.read()
    bare, count = re.subn(r"initial_default_action \{\n\s*action_id: (\d+)\n\s*\}",
                          r"initial_default_action_id: \1", text)
    assert count == 1 and "initial_default_action_id: 25652968\n" in bare
    assert differences(parse(text), parse(bare)) == []
    other = bare.replace("initial_default_action_id: 25652968", "initial_default_action_id: 1")
    assert differences(parse(text), parse(other)) != []


def test_expected_file_of_an_older_writer_skips_initial_default_actions_only():
    # A writer that predates initial_default_action writes it for no table: ours is then
    # not compared; an expected file that has it for some table is compared in full.
    with open(os.path.join(HERE, "programs", "ipv4_forward.p4.p4info.txtpb")) as f:
        text = f.read()
    older, count = re.subn(r"\n\s*initial_default_action \{\n\s*action_id: \d+\n\s*\}", "", text)
    assert count == 1
    ours = parse(text)
    assert differences(parse(older), ours) == []
    changed = parse(older)
    changed.tables[0].size = 7
    assert differences(changed, ours) != []
    assert len(differences(parse(text), parse(older))) == 1


def test_corelib_marks_of_the_writers_core_library_are_not_compared():
    with open(os.path.join(HERE, "programs", "ipv4_forward.p4.p4info.txtpb")) as f:
        text = f.read()
    marked, count = re.subn(r'(name: "NoAction"\n\s*alias: "NoAction"\n)(\s*)',
                            r'\1\2annotations: "@corelib"\n\2', text)
    assert count == 1
    assert '"@corelib"' in str(parse(marked))
    assert differences(parse(marked), parse(text)) == []
    other = marked.replace('annotations: "@corelib"', 'annotations: "@other"')
    assert differences(parse(other), parse(text)) == [
        'actions NoAction: preamble.annotations: expected ["@noWarn(\\"unused\\")", "@other"], '
        'got ["@noWarn(\\"unused\\")"]']


def test_a_serializable_enum_key_is_described_in_type_info():
    program = compile_file(os.path.join(HERE, "programs", "enum_key_refs.p4"))
    enums = program.p4info.type_info.serializable_enums
    assert list(enums) == ["Kind"]          # Unused is never a key: p4c leaves it out
    assert enums["Kind"].underlying_type.bitwidth == 8
    assert [(m.name, m.value) for m in enums["Kind"].members] == [("DATA", b"\x01"),
                                                                   ("CONTROL", b"\xc0")]
    field = program.p4info.tables[0].match_fields[0]
    assert (field.name, field.bitwidth, field.type_name.name) == ("hdr.data.kind", 8, "")


def test_an_action_list_annotation_is_copied_onto_the_action_ref():
    program = compile_file(os.path.join(HERE, "programs", "enum_key_refs.p4"))
    ids = {a.preamble.name: a.preamble.id for a in program.p4info.actions}
    refs = {r.id: list(r.annotations) for r in program.p4info.tables[0].action_refs}
    assert refs == {ids["KindIngress.to_port"]: [], ids["KindIngress.drop"]: ['@note("spare")']}


def test_an_error_key_is_32_bits_wide():
    program = compile_file(os.path.join(HERE, "programs", "error_key.p4"))
    fields = [(t.preamble.name, [(f.name, f.bitwidth) for f in t.match_fields])
              for t in program.p4info.tables]
    assert fields == [("ErrIngress.by_error", [("meta.err", 32)]),
                      ("ErrIngress.by_error_const", [("meta.err", 32)])]
