"""``--target bmv2``: refuse what p4c's bmv2 back end (p4c-bm2-ss, the p4lang bundle's
v1.2.4.17) refuses, with p4c's words, so that a program that compiles for our switch with
this target also compiles for real bmv2.

Our front end takes more than p4c-bm2-ss does; each rule below is a construct the
differential tests (tests/bmv2) found p4c refusing in a program our compiler accepts
(docs/bmv2.md, "Divergences found by differential testing"):

  loops              ``for`` statements: "BMV2 does not support loops"; ``for`` over a
                     tuple is already refused by p4c's type checker
  division           ``/`` and ``%`` of values not known at compile time: bmv2 has no such
                     operation ("could not evaluate expression at compilation time")
  header widths      a header whose fields do not total a multiple of 8 bits
  anonymous          an ``implementation`` (action profile/selector) instantiated inside
  implementation     the table, with no @name: P4Runtime cannot name it
  error keys         an entry of a table whose key value is an ``error`` constant
                     ("unsupported exact key expression")
  log_msg lists      a log_msg list mixing headers/structs/stacks/tuples with scalars: p4c's
                     bmv2 back end flattens it into a struct whose later fields it cannot
                     type ("cannot have type 'Unknown type'")
  old v1model        ``register<T>``, ``count()`` of a ``counter(...)`` without an index
                     type, and ``resubmit``/``recirculate``/``clone3`` with a field list:
                     p4c's v1model.p4 declares only ``register<T, I>``, ``counter<I>`` and
                     the ``*_preserving_field_list`` forms, and its bmv2 back end knows no
                     such extern function
  p4c's typing       a cast of a serializable enum to other than its underlying type;
                     ``{#}`` assigned to a header union member
  compound           ``+=``, ``|+|=``, ``<<=``... (P4-16 1.2.5): p4c v1.2.4.17 has not
  assignments        got them ("syntax error")

``check(program)`` raises the first CompileError (our usual ``FILE:LINE:COL: message``).
"""

from __future__ import annotations

from . import ast as A
from . import types as T
from .errors import CompileError
from .printer import expr_text, type_ref_text

TARGETS = ("p4switch", "bmv2")
_OLD_FIELD_LIST_EXTERNS = ("resubmit", "recirculate", "clone3")


def check(program) -> None:
    """Raise CompileError at the first construct p4c's bmv2 back end refuses."""
    for node in A.iter_nodes(program):
        rule = _RULES.get(type(node))
        if rule is not None:
            rule(node)


def _loops(node):
    if isinstance(node, A.ForInStatement):
        t = T.strip_newtype(node.collection.type) if node.collection.type is not None else None
        if isinstance(t, T.TupleType):
            raise CompileError(node.collection.loc, f"Typechecking does not support iteration "
                                                    f"over this collection of type {t}")
    raise CompileError(node.loc, "BMV2 does not support loops")


def _division(node):
    if node.op not in ("/", "%"):
        return
    if node.const_value is None and (node.left.const_value is None or
                                     node.right.const_value is None):
        raise CompileError(node.loc, f"{expr_text(node)}: could not evaluate expression at "
                                     f"compilation time")


def _header(node):
    total = 0
    for f in node.fields:
        t = T.strip_newtype(f.type_ref.type) if f.type_ref.type is not None else None
        if isinstance(t, T.VarbitType):
            total += t.max_width
        elif t is not None:
            try:
                total += T.bit_width(t)
            except Exception:  # noqa: BLE001 - a field type p4c sizes otherwise
                return
    if total % 8:
        raise CompileError(node.loc, f"header {node.name}: Found header with fields totaling "
                                     f"{total} bits.  BMv2 target only supports headers with "
                                     f"fields totaling a multiple of 8 bits.")


def _table(node):
    prop = node.properties.get("implementation")
    if prop is not None and isinstance(prop.value, A.ConstructorCallExpression) and \
            A.find_annotation(prop.annotations, "name") is None:
        raise CompileError(prop.loc, f"Table '{node.name}' has an anonymous table property "
                                     f"'implementation' with no name annotation, which is "
                                     f"not supported by P4Runtime")
    for entry in node.entries:
        for key, value in zip(node.key, entry.keys):
            t = value.type
            if isinstance(T.strip_newtype(t) if t is not None else None, T.ErrorType):
                raise CompileError(value.loc, f"{expr_text(value)}: unsupported "
                                              f"{key.match_kind} key expression")


def _composite(t) -> bool:
    t = T.strip_newtype(t) if t is not None else None
    return isinstance(t, (T.StructLikeType, T.StackType, T.TupleType, T.ListType,
                          T.StructExpressionType))


def _mixes(types) -> bool:
    """Whether values of these types, or the fields of a struct/tuple among them, mix
    composites (headers, structs, stacks, tuples) with scalars: p4c's bmv2 back end
    flattens such a log_msg list into one struct and leaves the scalars untyped."""
    types = [T.strip_newtype(t) for t in types if t is not None]
    kinds = {_composite(t) for t in types}
    if kinds == {True, False}:
        return True
    for t in types:
        if isinstance(t, T.TupleType) and _mixes(t.elements):
            return True
        if isinstance(t, T.StructType) and _mixes([ft for _, ft in t.fields]):
            return True
    return False


def _call(node):
    name = getattr(node.callee_decl, "name", None)
    if node.call_kind == "extern_function" and name in _OLD_FIELD_LIST_EXTERNS:
        instead = "clone_preserving_field_list" if name == "clone3" else \
            f"{name}_preserving_field_list"
        raise CompileError(node.loc, f"{name}: unknown extern function (p4c's bmv2 back end "
                                     f"takes {instead})")
    if node.call_kind == "extern_function" and name == "log_msg" and len(node.param_args) > 1:
        data = node.param_args[1][1]
        if isinstance(data, A.ListExpression) and _mixes([e.type for e in data.elements]):
            raise CompileError(data.loc, f"log_msg list {expr_text(data)} mixes composite "
                                         f"values and scalars: p4c's bmv2 back end makes it "
                                         f"a struct whose fields cannot have type "
                                         f"'Unknown type'")
    if node.call_kind == "extern_method" and name == "count":
        owner = getattr(node.callee, "expr", None)
        t = getattr(owner, "type", None)
        if isinstance(t, T.ExternType) and t.name == "counter" and not t.type_args and \
                getattr(t.decl, "type_params", None):
            raise CompileError(node.loc, f"{expr_text(node)}: Cannot cast implicitly to type "
                                         f"'I' (p4c's v1model.p4 declares only counter<I>: "
                                         f"without its index type, count() does not "
                                         f"type-check)")


def _cast(node):
    source = T.strip_newtype(node.expr.type) if node.expr.type is not None else None
    target = T.strip_newtype(node.type) if node.type is not None else None
    if isinstance(source, T.EnumType) and source.underlying is not None and \
            target is not None and target != source.underlying and \
            not isinstance(target, T.EnumType):
        raise CompileError(node.loc, f"'{expr_text(node)}': Cannot cast from "
                                     f"'{source.name}' to '{target}' (p4c casts a "
                                     f"serializable enum only to its underlying type)")


def _invalid_union_member(node):
    if isinstance(node.rhs, A.InvalidHeaderExpression) and \
            isinstance(node.lhs, A.MemberExpression):
        owner = T.strip_newtype(node.lhs.expr.type) if node.lhs.expr.type is not None else None
        if isinstance(owner, T.HeaderUnionType):
            raise CompileError(node.loc, f"'{expr_text(node.lhs)} = Invalid': Source "
                                         f"expression 'Invalid' produces a result of type "
                                         f"'Unknown type' (p4c does not type {{#}} assigned "
                                         f"to a header union member)")


def _instance(node):
    """``register<T>`` where v1model.p4 (V1MODEL_VERSION >= 20200408) declares
    ``register<T, I>``: our front end takes the index as bit<32>, p4c does not."""
    ref = node.type_ref
    if not isinstance(ref, A.NamedTypeRef) or ref.name != "register" or \
            not isinstance(ref.decl, A.ExternDecl):
        return
    wanted = len(ref.decl.type_params)
    if len(ref.type_args) != wanted:
        raise CompileError(ref.loc, f"{type_ref_text(ref)}: Type {ref.name} has {wanted} type "
                                    f"parameter(s), but it is specialized with "
                                    f"{len(ref.type_args)}")


def _assignment(node):
    _invalid_union_member(node)
    op = node.op
    if op not in ("", "="):
        raise CompileError(node.loc, f"syntax error, unexpected {op[0]} (p4c v1.2.4.17 has no "
                                     f"compound assignment '{op}')")


_RULES = {
    A.ForStatement: _loops,
    A.ForInStatement: _loops,
    A.BinaryExpression: _division,
    A.HeaderDecl: _header,
    A.TableDecl: _table,
    A.MethodCallExpression: _call,
    A.Instantiation: _instance,
    A.AssignmentStatement: _assignment,
    A.CastExpression: _cast,
}
