"""Constant folding: the compile-time value of every constant expression.

`fold_constants(program)` is the pass (after type inference): it walks every typed
expression bottom-up and sets `.const_value` (see `ast.Expression`): ints reduced to the
expression's width, bools, strings, member names of plain enums, `error` and `match_kind`,
the values of serializable enum members, `stack.size`, `minSizeInBits()` & co., and through
named constants. Non-constants keep None.

Type inference asks `value(e)` where a type or a rule depends on a value (a width, a slice
bound, a stack size, a shift amount, a value that must be a constant): it folds `e` on
demand with the same rules. Infinite-precision integer expressions (type `int`) are folded
as soon as they are typed, before the context gives them a width, so `bit<8> x = 300 / 2`
is 150 as in p4c. Aggregates (list and struct expressions) are folded when they are typed,
because their shape (tuple or struct) is decided there.
"""

from __future__ import annotations

from . import ast as A
from . import types as T

SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


def value(e: A.Expression):
    """The compile-time value of the typed expression `e`, or None (folded on demand)."""
    if e.const_value is not None or e.type is None:
        return e.const_value
    rule = RULES.get(type(e))
    if rule is not None:
        v = rule(e)
        if v is not None:
            e.const_value = v
    return e.const_value


def fold_constants(program: A.Program) -> A.Program:
    """The constant-folding pass: fold every typed expression of `program` in place."""
    pending = [n for n in A.iter_nodes(program) if isinstance(n, A.Expression)]
    for e in reversed(pending):     # children before their parents
        value(e)
    return program


def wrap(t, v):
    """`v` reduced to the width of `t` (unchanged for `int` and non-integer types)."""
    base = T.strip_newtype(t)
    if isinstance(base, T.EnumType) and base.underlying is not None:
        base = base.underlying
    return base.wrap(v) if isinstance(base, T.BitsType) and isinstance(v, int) else v


def int_literal(e: A.IntLiteral):
    if e.width is None:
        return e.value
    return T.BitsType(e.width, e.signed).wrap(e.value)


def path(e: A.PathExpression):
    decl = e.decl
    if isinstance(decl, A.ConstantDecl):
        return value(decl.value)
    if isinstance(decl, A.EnumMember):          # a match_kind member
        return decl.name
    return None


def member(e: A.MemberExpression):
    decl = e.decl
    if isinstance(decl, A.EnumMember):
        t = decl.type
        if isinstance(t, T.EnumType) and t.underlying is not None:
            return t.values[decl.name]
        return decl.name                          # plain enum, error, match_kind
    base = T.strip_newtype(e.expr.type)
    if isinstance(base, T.StackType) and e.member == "size":
        return base.size
    return None


def unary(e: A.UnaryExpression):
    v = value(e.operand)
    if v is None:
        return None
    if e.op == "!":
        return not v
    v = {"-": lambda x: -x, "+": lambda x: x, "~": lambda x: ~x}[e.op](v)
    return wrap(e.type, v)


def binary(e: A.BinaryExpression):
    lv, rv = value(e.left), value(e.right)
    if lv is None or rv is None:
        return None
    op = e.op
    if op in ("&&", "||"):
        return (lv and rv) if op == "&&" else (lv or rv)
    if op == "++":
        lb, rb = T.strip_newtype(e.left.type), T.strip_newtype(e.right.type)
        return wrap(e.type, ((lv & lb.mask) << rb.width) | (rv & rb.mask))
    if op in ("<<", ">>"):
        return wrap(e.type, lv << rv if op == "<<" else lv >> rv)
    if op in ("==", "!="):
        return (lv == rv) == (op == "==")
    if op in ("<", ">", "<=", ">="):
        return {"<": lv < rv, ">": lv > rv, "<=": lv <= rv, ">=": lv >= rv}[op]
    if not isinstance(lv, int) or isinstance(lv, bool):
        return None
    base = T.strip_newtype(e.left.type)
    if op in ("|+|", "|-|"):
        v = lv + rv if op == "|+|" else lv - rv
        lo, hi = (-(1 << (base.width - 1)), (1 << (base.width - 1)) - 1) if base.signed else (0, base.mask)
        return min(max(v, lo), hi)
    if op == "/":
        if rv == 0:
            return None
        v = abs(lv) // abs(rv)
        v = v if (lv >= 0) == (rv >= 0) else -v
    elif op == "%":
        if rv == 0:
            return None
        v = lv % rv
    else:
        v = {"+": lambda: lv + rv, "-": lambda: lv - rv, "*": lambda: lv * rv,
             "&": lambda: lv & rv, "|": lambda: lv | rv, "^": lambda: lv ^ rv}[op]()
    return wrap(base, v)


def ternary(e: A.TernaryExpression):
    c = value(e.cond)
    if c is None:
        return None
    return value(e.then) if c else value(e.else_)


def cast(e: A.CastExpression):
    v = value(e.expr)
    if v is None:
        return None
    if isinstance(e.expr, (A.ListExpression, A.StructExpression, A.InvalidHeaderExpression)):
        return v
    return cast_value(v, T.strip_newtype(e.type))


def cast_value(v, dst):
    if isinstance(dst, T.BoolType):
        return bool(v)
    if isinstance(v, bool):
        v = int(v)
    if not isinstance(v, int):
        return None
    if isinstance(dst, T.BitsType):
        return dst.wrap(v)
    if isinstance(dst, T.EnumType) and dst.underlying is not None:
        return dst.underlying.wrap(v)
    return v


def slice_(e: A.SliceExpression):
    v, lo = value(e.expr), value(e.lo)
    if v is None or lo is None:
        return None
    return (v >> lo) & T.strip_newtype(e.type).mask


def call(e: A.MethodCallExpression):
    if e.builtin in SIZE_METHODS:
        return header_size(e.callee.type.owner, e.builtin)
    fn = e.callee_decl
    if e.call_kind == "extern_function" and fn.name == "static_assert" and fn.loc.file.endswith("core.p4"):
        return True      # type inference rejected the program if the assertion fails
    return None


def fold_aggregate(e, named_elements):
    """const_value of a list/struct expression whose elements are all constants:
    a tuple (unnamed elements) or a dict field name -> value (struct fields)."""
    values = [value(el) for _, el in named_elements]
    if not named_elements or any(v is None for v in values):
        return
    if named_elements[0][0] is None:
        e.const_value = tuple(values)
    else:
        e.const_value = {n: v for (n, _), v in zip(named_elements, values)}


def header_size(t: T.Type, method: str) -> int:
    """minSizeInBits & co. of a header/struct type: varbit fields count 0 (min) or their
    maximum (max); the byte forms round up."""
    def bits(ft, use_max):
        ft = T.strip_newtype(ft)
        if isinstance(ft, T.VarbitType):
            return ft.max_width if use_max else 0
        if isinstance(ft, T.StructLikeType):
            return sum(bits(x, use_max) for _, x in ft.fields)
        if isinstance(ft, T.StackType):
            return ft.size * bits(ft.element, use_max)
        return T.bit_width(ft)
    n = bits(t, method.startswith("max"))
    return (n + 7) // 8 if method.endswith("Bytes") else n


RULES = {
    A.IntLiteral: int_literal,
    A.BoolLiteral: lambda e: e.value,
    A.StringLiteral: lambda e: e.value,
    A.PathExpression: path,
    A.MemberExpression: member,
    A.UnaryExpression: unary,
    A.BinaryExpression: binary,
    A.TernaryExpression: ternary,
    A.CastExpression: cast,
    A.SliceExpression: slice_,
    A.MethodCallExpression: call,
}
