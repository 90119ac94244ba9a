"""Lvalue checks: the pass after type inference that checks every write.

`check_lvalues(program)`: the left side of an assignment, the receiver of `setValid()`,
`setInvalid()`, `push_front` and `pop_front`, and every argument passed to an `out` or
`inout` parameter (of actions, functions, extern methods, blocks, and actions bound in a
table's action list) must be writable: a variable or an `out`/`inout` parameter, or a
field, element or slice of one (but not a stack's `size`, `lastIndex` or `nextIndex`).
`_` may only be passed to an `out` parameter.
"""

from __future__ import annotations

from . import ast as A
from . import types as T
from .errors import CompileError
from .printer import expr_text


def check_lvalues(program: A.Program) -> A.Program:
    """Check every write in `program` (see the module docstring)."""
    for n in A.iter_nodes(program):
        if isinstance(n, A.AssignmentStatement):
            require_lvalue(n.lhs, "assign to")
        elif isinstance(n, A.MethodCallExpression):
            if n.builtin in ("setValid", "setInvalid"):
                require_lvalue(n.callee.expr, f"call {n.builtin}() on")
            elif n.builtin in ("push_front", "pop_front"):
                require_lvalue(n.callee.expr, f"call {n.builtin} on")
            else:
                arguments(n.param_args, callee_name(n))
        elif isinstance(n, A.ActionRef):
            arguments(n.param_args, n.decl.name)
        elif isinstance(n, (A.ConstructorCallExpression, A.Instantiation)) and n.decl is not None:
            arguments(n.param_args, n.decl.name)
    return program


def callee_name(e: A.MethodCallExpression) -> str:
    """The callee as messages name it: `f`, `extern.method`, the block's type name."""
    owner = getattr(e.callee.type, "owner", None)
    if e.call_kind in ("extern_method", "builtin") and isinstance(owner, T.ExternType):
        return f"{owner.name}.{e.callee.member}"
    if e.call_kind == "block_apply":
        return owner.decl.name
    return getattr(e.callee_decl, "name", expr_text(e.callee))


def arguments(param_args, name: str):
    for p, a in param_args or ():
        if p is not None and a is not None:
            check_direction(p, a, name)


def check_direction(p: A.Parameter, a: A.Expression, callee_name: str):
    if p.direction in ("out", "inout"):
        if isinstance(a, A.DontCareExpression):
            if p.direction == "inout":
                raise CompileError(a.loc, f"'_' cannot be passed to inout parameter '{p.name}'")
            return
        problem = lvalue_problem(a)
        if problem is not None:
            raise CompileError(a.loc, f"{p.direction} argument '{p.name}' of '{callee_name}' must be "
                                      f"writable; '{expr_text(a)}' is not: {problem}")
    elif isinstance(a, A.DontCareExpression) and p.direction is not None:
        raise CompileError(a.loc, "'_' can only be passed to an out parameter")


def require_lvalue(e: A.Expression, what: str):
    """Raise unless `e` can be written; `what` completes "cannot <what> 'e'"."""
    problem = lvalue_problem(e)
    if problem is not None:
        raise CompileError(e.loc, f"cannot {what} '{expr_text(e)}': {problem}")


def lvalue_problem(e: A.Expression):
    """Why `e` cannot be written to, or None when it can."""
    root = e
    while isinstance(root, (A.MemberExpression, A.IndexExpression, A.SliceExpression)):
        if isinstance(root, A.MemberExpression) and isinstance(T.strip_newtype(root.expr.type), T.StackType) \
                and root.member in ("size", "lastIndex", "nextIndex"):
            return f"'{root.member}' of a header stack is read-only"
        root = root.expr
    if not isinstance(root, A.PathExpression):
        return "it is not a variable"
    decl = root.decl
    if isinstance(decl, A.Parameter):
        if decl.direction == "in":
            return f"parameter '{decl.name}' is read-only (in)"
        if decl.direction is None:
            return f"parameter '{decl.name}' is directionless"
        return None
    if isinstance(decl, A.VariableDecl):
        return None
    return "it is not a variable"
