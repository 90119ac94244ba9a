"""The base of the P4-16 syntax tree: source locations, `Node` and the `node` decorator that
declares each class's children, annotations, type syntax, and `iter_nodes`.

A node class names its child fields in its decorator, `@node("left", "right")`; the
children of a class are its base's children followed by its own. Every other field is
data or an annotation the passes fill in (`type`, `decl`, `const_value`, ...): a reference
to a node that lives elsewhere in the tree, never walked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from .ast_expressions import Expression


def node(*children: str):
    """Declare an AST node class: keyword-only constructor, identity equality, slots.
    `children` names the fields (of this class) that hold child nodes (a node, a list of
    nodes or a dict of nodes); `CHILDREN` is the base class's children plus these."""
    def declare(cls):
        cls = dataclass(eq=False, kw_only=True, slots=True)(cls)
        names = {f.name for f in dc_fields(cls)}
        missing = [c for c in children if c not in names]
        if missing:
            raise TypeError(f"{cls.__name__} declares children that are not fields: {missing}")
        inherited = getattr(cls.__mro__[1], "CHILDREN", ())
        cls.CHILDREN = inherited + tuple(c for c in children if c not in inherited)
        return cls
    return declare


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in the original (pre-preprocessing) source: 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_LOC = Loc("<builtin>", 0, 0)


@node()
class Node:
    """Base of every AST node. `loc` is where the construct starts in the source."""

    loc: Loc = NO_LOC


# ---------------------------------------------------------------------------------------------
# Annotations
# ---------------------------------------------------------------------------------------------


@node("args", "kv")
class Annotation(Node):
    """`@name`, `@name(expr, ...)`, `@name[k=v, ...]` or `@name(<unparsed tokens>)`.

    name: annotation name without '@'.
    args: parsed expressions for the parenthesised form, when the body parses as a list of
          expressions (e.g. @name("x") -> [StringLiteral]); [] for a bare annotation.
    kv:   for the structured `@name[key=value, ...]` form, an ordered dict key -> Expression;
          None otherwise.
    raw:  the body's source text between the brackets ('' for a bare annotation); always set,
          useful for annotations whose body is not an expression list (e.g. @pragma).
    """

    name: str
    args: list[Expression] = field(default_factory=list)
    kv: Optional[dict[str, Expression]] = None
    raw: str = ""


def first_named(items, name: str):
    """The first of `items` (nodes or infos with a `name`) called `name`, or None."""
    return next((item for item in items if item.name == name), None)


def find_annotation(annotations: list[Annotation], name: str) -> Optional[Annotation]:
    """The first annotation called `name`, or None."""
    return first_named(annotations, name)


# ---------------------------------------------------------------------------------------------
# Type references (types as written in the source)
# ---------------------------------------------------------------------------------------------


@node()
class TypeRef(Node):
    """Base of the type syntax nodes. `type` is the resolved `types.Type` after checking."""

    type: Any = None


@node("width")
class BaseTypeRef(TypeRef):
    """A built-in type: name in {'bit', 'int', 'varbit', 'bool', 'error', 'match_kind',
    'string', 'void'}. `width` is the width expression for bit<W>/int<W>/varbit<W>; plain
    `bit` is bit<1>; plain `int` (width None) is the infinite-precision integer type."""

    name: str
    width: Optional[Expression] = None


@node("type_args")
class NamedTypeRef(TypeRef):
    """A type referred to by name (typedef, header, struct, enum, extern, parser/control
    type, type variable), optionally specialized: `register<bit<32>, bit<8>>`.
    `is_global` is True for a leading-dot name `.T`. `decl` is the declaration it names."""

    name: str
    type_args: list[TypeRef] = field(default_factory=list)
    is_global: bool = False
    decl: Any = None


@node("element", "size")
class HeaderStackTypeRef(TypeRef):
    """`element[size]`: a header stack (or array of header unions)."""

    element: TypeRef
    size: Expression


@node("elements")
class TupleTypeRef(TypeRef):
    """`tuple<T1, T2, ...>` (also used for `list<T>`, where `is_list` is True)."""

    elements: list[TypeRef] = field(default_factory=list)
    is_list: bool = False


@node()
class DontCareTypeRef(TypeRef):
    """`_` used as a type argument: the type is to be inferred."""


# ---------------------------------------------------------------------------------------------
# Expressions


def iter_nodes(node):
    """Every AST node under `node`, including node, depth first in source order (the
    children each class declares, in declaration order)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        children = []
        for name in n.CHILDREN:
            v = getattr(n, name)
            if isinstance(v, Node):
                children.append(v)
            elif isinstance(v, list):
                children.extend(x for x in v if isinstance(x, Node))
            elif isinstance(v, dict):
                children.extend(x for x in v.values() if isinstance(x, Node))
        stack.extend(reversed(children))
