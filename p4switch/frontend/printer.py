"""Source text of expressions and type references, as P4Info names and error messages use it.

`expr_text(hdr.ipv4.dstAddr)` -> "hdr.ipv4.dstAddr"; slices print as `x[7:0]`; a validity
key `h.isValid()` prints as "h.isValid()" (elaborate.py turns it into p4c's "h.$valid$").
"""

from __future__ import annotations

from . import ast as A


def expr_text(e) -> str:
    """Canonical P4 text of an expression (no redundant spaces)."""
    fn = _PRINTERS.get(type(e))
    if fn is None:
        return f"<{type(e).__name__}>"
    return fn(e)


def type_ref_text(t) -> str:
    """Canonical P4 text of a type reference."""
    if isinstance(t, A.BaseTypeRef):
        if t.width is not None and t.name in ("bit", "int", "varbit"):
            return f"{t.name}<{expr_text(t.width)}>"
        return t.name
    if isinstance(t, A.NamedTypeRef):
        name = ("." if t.is_global else "") + t.name
        if t.type_args:
            return f"{name}<{', '.join(type_ref_text(a) for a in t.type_args)}>"
        return name
    if isinstance(t, A.HeaderStackTypeRef):
        return f"{type_ref_text(t.element)}[{expr_text(t.size)}]"
    if isinstance(t, A.TupleTypeRef):
        kw = "list" if t.is_list else "tuple"
        return f"{kw}<{', '.join(type_ref_text(a) for a in t.elements)}>"
    return "_"


def _args(args) -> str:
    return ", ".join((f"{a.name} = " if a.name else "") + expr_text(a.value) for a in args)


def _int(e: A.IntLiteral) -> str:
    return e.text or str(e.value)


def _call(e: A.MethodCallExpression) -> str:
    targs = f"<{', '.join(type_ref_text(t) for t in e.type_args)}>" if e.type_args else ""
    return f"{expr_text(e.callee)}{targs}({_args(e.args)})"


def _paren(e) -> str:
    """Operands that are themselves operators get parentheses to keep the text unambiguous."""
    text = expr_text(e)
    if isinstance(e, (A.BinaryExpression, A.TernaryExpression, A.MaskExpression, A.RangeExpression)):
        return f"({text})"
    return text


_PRINTERS = {
    A.IntLiteral: _int,
    A.BoolLiteral: lambda e: "true" if e.value else "false",
    A.StringLiteral: lambda e: '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"',
    A.PathExpression: lambda e: ("." if e.is_global else "") + e.name,
    A.MemberExpression: lambda e: f"{_paren(e.expr)}.{e.member}",
    A.IndexExpression: lambda e: f"{_paren(e.expr)}[{expr_text(e.index)}]",
    A.SliceExpression: lambda e: f"{_paren(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]",
    A.UnaryExpression: lambda e: f"{e.op}{_paren(e.operand)}",
    A.BinaryExpression: lambda e: f"{_paren(e.left)} {e.op} {_paren(e.right)}",
    A.MaskExpression: lambda e: f"{_paren(e.value)} &&& {_paren(e.mask)}",
    A.RangeExpression: lambda e: f"{_paren(e.lo)} .. {_paren(e.hi)}",
    A.TernaryExpression: lambda e: f"{_paren(e.cond)} ? {_paren(e.then)} : {_paren(e.else_)}",
    A.CastExpression: lambda e: f"({type_ref_text(e.type_ref)}){_paren(e.expr)}",
    A.MethodCallExpression: _call,
    A.ConstructorCallExpression: lambda e: f"{type_ref_text(e.type_ref)}({_args(e.args)})",
    A.ListExpression: lambda e: "{" + ", ".join(expr_text(x) for x in e.elements) + "}",
    A.StructExpression: lambda e: "{" + ", ".join(f"{f.name} = {expr_text(f.value)}" for f in e.fields) + "}",
    A.InvalidHeaderExpression: lambda e: "{#}",
    A.DefaultExpression: lambda e: "default",
    A.DontCareExpression: lambda e: "_",
    A.DotsExpression: lambda e: "...",
}
