"""The front end's passes: each node walked once through its declared children, names
resolved before types, constants folded after types with p4c's rules, writes and table
rules checked by their own passes."""

import glob
import os

import pytest

from p4switch.frontend import CompileError, driver, load, load_source
from p4switch.frontend import ast as A
from p4switch.frontend import types as T

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE_DIR = os.path.join(HERE, "include")


def test_the_driver_lists_each_pass_once_in_p4c_order():
    names = [p.__module__.rsplit(".", 1)[1] for p in driver.PASSES]
    assert names == ["resolve", "typeinfer", "constfold", "tables", "lvalues"]


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(HERE, "programs", "*.p4"))))
def test_every_node_is_walked_once(path):
    program = load(path, include_dirs=[INCLUDE_DIR])
    # Only the target of a compound assignment is shared (`x += e` is `x = x + e` with the
    # very same `x`, see AssignmentStatement): it is walked under both places.
    shared = {id(n) for s in A.iter_nodes(program) if isinstance(s, A.AssignmentStatement) and s.op
              for n in A.iter_nodes(s.lhs)}
    seen = [id(n) for n in A.iter_nodes(program) if id(n) not in shared]
    assert len(seen) == len(set(seen))
    # References (decl, callee_decl, ...) are not children: a PathExpression's declaration
    # is walked where it is declared, not under the name.
    paths = [n for n in A.iter_nodes(program) if isinstance(n, A.PathExpression)]
    assert paths and all(n.decl is None or not isinstance(n.decl, A.Node) or id(n.decl) in set(seen)
                         for n in paths if not isinstance(n.decl, list))


def test_children_are_declared_on_the_node():
    assert A.BinaryExpression.CHILDREN == ("left", "right")
    assert A.PathExpression.CHILDREN == ()
    assert A.HeaderDecl.CHILDREN == A.StructLikeDecl.CHILDREN == ("annotations", "type_params", "fields")
    with pytest.raises(TypeError, match="not fields"):
        @A.node("nope")
        class Broken(A.Node):
            x: int = 0


PROGRAM = """#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { bit<8> x; bit<8> y; bit<8> z; bit<16> w; }
const bit<8> K = 8w200 + 8w100;
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        m.x = 300 / 2;
        m.y = K;
        m.z = (bit<8>)(m.x + 1) + (2 * 3);
        m.w = (8w1 << 3) ++ 8w2;
    }
}
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""


def test_constants_are_folded_with_p4c_rules():
    program = load_source(PROGRAM, "f.p4")
    body = program.find("I").body.statements
    x, y, z, w = (s.rhs for s in body)
    assert x.const_value == 150 and x.type == T.bit(8)          # int division before the width
    assert y.const_value == 44                                   # 300 wrapped to bit<8>
    assert z.const_value is None and z.right.const_value == 6 and z.right.type == T.bit(8)
    assert w.type == T.bit(16) and w.const_value == (8 << 8) | 2


def test_names_are_resolved_before_types():
    # The undeclared name is reported even though a type error comes first in the text.
    with pytest.raises(CompileError, match="'nowhere' is not declared"):
        load_source(PROGRAM.replace("m.x = 300 / 2;", "m.x = 16w1; m.y = nowhere;"), "f.p4")


def test_writes_are_checked_after_types():
    with pytest.raises(CompileError) as info:
        load_source(PROGRAM.replace("m.x = 300 / 2;", "K = 1;"), "f.p4")
    assert str(info.value) == "f.p4:12:9: cannot assign to 'K': it is not a variable"
