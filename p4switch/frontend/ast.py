"""Declared abstract syntax tree for P4-16 programs, plus the elaborated pipeline.

Every node has `.loc` (a `Loc`: file, line, col of the original source). The parser builds the
tree; `typecheck.py` fills in the annotation fields that every class declares up front:

* expressions: `.type` (a `types.Type`) and `.const_value` (a Python int/bool/str, or None
  when the expression is not a compile-time constant),
* names: `PathExpression.decl` / `MemberExpression.decl` (the declaration they refer to),
* calls: `MethodCallExpression.callee_decl` and `.call_kind` (see that class),
* type references: `TypeRef.type` (the resolved `types.Type`),
* declarations that introduce a type: `.type`.

The second part of the module (`Pipeline` and friends) is what `elaborate.py` produces from
the program's `main` instantiation: which blocks fill the v1model slots and every
P4Info-visible object with its fully qualified name. The back end and p4info.py read it.

Nodes compare by identity (eq=False) so they can be used as dictionary keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from typing import Any, Optional


def node(cls):
    """Declare an AST node class: keyword-only constructor, identity equality, slots."""
    return dataclass(eq=False, kw_only=True, slots=True)(cls)


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in the original (pre-preprocessing) source: 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_LOC = Loc("<builtin>", 0, 0)


@node
class Node:
    """Base of every AST node. `loc` is where the construct starts in the source."""

    loc: Loc = NO_LOC


# ---------------------------------------------------------------------------------------------
# Annotations
# ---------------------------------------------------------------------------------------------


@node
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

    def string_arg(self) -> Optional[str]:
        """The single string-literal argument (as in @name("x")), or None."""
        if len(self.args) == 1 and isinstance(self.args[0], StringLiteral):
            return self.args[0].value
        return None


def find_annotation(annotations: list[Annotation], name: str) -> Optional[Annotation]:
    """The first annotation called `name`, or None."""
    for ann in annotations:
        if ann.name == name:
            return ann
    return None


# ---------------------------------------------------------------------------------------------
# Type references (types as written in the source)
# ---------------------------------------------------------------------------------------------


@node
class TypeRef(Node):
    """Base of the type syntax nodes. `type` is the resolved `types.Type` after checking."""

    type: Any = None


@node
class BaseTypeRef(TypeRef):
    """A built-in type: name in {'bit', 'int', 'varbit', 'bool', 'error', 'match_kind',
    'string', 'void'}. `width` is the width expression for bit<W>/int<W>/varbit<W>; plain
    `bit` is bit<1>; plain `int` (width None) is the infinite-precision integer type."""

    name: str
    width: Optional[Expression] = None


@node
class NamedTypeRef(TypeRef):
    """A type referred to by name (typedef, header, struct, enum, extern, parser/control
    type, type variable), optionally specialized: `register<bit<32>, bit<8>>`.
    `is_global` is True for a leading-dot name `.T`. `decl` is the declaration it names."""

    name: str
    type_args: list[TypeRef] = field(default_factory=list)
    is_global: bool = False
    decl: Any = None


@node
class HeaderStackTypeRef(TypeRef):
    """`element[size]`: a header stack (or array of header unions)."""

    element: TypeRef
    size: Expression


@node
class TupleTypeRef(TypeRef):
    """`tuple<T1, T2, ...>` (also used for `list<T>`, where `is_list` is True)."""

    elements: list[TypeRef] = field(default_factory=list)
    is_list: bool = False


@node
class DontCareTypeRef(TypeRef):
    """`_` used as a type argument: the type is to be inferred."""


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------


@node
class Expression(Node):
    """Base of expressions. After checking, `type` is a `types.Type`; `const_value` is the
    folded compile-time value, or None when the expression is not a compile-time constant:
    int for integers (already reduced to the width of `type`) and for members of
    serializable enums; the member name (str) for members of plain enums, `error` and
    `match_kind`; bool; str for string literals; a tuple for a list expression and a dict
    field name -> value for a struct-valued expression whose elements are all constant."""

    type: Any = None
    const_value: Any = None


@node
class IntLiteral(Expression):
    """An integer literal. `value` is the (non-negative) magnitude as written; `width` and
    `signed` come from a width prefix like 8w5 / 8s5 (width None: infinite precision `int`).
    `text` is the literal as written."""

    value: int
    width: Optional[int] = None
    signed: bool = False
    text: str = ""


@node
class BoolLiteral(Expression):
    """`true` / `false`."""

    value: bool


@node
class StringLiteral(Expression):
    """A string literal; `value` has the quotes removed and escapes decoded."""

    value: str


@node
class PathExpression(Expression):
    """A bare name (`x`, or `.x` with is_global). `decl` is the declaration it resolves to:
    a Parameter, VariableDecl, ConstantDecl, Instantiation, ActionDecl, FunctionDecl,
    TableDecl, ValueSetDecl, ParserState, extern function/method, or a type declaration
    when the name is a type (as in `error.NoMatch` or `MyEnum.A`)."""

    name: str
    is_global: bool = False
    decl: Any = None


@node
class MemberExpression(Expression):
    """`expr.member`: field of a struct/header/union, header-stack property (next, last,
    lastIndex, size), member of an enum or error, method of an extern/header/stack/table,
    `hit`/`miss`/`action_run` of a table apply result. `decl` is the member's declaration
    when it has one (StructField, EnumMember, MethodPrototype, ...)."""

    expr: Expression
    member: str
    decl: Any = None


@node
class IndexExpression(Expression):
    """`expr[index]`: header stack element (or tuple element with a constant index)."""

    expr: Expression
    index: Expression


@node
class SliceExpression(Expression):
    """`expr[hi:lo]`: bit slice; `hi`/`lo` must be compile-time constants (their
    const_value is set) unless the spec allows otherwise."""

    expr: Expression
    hi: Expression
    lo: Expression


@node
class UnaryExpression(Expression):
    """`op operand` with op in {'!', '~', '-', '+'}."""

    op: str
    operand: Expression


@node
class BinaryExpression(Expression):
    """`left op right`. op in {'*', '/', '%', '+', '-', '|+|', '|-|', '<<', '>>', '<=', '>=',
    '<', '>', '==', '!=', '&', '^', '|', '&&', '||', '++'} ('++' is concatenation)."""

    op: str
    left: Expression
    right: Expression


@node
class MaskExpression(Expression):
    """`value &&& mask` (keysets only)."""

    value: Expression
    mask: Expression


@node
class RangeExpression(Expression):
    """`lo .. hi` (keysets only)."""

    lo: Expression
    hi: Expression


@node
class TernaryExpression(Expression):
    """`cond ? then : else_`."""

    cond: Expression
    then: Expression
    else_: Expression


@node
class CastExpression(Expression):
    """`(type_ref) expr`."""

    type_ref: TypeRef
    expr: Expression


@node
class Argument(Node):
    """One call argument: `value`, or `name = value` for a named argument. `value` may be a
    DontCareExpression (`_`) for an ignored out argument."""

    value: Expression
    name: Optional[str] = None


@node
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


@node
class ConstructorCallExpression(Expression):
    """`Type<args>(args)` used as an expression: an anonymous instantiation, e.g. a
    constructor argument `V1Switch(MyParser(), ...)` or `Checksum16()`. `decl` is the
    type's declaration (ParserDecl, ControlDecl, ExternDecl, PackageTypeDecl)."""

    type_ref: TypeRef
    args: list[Argument] = field(default_factory=list)
    decl: Any = None
    param_args: list = field(default_factory=list)


@node
class ListExpression(Expression):
    """`{e1, e2, ...}`: a tuple/list expression (also the tuple keyset of a select case)."""

    elements: list[Expression] = field(default_factory=list)


@node
class NamedExpression(Node):
    """`name = value` inside a struct-valued expression."""

    name: str
    value: Expression


@node
class StructExpression(Expression):
    """`{a = e1, b = e2}` or `(T){...}`-style typed `T {a = e1}`. `type_ref` is the
    explicit type if written; otherwise the type comes from the context."""

    fields: list[NamedExpression] = field(default_factory=list)
    type_ref: Optional[TypeRef] = None


@node
class InvalidHeaderExpression(Expression):
    """`{#}`: an invalid header (or header union) of the type required by the context."""


@node
class DefaultExpression(Expression):
    """`default` in a select case / table entry keyset."""


@node
class DontCareExpression(Expression):
    """`_`: don't care in a keyset, or an ignored out argument."""


@node
class DotsExpression(Expression):
    """`...`: the remaining fields/arguments are don't care / default."""


# ---------------------------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------------------------


@node
class Statement(Node):
    """Base of statements. Local declarations (VariableDecl, ConstantDecl, and
    Instantiation where allowed) also appear in statement lists."""


@node
class AssignmentStatement(Statement):
    """`lhs = rhs;` (compound forms like `x += e` are expanded to `x = x + e` by the parser,
    with `op` recording the compound operator, '' for plain assignment). In the expanded
    form `rhs.left is lhs` (the very same node): a back end must evaluate the location once,
    as in `a[f()] |= 1` where f has side effects."""

    lhs: Expression
    rhs: Expression
    op: str = ""


@node
class MethodCallStatement(Statement):
    """`call;` where call is a MethodCallExpression."""

    call: MethodCallExpression


@node
class BlockStatement(Statement):
    """`{ statements }` (annotations are allowed before a block)."""

    statements: list[Node] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@node
class IfStatement(Statement):
    """`if (cond) then else else_` (else_ None when absent)."""

    cond: Expression
    then: Statement
    else_: Optional[Statement] = None


@node
class ReturnStatement(Statement):
    """`return;` or `return value;`."""

    value: Optional[Expression] = None


@node
class ExitStatement(Statement):
    """`exit;`."""


@node
class EmptyStatement(Statement):
    """`;`."""


@node
class BreakStatement(Statement):
    """`break;` inside a for loop."""


@node
class ContinueStatement(Statement):
    """`continue;` inside a for loop."""


@node
class SwitchCase(Node):
    """One `label: body` of a switch. `label` is one Expression (a PathExpression naming an
    action for action_run switches, an expression otherwise, or DefaultExpression).
    `body` is None for a fall-through label (`a: b: { ... }`)."""

    label: Expression
    body: Optional[BlockStatement] = None


@node
class SwitchStatement(Statement):
    """`switch (expr) { cases }`. `is_action_run` is True when expr is `t.apply().action_run`."""

    expr: Expression
    cases: list[SwitchCase] = field(default_factory=list)
    is_action_run: bool = False


@node
class ForStatement(Statement):
    """`for (init; cond; updates) body` (P4-16 1.2.5). init/updates are statement lists."""

    init: list[Node] = field(default_factory=list)
    cond: Optional[Expression] = None
    updates: list[Statement] = field(default_factory=list)
    body: Statement = None


@node
class ForInStatement(Statement):
    """`for (type_ref var in collection) body` (P4-16 1.2.5); type_ref may be None when the
    type is omitted. `var` is a VariableDecl for the loop variable."""

    var: VariableDecl
    collection: Expression
    body: Statement = None


# ---------------------------------------------------------------------------------------------
# Declarations
# ---------------------------------------------------------------------------------------------


@node
class Declaration(Node):
    """Base of named declarations. `name` is the source name; `annotations` as written.
    `type` is set by the checker for declarations that introduce or have a type."""

    name: str = ""
    annotations: list[Annotation] = field(default_factory=list)
    type: Any = None

    def annotation(self, name: str) -> Optional[Annotation]:
        """The first annotation called `name`, or None."""
        return find_annotation(self.annotations, name)


@node
class TypeParameter(Declaration):
    """A type variable of a generic declaration (`T` in `extern register<T>`)."""


@node
class Parameter(Declaration):
    """A parameter. direction in {'in', 'out', 'inout', None} (None: directionless);
    `default` is the default value expression if any; `optional` for @optional."""

    direction: Optional[str] = None
    type_ref: TypeRef = None
    default: Optional[Expression] = None
    optional: bool = False


@node
class ConstantDecl(Declaration):
    """`const T name = value;` (top level or local). `value.const_value` holds the folded
    constant after checking."""

    type_ref: TypeRef = None
    value: Expression = None


@node
class VariableDecl(Declaration):
    """`T name [= init];` (local variable)."""

    type_ref: TypeRef = None
    init: Optional[Expression] = None


@node
class TypedefDecl(Declaration):
    """`typedef T name;` or, with is_newtype, `type T name;`."""

    type_ref: TypeRef = None
    is_newtype: bool = False


@node
class StructField(Declaration):
    """A field of a header / header_union / struct."""

    type_ref: TypeRef = None


@node
class StructLikeDecl(Declaration):
    """Common base of header, header_union and struct declarations.
    `type_params` for generic structs/headers (`struct S<T> { T f; }`)."""

    fields: list[StructField] = field(default_factory=list)
    type_params: list[TypeParameter] = field(default_factory=list)

    def field_named(self, name: str) -> Optional[StructField]:
        for f in self.fields:
            if f.name == name:
                return f
        return None


@node
class HeaderDecl(StructLikeDecl):
    """`header name { fields }`."""


@node
class HeaderUnionDecl(StructLikeDecl):
    """`header_union name { fields }`."""


@node
class StructDecl(StructLikeDecl):
    """`struct name { fields }`."""


@node
class EnumMember(Declaration):
    """A member of an enum, error or match_kind declaration; `value` is the explicit
    value expression of a serializable enum member (const_value set after checking)."""

    value: Optional[Expression] = None


@node
class EnumDecl(Declaration):
    """`enum name { A, B }` or serializable `enum bit<8> name { A = 1, B = 2 }`
    (`underlying` is then the TypeRef of the representation type)."""

    members: list[EnumMember] = field(default_factory=list)
    underlying: Optional[TypeRef] = None


@node
class ErrorDecl(Declaration):
    """`error { A, B }` (name is 'error'); several declarations merge into one error type."""

    members: list[EnumMember] = field(default_factory=list)


@node
class MatchKindDecl(Declaration):
    """`match_kind { exact, ternary }` (name is 'match_kind'); declarations merge."""

    members: list[EnumMember] = field(default_factory=list)


@node
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


@node
class ExternFunctionDecl(Declaration):
    """`extern R name<T>(params);` — an extern function."""

    return_type: TypeRef = None
    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)


@node
class ExternDecl(Declaration):
    """`extern name<T> { constructors; methods; }` — an extern object type.
    `constructors` are the MethodPrototypes with is_constructor; `methods` the others
    (several may share a name: overloads by argument count)."""

    type_params: list[TypeParameter] = field(default_factory=list)
    constructors: list[MethodPrototype] = field(default_factory=list)
    methods: list[MethodPrototype] = field(default_factory=list)

    def methods_named(self, name: str) -> list[MethodPrototype]:
        return [m for m in self.methods if m.name == name]


@node
class ParserTypeDecl(Declaration):
    """`parser name<T>(params);` — a parser type (e.g. v1model's `Parser<H, M>`)."""

    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)


@node
class ControlTypeDecl(Declaration):
    """`control name<T>(params);` — a control type (e.g. v1model's `Ingress<H, M>`)."""

    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)


@node
class PackageTypeDecl(Declaration):
    """`package name<T>(params);` — a package type (e.g. `V1Switch<H, M>`)."""

    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)


@node
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


@node
class SelectCase(Node):
    """`keyset : next_state;` in a select. keyset is an Expression: a value, MaskExpression,
    RangeExpression, DefaultExpression, DontCareExpression, a ListExpression for tuple
    keysets, or a PathExpression naming a value_set. `state_decl` is the ParserState
    (or None for the built-in accept/reject)."""

    keyset: Expression
    next_state: str
    state_loc: Loc = NO_LOC
    state_decl: Any = None


@node
class SelectExpression(Expression):
    """`select (exprs) { cases }` — the transition of a parser state."""

    exprs: list[Expression] = field(default_factory=list)
    cases: list[SelectCase] = field(default_factory=list)


@node
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


@node
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
        for s in self.states:
            if s.name == name:
                return s
        return None


@node
class ActionDecl(Declaration):
    """`action name(params) { body }`: directional params come first (supplied by the
    caller), directionless ones last (supplied by the control plane / table entry)."""

    params: list[Parameter] = field(default_factory=list)
    body: BlockStatement = None


@node
class FunctionDecl(Declaration):
    """`R name<T>(params) { body }` — a function (top level, or abstract-method
    implementation in an Instantiation initializer)."""

    return_type: TypeRef = None
    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    body: BlockStatement = None


@node
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


@node
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


@node
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


@node
class TableProperty(Node):
    """A table property not given its own field (e.g. size, implementation, counters,
    meters, support_timeout, largest_priority_wins, priority_delta, or a custom one).
    `value` is an Expression."""

    name: str
    value: Expression = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@node
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


@node
class ValueSetDecl(Declaration):
    """`value_set<T>(size) name;` (parser local)."""

    type_ref: TypeRef = None
    size: Expression = None


@node
class ControlDecl(Declaration):
    """`control name(params)(ctor_params) { locals apply { body } }`. `locals` holds local
    declarations: constants, variables, actions, tables, instantiations, functions."""

    type_params: list[TypeParameter] = field(default_factory=list)
    params: list[Parameter] = field(default_factory=list)
    ctor_params: list[Parameter] = field(default_factory=list)
    locals: list[Node] = field(default_factory=list)
    body: BlockStatement = None


@node
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


_NOT_CHILDREN = frozenset(("type", "decl", "callee_decl", "state_decl", "next_decl", "loc",
                           "match_kind_decl", "param_args", "resolved_type_args", "const_value",
                           "extern"))


def iter_nodes(node):
    """Every AST node under `node`, including node, depth first in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        children = []
        for f in dc_fields(n):
            if f.name in _NOT_CHILDREN:
                continue
            v = getattr(n, f.name)
            if isinstance(v, Node):
                children.append(v)
            elif isinstance(v, list):
                children.extend(x for x in v if isinstance(x, Node))
            elif isinstance(v, dict):
                children.extend(x for x in v.values() if isinstance(x, Node))
        stack.extend(reversed(children))


# ---------------------------------------------------------------------------------------------
# Elaboration results (produced by elaborate.py, read by the back end and p4info.py)
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False, kw_only=True, slots=True)
class BlockInstance:
    """One instance of a parser or control in the elaborated program.

    decl:      the ParserDecl / ControlDecl.
    name:      fully qualified instance name used as the prefix of its objects, as p4c names
               them: the declaration name for a block passed to the package (e.g.
               "MyIngress"), "<Outer>.<instance>" for a nested instance.
    ctor_args: constructor parameter name -> value (a Python int/bool/str constant, a
               BlockInstance, or an ExternInstance).
    children:  instance name (as declared locally) -> BlockInstance of a nested
               parser/control instantiated in this block.
    tables:    local table name -> TableInfo.
    actions:   local action name -> ActionInfo (actions declared in this block).
    externs:   local instance name -> ExternInstance (extern objects declared in this block).
    value_sets: local name -> ValueSetInfo (parser value sets declared in this block).
    """

    decl: Any
    name: str
    ctor_args: dict[str, Any] = field(default_factory=dict)
    children: dict[str, BlockInstance] = field(default_factory=dict)
    tables: dict[str, TableInfo] = field(default_factory=dict)
    actions: dict[str, ActionInfo] = field(default_factory=dict)
    externs: dict[str, ExternInstance] = field(default_factory=dict)
    value_sets: dict[str, ValueSetInfo] = field(default_factory=dict)


@dataclass(eq=False, kw_only=True, slots=True)
class ActionParamInfo:
    """A control-plane action parameter: P4Info name, bit width, annotations."""

    name: str
    bitwidth: int
    decl: Any = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, slots=True)
class ActionInfo:
    """An action as P4Info sees it. name: fully qualified ("MyIngress.drop", or "NoAction"
    for a top-level action). params: the directionless parameters. block: the
    BlockInstance it was declared in (None for top-level actions)."""

    name: str
    decl: Any
    params: list[ActionParamInfo] = field(default_factory=list)
    block: Optional[BlockInstance] = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, slots=True)
class KeyFieldInfo:
    """A table key field: P4Info name (the key expression text, e.g. "hdr.ipv4.dstAddr",
    or the @name annotation), match kind name, bit width, and the key expression."""

    name: str
    match_kind: str
    bitwidth: int
    expr: Any = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, slots=True)
class TableActionInfo:
    """An action listed in a table. scope in {'TABLE_AND_DEFAULT', 'TABLE_ONLY',
    'DEFAULT_ONLY'} (from @tableonly / @defaultonly)."""

    action: ActionInfo
    scope: str = "TABLE_AND_DEFAULT"
    ref: Any = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, slots=True)
class TableInfo:
    """A table as P4Info and the back end see it.

    name:            fully qualified name ("MyIngress.ipv4_lpm").
    keys:            list of KeyFieldInfo.
    actions:         list of TableActionInfo in declaration order; a table without
                     default_action that does not list NoAction gets it appended as
                     DEFAULT_ONLY (with ref None).
    default_action:  ActionInfo of the default action (NoAction when not given).
    default_args:    list of Expression (typed, with const_value) for its directionless
                     (control-plane) parameters; directional arguments, as in
                     `default_action = my_drop(standard_metadata)`, are in
                     decl.default_action.param_args.
    default_is_const: True for `const default_action`.
    const_entries:   the TableEntry nodes (const or initial entries), [] if none.
    entries_const:   True when `entries` was declared const.
    size:            declared size, or None.
    implementation:  ExternInstance of an action profile/selector, or None.
    direct_counter / direct_meter: ExternInstance of the direct counter/meter, or None.
    largest_priority_wins / priority_delta: from the properties (defaults True / 1).
    idle_timeout:    support_timeout property value (bool).
    """

    name: str
    decl: Any
    block: Optional[BlockInstance] = None
    keys: list[KeyFieldInfo] = field(default_factory=list)
    actions: list[TableActionInfo] = field(default_factory=list)
    default_action: Optional[ActionInfo] = None
    default_args: list = field(default_factory=list)
    default_is_const: bool = False
    const_entries: list = field(default_factory=list)
    entries_const: bool = True
    size: Optional[int] = None
    implementation: Optional[ExternInstance] = None
    direct_counter: Optional[ExternInstance] = None
    direct_meter: Optional[ExternInstance] = None
    largest_priority_wins: bool = True
    priority_delta: int = 1
    idle_timeout: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, slots=True)
class ExternInstance:
    """An instance of an extern object.

    name:        fully qualified name ("MyIngress.reg").
    extern:      extern type name ("register", "counter", "direct_counter", "meter",
                 "direct_meter", "action_profile", "action_selector", "Checksum16", ...).
    decl:        the Instantiation node (None for anonymous constructor-call instances).
    extern_decl: the ExternDecl.
    type_args:   list of `types.Type` (e.g. [bit<32>, bit<8>] for register<bit<32>, bit<8>>).
    args:        constructor parameter name -> constant value (int/bool/str, enum member name
                 for enums such as CounterType.packets -> "packets", or ExternInstance).
    size:        the `size` argument when the extern has one (counters, meters, registers,
                 action profiles), else None.
    element_width: for registers, the bit width of T; else None.
    owner_table: for direct counters/meters, the TableInfo that uses it.
    """

    name: str
    extern: str
    decl: Any = None
    extern_decl: Any = None
    block: Optional[BlockInstance] = None
    type_args: list = field(default_factory=list)
    args: dict[str, Any] = field(default_factory=dict)
    size: Optional[int] = None
    element_width: Optional[int] = None
    owner_table: Optional[TableInfo] = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True, slots=True)
class ValueSetInfo:
    """A parser value_set: fully qualified `name`, `size`, `element_type` (a `types.Type`:
    bit<W> or a struct of fields, each a match field) and the ValueSetDecl."""

    name: str
    decl: Any
    size: int
    element_type: Any
    block: Optional[BlockInstance] = None


@dataclass(eq=False, kw_only=True, slots=True)
class DigestInfo:
    """A digest: name is the struct type name of the data passed to digest(), `type` the
    `types.StructType`, `calls` the MethodCallExpressions of digest() using it."""

    name: str
    type: Any
    calls: list = field(default_factory=list)


@dataclass(eq=False, kw_only=True, slots=True)
class ControllerHeaderInfo:
    """A header annotated @controller_header("packet_in"|"packet_out"): `name` is the
    annotation's string, `type` the `types.HeaderType` (fields with widths)."""

    name: str
    type: Any
    decl: Any = None


@dataclass(eq=False, kw_only=True, slots=True)
class Pipeline:
    """The elaborated v1model pipeline of `main = V1Switch(p, vr, ig, eg, ck, dep)`.

    package:      the package type name ("V1Switch").
    main:         the `main` Instantiation.
    slots:        package parameter name -> BlockInstance in parameter order
                  (for v1model: 'p', 'vr', 'ig', 'eg', 'ck', 'dep').
    parser, verify_checksum, ingress, egress, compute_checksum, deparser: the same
                  BlockInstances by role.
    headers_type / metadata_type: the `types.Type` bound to V1Switch's H and M.
    tables, actions, externs: every P4Info-visible object, in a stable order (program
                  order of the instances); `actions` holds the actions tables use,
                  including top-level ones (e.g. "NoAction"), one per name.
    counters / direct_counters / meters / direct_meters / registers / action_profiles:
                  the ExternInstances of each kind, filtered from `externs`.
    digests:      list of DigestInfo.
    controller_headers: list of ControllerHeaderInfo.
    value_sets:   list of ValueSetInfo (parser value sets).
    """

    package: str
    main: Any
    slots: dict[str, BlockInstance] = field(default_factory=dict)
    parser: Optional[BlockInstance] = None
    verify_checksum: Optional[BlockInstance] = None
    ingress: Optional[BlockInstance] = None
    egress: Optional[BlockInstance] = None
    compute_checksum: Optional[BlockInstance] = None
    deparser: Optional[BlockInstance] = None
    headers_type: Any = None
    metadata_type: Any = None
    tables: list[TableInfo] = field(default_factory=list)
    actions: list[ActionInfo] = field(default_factory=list)
    externs: list[ExternInstance] = field(default_factory=list)
    digests: list[DigestInfo] = field(default_factory=list)
    controller_headers: list[ControllerHeaderInfo] = field(default_factory=list)
    value_sets: list[ValueSetInfo] = field(default_factory=list)

    def externs_of(self, *kinds: str) -> list[ExternInstance]:
        return [e for e in self.externs if e.extern in kinds]

    @property
    def counters(self) -> list[ExternInstance]:
        return self.externs_of("counter")

    @property
    def direct_counters(self) -> list[ExternInstance]:
        return self.externs_of("direct_counter")

    @property
    def meters(self) -> list[ExternInstance]:
        return self.externs_of("meter")

    @property
    def direct_meters(self) -> list[ExternInstance]:
        return self.externs_of("direct_meter")

    @property
    def registers(self) -> list[ExternInstance]:
        return self.externs_of("register")

    @property
    def action_profiles(self) -> list[ExternInstance]:
        return self.externs_of("action_profile", "action_selector")

    def table(self, name: str) -> TableInfo:
        """The table with this fully qualified name (KeyError if none)."""
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def action(self, name: str) -> ActionInfo:
        """The action with this fully qualified name (KeyError if none)."""
        for a in self.actions:
            if a.name == name:
                return a
        raise KeyError(name)
