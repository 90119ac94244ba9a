"""Declaration nodes of the P4-16 syntax tree (types, externs, parsers, controls,
actions, tables) and `Program`."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Optional

from .ast_core import NO_LOC, Annotation, Loc, Node, TypeRef, find_annotation, first_named, node
from .ast_expressions import Argument, Expression
from .ast_statements import BlockStatement

if TYPE_CHECKING:
    from .ast_pipeline import Pipeline



@node("annotations")
class Declaration(Node):
    """Base of named declarations. `name` is the source name; `annotations` as written.
    `type` is set by the checker for declarations that introduce or have a type."""

    name: str = ""
    annotations: list[Annotation] = field(default_factory=list)
    type: Any = None

    def annotation(self, name: str) -> Optional[Annotation]:
        """The first annotation called `name`, or None."""
        return find_annotation(self.annotations, name)


@node()
class TypeParameter(Declaration):
    """A type variable of a generic declaration (`T` in `extern register<T>`)."""


@node("type_ref", "default")
class Parameter(Declaration):
    """A parameter. direction in {'in', 'out', 'inout', None} (None: directionless);
    `default` is the default value expression if any; `optional` for @optional."""

    direction: Optional[str] = None
    type_ref: TypeRef = None
    default: Optional[Expression] = None
    optional: bool = False


@node("type_ref", "value")
class ConstantDecl(Declaration):
    """`const T name = value;` (top level or local). `value.const_value` holds the folded
    constant after checking."""

    type_ref: TypeRef = None
    value: Expression = None


@node("type_ref", "init")
class VariableDecl(Declaration):
    """`T name [= init];` (local variable)."""

    type_ref: TypeRef = None
    init: Optional[Expression] = None


@node("type_ref")
class TypedefDecl(Declaration):
    """`typedef T name;` or, with is_newtype, `type T name;`."""

    type_ref: TypeRef = None
    is_newtype: bool = False


@node("type_ref")
class StructField(Declaration):
    """A field of a header / header_union / struct."""

    type_ref: TypeRef = None


@node("type_params", "fields")
class StructLikeDecl(Declaration):
    """Common base of header, header_union and struct declarations.
    `type_params` for generic structs/headers (`struct S<T> { T f; }`)."""

    fields: list[StructField] = field(default_factory=list)
    type_params: list[TypeParameter] = field(default_factory=list)

    def field_named(self, name: str) -> Optional[StructField]:
        return first_named(self.fields, name)


@node()
class HeaderDecl(StructLikeDecl):
    """`header name { fields }`."""


@node()
class HeaderUnionDecl(StructLikeDecl):
    """`header_union name { fields }`."""


@node()
class StructDecl(StructLikeDecl):
    """`struct name { fields }`."""


@node("value")
class EnumMember(Declaration):
    """A member of an enum, error or match_kind declaration; `value` is the explicit
    value expression of a serializable enum member (const_value set after checking)."""

    value: Optional[Expression] = None


@node("underlying", "members")
class EnumDecl(Declaration):
    """`enum name { A, B }` or serializable `enum bit<8> name { A = 1, B = 2 }`
    (`underlying` is then the TypeRef of the representation type)."""

    members: list[EnumMember] = field(default_factory=list)
    underlying: Optional[TypeRef] = None


@node("members")
class ErrorDecl(Declaration):
    """`error { A, B }` (name is 'error'); several declarations merge into one error type."""

    members: list[EnumMember] = field(default_factory=list)


@node("members")
class MatchKindDecl(Declaration):
    """`match_kind { exact, ternary }` (name is 'match_kind'); declarations merge."""

    members: list[EnumMember] = field(default_factory=list)


@node("return_type", "type_params", "params")
class MethodPrototype(Declaration):
    """A method of an extern object (or a constructor when is_constructor, with name equal to
    the extern's name). `is_abstract` for `abstract` methods implemented by the instance's
    initializer block."""

    return_type: Optional[TypeRef] = None
    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    is_abstract: bool = False
    is_constructor: bool = False
    extern: Any = None  # the ExternDecl this method belongs to


@node("return_type", "type_params", "params")
class ExternFunctionDecl(Declaration):
    """`extern R name<T>(params);` — an extern function."""

    return_type: TypeRef = None
    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)


@node("type_params", "constructors", "methods")
class ExternDecl(Declaration):
    """`extern name<T> { constructors; methods; }` — an extern object type.
    `constructors` are the MethodPrototypes with is_constructor; `methods` the others
    (several may share a name: overloads by argument count)."""

    type_params: list[TypeParameter] = field(default_factory=list)
    constructors: list[MethodPrototype] = field(default_factory=list)
    methods: list[MethodPrototype] = field(default_factory=list)

    def methods_named(self, name: str) -> list[MethodPrototype]:
        return [m for m in self.methods if m.name == name]


@node("type_params", "params")
class BlockTypeDecl(Declaration):
    """Base of the parser, control and package types: `keyword name<T>(params);`."""

    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)


@node()
class ParserTypeDecl(BlockTypeDecl):
    """`parser name<T>(params);` — a parser type (e.g. v1model's `Parser<H, M>`)."""


@node()
class ControlTypeDecl(BlockTypeDecl):
    """`control name<T>(params);` — a control type (e.g. v1model's `Ingress<H, M>`)."""


@node()
class PackageTypeDecl(BlockTypeDecl):
    """`package name<T>(params);` — a package type (e.g. `V1Switch<H, M>`)."""


@node("type_ref", "args", "initializer")
class Instantiation(Declaration):
    """`@annotations Type<type args>(args) name;` — an instance of an extern, parser,
    control or package (top-level `main`, or locals of parsers/controls).
    `initializer` holds the abstract-method implementations (`{ ... }` block of
    FunctionDecls) if present. `decl` is the instantiated type's declaration."""

    type_ref: TypeRef = None
    args: list[Argument] = field(default_factory=list)
    initializer: list[Node] = field(default_factory=list)
    decl: Any = None
    param_args: list = field(default_factory=list)


@node("keyset")
class SelectCase(Node):
    """`keyset : next_state;` in a select. keyset is an Expression: a value, MaskExpression,
    RangeExpression, DefaultExpression, DontCareExpression, a ListExpression for tuple
    keysets, or a PathExpression naming a value_set. `state_decl` is the ParserState
    (or None for the built-in accept/reject)."""

    keyset: Expression
    next_state: str
    state_loc: Loc = NO_LOC
    state_decl: Any = None


@node("exprs", "cases")
class SelectExpression(Expression):
    """`select (exprs) { cases }` — the transition of a parser state."""

    exprs: list[Expression] = field(default_factory=list)
    cases: list[SelectCase] = field(default_factory=list)


@node("statements", "select")
class ParserState(Declaration):
    """`state name { statements transition ...; }`. Exactly one of `next_state` (direct
    transition; 'accept'/'reject' allowed) and `select` is set, or neither when the state
    has no transition statement (then it goes to reject, per the spec). `next_decl` is the
    target ParserState of a direct transition (None for accept/reject)."""

    statements: list[Node] = field(default_factory=list)
    next_state: Optional[str] = None
    next_loc: Loc = NO_LOC
    next_decl: Any = None
    select: Optional[SelectExpression] = None


@node("type_params", "params", "ctor_params", "locals", "states")
class ParserDecl(Declaration):
    """`parser name(params)(ctor_params) { locals states }`. `locals` holds local
    declarations (constants, variables, instantiations, value sets); `states` the states
    in declaration order (the built-in accept/reject are not listed)."""

    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    ctor_params: list[Parameter] = field(default_factory=list)
    locals: list[Node] = field(default_factory=list)
    states: list[ParserState] = field(default_factory=list)

    def state_named(self, name: str) -> Optional[ParserState]:
        return first_named(self.states, name)


@node("params", "body")
class ActionDecl(Declaration):
    """`action name(params) { body }`: directional params come first (supplied by the
    caller), directionless ones last (supplied by the control plane / table entry)."""

    params: list[Parameter] = field(default_factory=list)
    body: BlockStatement = None


@node("return_type", "type_params", "params", "body")
class FunctionDecl(Declaration):
    """`R name<T>(params) { body }` — a function (top level, or abstract-method
    implementation in an Instantiation initializer)."""

    return_type: TypeRef = None
    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    body: BlockStatement = None


@node("expr", "annotations")
class KeyElement(Node):
    """`expr : match_kind @annotations;` in a table key. `match_kind_decl` is the
    EnumMember of the match_kind declaration after checking."""

    expr: Expression
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)
    match_kind_loc: Loc = NO_LOC
    match_kind_decl: Any = None

    def annotation(self, name: str) -> Optional[Annotation]:
        return find_annotation(self.annotations, name)


@node("args", "annotations")
class ActionRef(Node):
    """A reference to an action in a table: `name` or `name(args)` (in `actions = {...}`,
    `default_action = ...`, and const entries). `decl` is the ActionDecl after checking.
    `annotations` e.g. @tableonly / @defaultonly. `param_args` is [(Parameter, Expression)]
    for the arguments given (directional ones in the actions list; directionless ones in
    default_action and entries)."""

    name: str
    args: list[Argument] = field(default_factory=list)
    has_parens: bool = False
    is_global: bool = False
    annotations: list[Annotation] = field(default_factory=list)
    decl: Any = None
    param_args: list = field(default_factory=list)

    def annotation(self, name: str) -> Optional[Annotation]:
        return find_annotation(self.annotations, name)


@node("keys", "action", "priority", "annotations")
class TableEntry(Node):
    """A const/initial entry: `keyset : action(args);` with optional `priority = N:` prefix
    (or the older `@priority(N)` annotation, which also sets `priority`).
    `keys` has one Expression per key element (a single-key entry is still a one-element
    list); a keyset of `default`/`_` applies to all keys."""

    keys: list[Expression] = field(default_factory=list)
    action: ActionRef = None
    priority: Optional[Expression] = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@node("value", "annotations")
class TableProperty(Node):
    """A table property not given its own field (e.g. size, implementation, counters,
    meters, support_timeout, largest_priority_wins, priority_delta, or a custom one).
    `value` is an Expression."""

    name: str
    value: Expression = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@node("key", "actions", "default_action", "entries", "properties")
class TableDecl(Declaration):
    """`table name { properties }`.

    key:              list of KeyElement ([] for a keyless table).
    actions:          list of ActionRef from `actions = { ... }`.
    default_action:   ActionRef or None (None: NoAction per the spec, if listed).
    default_is_const: `const default_action`.
    entries:          list of TableEntry from `entries = { ... }` / `const entries`.
    entries_const:    True for `const entries` (the usual form).
    properties:       dict name -> TableProperty for every other property (size,
                      implementation, counters, meters, largest_priority_wins,
                      priority_delta, ...).
    """

    key: list[KeyElement] = field(default_factory=list)
    actions: list[ActionRef] = field(default_factory=list)
    default_action: Optional[ActionRef] = None
    default_is_const: bool = False
    entries: list[TableEntry] = field(default_factory=list)
    entries_const: bool = True
    has_entries: bool = False
    properties: dict[str, TableProperty] = field(default_factory=dict)

    def property_value(self, name: str) -> Optional[Expression]:
        prop = self.properties.get(name)
        return prop.value if prop else None


@node("type_ref", "size")
class ValueSetDecl(Declaration):
    """`value_set<T>(size) name;` (parser local)."""

    type_ref: TypeRef = None
    size: Expression = None


@node("type_params", "params", "ctor_params", "locals", "body")
class ControlDecl(Declaration):
    """`control name(params)(ctor_params) { locals apply { body } }`. `locals` holds local
    declarations: constants, variables, actions, tables, instantiations, functions."""

    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    ctor_params: list[Parameter] = field(default_factory=list)
    locals: list[Node] = field(default_factory=list)
    body: BlockStatement = None


@node("declarations")
class Program(Node):
    """A whole program: `declarations` in source order (including those from core.p4 and
    v1model.p4). After `load()`: `main` is the top-level Instantiation named main and
    `pipeline` the elaborated `Pipeline` (a program without `main` is a CompileError at
    `end_loc`, the end of the main source file, where `main` is usually declared)."""

    declarations: list[Node] = field(default_factory=list)
    end_loc: Optional[Loc] = None
    main: Optional[Instantiation] = None
    pipeline: Optional[Pipeline] = None
    source_files: list[str] = field(default_factory=list)

    def find(self, name: str) -> Optional[Node]:
        """The top-level declaration called `name` (the last one, if several)."""
        found = None
        for decl in self.declarations:
            if getattr(decl, "name", None) == name:
                found = decl
        return found
