"""Statement nodes of the P4-16 syntax tree."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Optional

from .ast_core import Annotation, Node, node
from .ast_expressions import Expression, MethodCallExpression

if TYPE_CHECKING:
    from .ast_declarations import VariableDecl



@node()
class Statement(Node):
    """Base of statements. Local declarations (VariableDecl, ConstantDecl, and
    Instantiation where allowed) also appear in statement lists."""


@node("lhs", "rhs")
class AssignmentStatement(Statement):
    """`lhs = rhs;` (compound forms like `x += e` are expanded to `x = x + e` by the parser,
    with `op` recording the compound operator, '' for plain assignment). In the expanded
    form `rhs.left is lhs` (the very same node): a back end must evaluate the location once,
    as in `a[f()] |= 1` where f has side effects."""

    lhs: Expression
    rhs: Expression
    op: str = ""


@node("call")
class MethodCallStatement(Statement):
    """`call;` where call is a MethodCallExpression."""

    call: MethodCallExpression


@node("statements", "annotations")
class BlockStatement(Statement):
    """`{ statements }` (annotations are allowed before a block)."""

    statements: list[Node] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@node("cond", "then", "else_")
class IfStatement(Statement):
    """`if (cond) then else else_` (else_ None when absent)."""

    cond: Expression
    then: Statement
    else_: Optional[Statement] = None


@node("value")
class ReturnStatement(Statement):
    """`return;` or `return value;`."""

    value: Optional[Expression] = None


@node()
class ExitStatement(Statement):
    """`exit;`."""


@node()
class EmptyStatement(Statement):
    """`;`."""


@node()
class BreakStatement(Statement):
    """`break;` inside a for loop."""


@node()
class ContinueStatement(Statement):
    """`continue;` inside a for loop."""


@node("label", "body")
class SwitchCase(Node):
    """One `label: body` of a switch. `label` is one Expression (a PathExpression naming an
    action for action_run switches, an expression otherwise, or DefaultExpression).
    `body` is None for a fall-through label (`a: b: { ... }`)."""

    label: Expression
    body: Optional[BlockStatement] = None


@node("expr", "cases")
class SwitchStatement(Statement):
    """`switch (expr) { cases }`. `is_action_run` is True when expr is `t.apply().action_run`."""

    expr: Expression
    cases: list[SwitchCase] = field(default_factory=list)
    is_action_run: bool = False


@node("init", "cond", "updates", "body")
class ForStatement(Statement):
    """`for (init; cond; updates) body` (P4-16 1.2.5). init/updates are statement lists."""

    init: list[Node] = field(default_factory=list)
    cond: Optional[Expression] = None
    updates: list[Statement] = field(default_factory=list)
    body: Statement = None


@node("var", "collection", "body")
class ForInStatement(Statement):
    """`for (type_ref var in collection) body` (P4-16 1.2.5); type_ref may be None when the
    type is omitted. `var` is a VariableDecl for the loop variable."""

    var: VariableDecl
    collection: Expression
    body: Statement = None
