"""Expression nodes of the P4-16 syntax tree."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Optional

from .ast_core import Node, TypeRef, node



@node()
class Expression(Node):
    """Base of expressions. After checking, `type` is a `types.Type`; `const_value` is the
    folded compile-time value, or None when the expression is not a compile-time constant:
    int for integers (already reduced to the width of `type`) and for members of
    serializable enums; the member name (str) for members of plain enums, `error` and
    `match_kind`; bool; str for string literals; a tuple for a list expression and a dict
    field name -> value for a struct-valued expression whose elements are all constant."""

    type: Any = None
    const_value: Any = None


@node()
class IntLiteral(Expression):
    """An integer literal. `value` is the (non-negative) magnitude as written; `width` and
    `signed` come from a width prefix like 8w5 / 8s5 (width None: infinite precision `int`).
    `text` is the literal as written."""

    value: int
    width: Optional[int] = None
    signed: bool = False
    text: str = ""


@node()
class BoolLiteral(Expression):
    """`true` / `false`."""

    value: bool


@node()
class StringLiteral(Expression):
    """A string literal; `value` has the quotes removed and escapes decoded."""

    value: str


def string_argument(annotation) -> Optional[str]:
    """The single string-literal argument of an Annotation (as in @name("x")), or None."""
    args = annotation.args
    if len(args) == 1 and isinstance(args[0], StringLiteral):
        return args[0].value
    return None


@node()
class PathExpression(Expression):
    """A bare name (`x`, or `.x` with is_global). `decl` is the declaration it resolves to:
    a Parameter, VariableDecl, ConstantDecl, Instantiation, ActionDecl, FunctionDecl,
    TableDecl, ValueSetDecl, ParserState, extern function/method, or a type declaration
    when the name is a type (as in `error.NoMatch` or `MyEnum.A`)."""

    name: str
    is_global: bool = False
    decl: Any = None


@node("expr")
class MemberExpression(Expression):
    """`expr.member`: field of a struct/header/union, header-stack property (next, last,
    lastIndex, size), member of an enum or error, method of an extern/header/stack/table,
    `hit`/`miss`/`action_run` of a table apply result. `decl` is the member's declaration
    when it has one (StructField, EnumMember, MethodPrototype, ...)."""

    expr: Expression
    member: str
    decl: Any = None


@node("expr", "index")
class IndexExpression(Expression):
    """`expr[index]`: header stack element (or tuple element with a constant index)."""

    expr: Expression
    index: Expression


@node("expr", "hi", "lo")
class SliceExpression(Expression):
    """`expr[hi:lo]`: bit slice; `hi`/`lo` must be compile-time constants (their
    const_value is set) unless the spec allows otherwise."""

    expr: Expression
    hi: Expression
    lo: Expression


@node("operand")
class UnaryExpression(Expression):
    """`op operand` with op in {'!', '~', '-', '+'}."""

    op: str
    operand: Expression


@node("left", "right")
class BinaryExpression(Expression):
    """`left op right`. op in {'*', '/', '%', '+', '-', '|+|', '|-|', '<<', '>>', '<=', '>=',
    '<', '>', '==', '!=', '&', '^', '|', '&&', '||', '++'} ('++' is concatenation)."""

    op: str
    left: Expression
    right: Expression


@node("value", "mask")
class MaskExpression(Expression):
    """`value &&& mask` (keysets only)."""

    value: Expression
    mask: Expression


@node("lo", "hi")
class RangeExpression(Expression):
    """`lo .. hi` (keysets only)."""

    lo: Expression
    hi: Expression


@node("cond", "then", "else_")
class TernaryExpression(Expression):
    """`cond ? then : else_`."""

    cond: Expression
    then: Expression
    else_: Expression


@node("type_ref", "expr")
class CastExpression(Expression):
    """`(type_ref) expr`."""

    type_ref: TypeRef
    expr: Expression


@node("value")
class Argument(Node):
    """One call argument: `value`, or `name = value` for a named argument. `value` may be a
    DontCareExpression (`_`) for an ignored out argument."""

    value: Expression
    name: Optional[str] = None


@node("callee", "type_args", "args")
class MethodCallExpression(Expression):
    """`callee<type_args>(args)`.

    After checking:
      callee_decl: the called declaration (ActionDecl, FunctionDecl, ExternFunctionDecl,
                   MethodPrototype of an extern, TableDecl for `t.apply()`; for a
                   sub-parser/control `x.apply()` the Instantiation `x` (or the constructor
                   Parameter it came from), or the ParserDecl/ControlDecl for a direct
                   `Type.apply()`; None for header/stack built-ins).
      call_kind:   one of 'action', 'function', 'extern_function', 'extern_method',
                   'table_apply', 'block_apply' (sub-parser/control apply), 'builtin'
                   (header/stack/packet built-ins).
      builtin:     for call_kind 'builtin', which one: 'isValid', 'setValid', 'setInvalid',
                   'push_front', 'pop_front', 'extract', 'emit', 'lookahead', 'advance',
                   'length', 'verify' (packet_in/packet_out methods and `verify` are also
                   reported as 'builtin' with callee_decl set to their core.p4 declaration).
      resolved_type_args: list of `types.Type` for the callee's type parameters (explicit or
                   inferred).
      param_args:  list of (Parameter, Expression or None) in declaration order after named
                   arguments are matched (None: an @optional parameter was omitted, or a
                   parameter with a default value, which is then `Parameter.default`).
    """

    callee: Expression
    type_args: list[TypeRef] = field(default_factory=list)
    args: list[Argument] = field(default_factory=list)
    callee_decl: Any = None
    call_kind: Optional[str] = None
    builtin: Optional[str] = None
    resolved_type_args: list = field(default_factory=list)
    param_args: list = field(default_factory=list)


@node("type_ref", "args")
class ConstructorCallExpression(Expression):
    """`Type<args>(args)` used as an expression: an anonymous instantiation, e.g. a
    constructor argument `V1Switch(MyParser(), ...)` or `Checksum16()`. `decl` is the
    type's declaration (ParserDecl, ControlDecl, ExternDecl, PackageTypeDecl)."""

    type_ref: TypeRef
    args: list[Argument] = field(default_factory=list)
    decl: Any = None
    param_args: list = field(default_factory=list)


@node("elements")
class ListExpression(Expression):
    """`{e1, e2, ...}`: a tuple/list expression (also the tuple keyset of a select case)."""

    elements: list[Expression] = field(default_factory=list)


@node("value")
class NamedExpression(Node):
    """`name = value` inside a struct-valued expression."""

    name: str
    value: Expression


@node("fields", "type_ref")
class StructExpression(Expression):
    """`{a = e1, b = e2}` or `(T){...}`-style typed `T {a = e1}`. `type_ref` is the
    explicit type if written; otherwise the type comes from the context."""

    fields: list[NamedExpression] = field(default_factory=list)
    type_ref: Optional[TypeRef] = None


@node()
class InvalidHeaderExpression(Expression):
    """`{#}`: an invalid header (or header union) of the type required by the context."""


@node()
class DefaultExpression(Expression):
    """`default` in a select case / table entry keyset."""


@node()
class DontCareExpression(Expression):
    """`_`: don't care in a keyset, or an ignored out argument."""


@node()
class DotsExpression(Expression):
    """`...`: the remaining fields/arguments are don't care / default."""


# ---------------------------------------------------------------------------------------------
# Statements
