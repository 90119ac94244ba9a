"""Our P4Info equals the one p4c writes (tests/frontend/programs/X.p4.p4info.txtpb, written
by hand in p4c's style) entity by entity, and the warnings p4c gives are given."""

import glob
import os
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
        expected = parse(f.read().replace('name: "by"', 'name: "amount"'))
    assert differences(expected, program.p4info) == [
        'actions UIngress.bump: params.name: expected "amount", got "by"']
