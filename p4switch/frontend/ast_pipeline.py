"""What `elaborate.py` produces from the program's `main` instantiation: the blocks that
fill the v1model slots and every P4Info-visible object with its fully qualified name. The
back ends and p4info.py read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .ast_core import Annotation, first_named


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


def _externs_of_kind(*kinds: str) -> property:
    """A Pipeline property: its ExternInstances of these extern kinds."""
    return property(lambda self: self.externs_of(*kinds))


def _named(items, name: str):
    """The first of `items` called `name` (KeyError if none)."""
    found = first_named(items, name)
    if found is None:
        raise KeyError(name)
    return found


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
    called_actions: ActionInfo of the actions a reachable block calls directly (not through
                  a table, nor from another action's body) that `actions` does not hold;
                  P4Info lists them too, as p4c does.
    warnings:     `FILE:LINE:COL: warning: ...` lines (e.g. a direct counter no table uses).
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
    called_actions: list[ActionInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def externs_of(self, *kinds: str) -> list[ExternInstance]:
        return [e for e in self.externs if e.extern in kinds]

    counters = _externs_of_kind("counter")
    direct_counters = _externs_of_kind("direct_counter")
    meters = _externs_of_kind("meter")
    direct_meters = _externs_of_kind("direct_meter")
    registers = _externs_of_kind("register")
    action_profiles = _externs_of_kind("action_profile", "action_selector")

    def table(self, name: str) -> TableInfo:
        """The table with this fully qualified name (KeyError if none)."""
        return _named(self.tables, name)

    def action(self, name: str) -> ActionInfo:
        """The action with this fully qualified name (KeyError if none)."""
        return _named(self.actions, name)
