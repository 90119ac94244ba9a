"""P4-16 semantic types, as computed by the type checker.

Every checked expression's `.type` is one of these classes. Types compare structurally where
the spec says so (bit<8> == bit<8>) and by declaration identity for nominal types (two
structs with the same fields are still different types).

`bit_width(t)` gives the serialized width of a fixed-width type (used for header fields,
key fields, action parameters, register elements).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


class Type:
    """Base of all P4 types."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


# Types that compare by their parameters (bit<8> == bit<8>): equality and hash come from
# their fields; each writes its own __str__, which Type.__repr__ shows.
_structural = dataclass(eq=True, unsafe_hash=True, repr=False, slots=True)


@_structural
class BitsType(Type):
    """`bit<W>` (signed False) or `int<W>` (signed True). `bool`-like `bit<1>` is still bits."""

    width: int
    signed: bool = False

    def __str__(self):
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def wrap(self, value: int) -> int:
        """`value` reduced to this type's range (two's complement for int<W>)."""
        value &= self.mask
        if self.signed and self.width and value >> (self.width - 1):
            value -= 1 << self.width
        return value


@_structural
class VarbitType(Type):
    """`varbit<W>`: up to `max_width` bits."""

    max_width: int

    def __str__(self):
        return f"varbit<{self.max_width}>"


class _Singleton(Type):
    """A type with no parameters; one instance per class."""

    __slots__ = ()
    NAME = "?"

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(self.NAME)

    def __str__(self):
        return self.NAME


class IntType(_Singleton):
    """The infinite-precision integer type `int` of unsized literals and constants."""

    NAME = "int"


class BoolType(_Singleton):
    """`bool` (serialized as one bit)."""

    NAME = "bool"


class StringType(_Singleton):
    """`string` (compile-time only, e.g. log_msg's message)."""

    NAME = "string"


class VoidType(_Singleton):
    """`void`: the result type of calls that return nothing."""

    NAME = "void"


class DontCareType(_Singleton):
    """Type of `_` (matches anything)."""

    NAME = "_"


class StateType(_Singleton):
    """Type of a parser state name."""

    NAME = "state"


class NominalType(Type):
    """A type identified by its declaration (and type arguments for generic ones)."""

    __slots__ = ("name", "decl", "type_args")

    def __init__(self, name: str, decl: Any, type_args: tuple = ()):
        self.name = name
        self.decl = decl
        self.type_args = tuple(type_args)

    def __eq__(self, other):
        return (type(other) is type(self) and other.decl is self.decl
                and other.type_args == self.type_args)

    def __hash__(self):
        return hash((type(self).__name__, id(self.decl), self.type_args))

    def __str__(self):
        if self.type_args:
            return f"{self.name}<{', '.join(map(str, self.type_args))}>"
        return self.name


class ErrorType(NominalType):
    """The `error` type; `members` is the merged list of error member names."""

    __slots__ = ("members",)

    def __init__(self, members: list[str]):
        super().__init__("error", None)
        self.members = members

    def __eq__(self, other):
        return isinstance(other, ErrorType)

    def __hash__(self):
        return hash("error")


class MatchKindType(NominalType):
    """The `match_kind` type; `members` is the merged list of match kind names."""

    __slots__ = ("members",)

    def __init__(self, members: list[str]):
        super().__init__("match_kind", None)
        self.members = members

    def __eq__(self, other):
        return isinstance(other, MatchKindType)

    def __hash__(self):
        return hash("match_kind")


class EnumType(NominalType):
    """An enum. `members` the member names in order; for a serializable enum `underlying`
    is its BitsType and `values` maps member name -> int."""

    __slots__ = ("members", "underlying", "values")

    def __init__(self, name, decl, members, underlying: Optional[BitsType] = None,
                 values: Optional[dict[str, int]] = None):
        super().__init__(name, decl)
        self.members = members
        self.underlying = underlying
        self.values = values if values is not None else {}


class NewType(NominalType):
    """A `type T N;` declaration: a distinct type represented as `base`."""

    __slots__ = ("base",)

    def __init__(self, name, decl, base: Type):
        super().__init__(name, decl)
        self.base = base


class StructLikeType(NominalType):
    """Common base of struct, header and header_union types. `fields` is a list of
    (name, Type) in declaration order (type arguments already substituted)."""

    __slots__ = ("fields", "_index")

    def __init__(self, name, decl, fields: list[tuple[str, Type]], type_args: tuple = ()):
        super().__init__(name, decl, type_args)
        self.fields = fields
        self._index = {n: t for n, t in fields}

    def field_type(self, name: str) -> Optional[Type]:
        return self._index.get(name)

    def field_names(self) -> list[str]:
        return [n for n, _ in self.fields]


class StructType(StructLikeType):
    """A struct type."""


class HeaderType(StructLikeType):
    """A header type (fields are bit<W>, int<W>, varbit<W>, bool, serializable enums)."""

    @property
    def width(self) -> int:
        """Total width in bits (varbit fields count their maximum)."""
        return sum(bit_width(t) for _, t in self.fields)


class HeaderUnionType(StructLikeType):
    """A header_union type (every field is a header)."""


@_structural
class StackType(Type):
    """`element[size]`: a header stack (or array of header unions)."""

    element: Type
    size: int

    def __str__(self):
        return f"{self.element}[{self.size}]"


@_structural
class TupleType(Type):
    """`tuple<T...>`, and the type of a list expression `{a, b}` (any iterable of types)."""

    elements: tuple

    def __post_init__(self):
        self.elements = tuple(self.elements)

    def __str__(self):
        return f"tuple<{', '.join(map(str, self.elements))}>"


@_structural
class ListType(Type):
    """`list<T>` (P4-16 1.2.5): any number of T values (a list expression cast to it)."""

    element: Type

    def __str__(self):
        return f"list<{self.element}>"


class StructExpressionType(Type):
    """Type of an untyped struct-valued expression `{a = 1, b = x}` before its target type
    is known: `fields` a list of (name, Type)."""

    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = list(fields)

    def __str__(self):
        return "{" + ", ".join(f"{n} = {t}" for n, t in self.fields) + "}"


@_structural
class SetType(Type):
    """`set<T>`: the type of a keyset expression (mask, range, value_set)."""

    element: Type

    def __str__(self):
        return f"set<{self.element}>"


@_structural
class TypeVar(Type):
    """A type parameter of a generic declaration (identity = its TypeParameter node, which
    compares by identity)."""

    name: str = field(compare=False)
    decl: Any

    def __str__(self):
        return self.name


class ExternType(NominalType):
    """An extern object type, possibly specialized (`register<bit<32>, bit<32>>`)."""


class ParserType(NominalType):
    """A parser type or parser declaration's type. `params` are the apply parameters."""

    __slots__ = ("params",)

    def __init__(self, name, decl, params=(), type_args=()):
        super().__init__(name, decl, type_args)
        self.params = list(params)


class ControlType(ParserType):
    """A control type or control declaration's type."""


class PackageType(ParserType):
    """A package type (`V1Switch<H, M>`); `params` are its constructor parameters."""


class TableType(NominalType):
    """The type of a table name (has an `apply()` method)."""


class TableResultType(NominalType):
    """The struct-like result of `t.apply()`: fields hit, miss (bool), action_run."""


class ActionEnumType(NominalType):
    """The type of `t.apply().action_run`: an enum of the table's actions."""


class ActionType(NominalType):
    """The type of an action or function name (callable)."""


# Singletons for the parameterless types.
INT = IntType()
BOOL = BoolType()
STRING = StringType()
VOID = VoidType()
DONTCARE = DontCareType()
STATE = StateType()


def bit(width: int) -> BitsType:
    return BitsType(width, False)


def signed(width: int) -> BitsType:
    return BitsType(width, True)


def strip_newtype(t: Type) -> Type:
    """The representation of a `type`-declared type (itself for others)."""
    while isinstance(t, NewType):
        t = t.base
    return t


def scalar_width(t: Type) -> int | None:
    """Width in bits of a scalar type that has one (bits, bool, serializable enum), else None."""
    t = strip_newtype(t)
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying.width
    return None


def bit_width(t: Type) -> int:
    """Serialized width in bits of a fixed-size type (ValueError for others)."""
    width = scalar_width(t)
    if width is not None:
        return width
    t = strip_newtype(t)
    if isinstance(t, VarbitType):
        return t.max_width
    if isinstance(t, (StructType, HeaderType)):
        return sum(bit_width(ft) for _, ft in t.fields)
    if isinstance(t, StackType):
        return t.size * bit_width(t.element)
    raise ValueError(f"type {t} has no fixed bit width")


def is_integer(t: Type) -> bool:
    """bit<W>, int<W> or the infinite-precision int."""
    return isinstance(strip_newtype(t), (BitsType, IntType))
