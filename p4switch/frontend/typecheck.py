"""Name resolution, type checking and constant folding for a parsed P4-16 program.

`check_program(program)` walks the declarations in order (P4 requires declaration before
use) and annotates the AST in place:

* every expression gets `.type` (a `types.Type`); integer literals and other
  infinite-precision constants take the width their context requires (the assignment
  target, the other operand, the parameter type, ...); `.const_value` holds the folded
  compile-time value (ints already reduced to the expression's width);
* names get `.decl`, calls `.callee_decl`/`.call_kind`/`.builtin`/`.param_args`,
  type references `.type`, declarations `.type`.

Violations raise CompileError at the offending expression. Constructs the switch does not
support raise CompileError naming the construct.
"""

from __future__ import annotations

from . import ast as A
from . import types as T
from .errors import CompileError
from .printer import expr_text

TYPE_DECLS = (A.TypedefDecl, A.StructLikeDecl, A.EnumDecl, A.ExternDecl, A.ParserTypeDecl,
              A.ControlTypeDecl, A.PackageTypeDecl, A.ParserDecl, A.ControlDecl, A.TypeParameter)

OVERLOADABLE = (A.ExternFunctionDecl, A.FunctionDecl, A.MethodPrototype)


def unsupported(loc, what: str):
    raise CompileError(loc, f"unsupported: {what} is not supported by p4switch")


class Scope:
    """A lexical scope: name -> list of declarations (several only for overloads)."""

    __slots__ = ("names", "parent")

    def __init__(self, parent=None):
        self.names: dict[str, list] = {}
        self.parent = parent

    def declare(self, name: str, decl, loc=None):
        existing = self.names.get(name)
        if existing:
            if isinstance(decl, OVERLOADABLE) and all(isinstance(d, OVERLOADABLE) for d in existing):
                existing.append(decl)
                return
            raise CompileError(loc or decl.loc, f"'{name}' is already declared")
        self.names[name] = [decl]

    def lookup(self, name: str):
        scope = self
        while scope is not None:
            found = scope.names.get(name)
            if found:
                return found
            scope = scope.parent
        return None

    def lookup_type(self, name: str):
        """The innermost declaration of `name` that is a type (values may shadow types
        in expressions, as a parameter `hdr` of a header type `hdr` does, but not in types)."""
        scope = self
        while scope is not None:
            found = scope.names.get(name)
            if found and _is_type_decl(found[0]):
                return found
            scope = scope.parent
        return self.lookup(name)

    def root(self):
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


class Context:
    """Where the checker is: the enclosing block kind and function return type."""

    __slots__ = ("kind", "return_type", "in_loop", "block")

    def __init__(self, kind: str, return_type=None, block=None):
        self.kind = kind          # 'top', 'parser', 'control', 'action', 'function'
        self.return_type = return_type
        self.in_loop = False
        self.block = block


def _is_type_decl(d) -> bool:
    return isinstance(d, TYPE_DECLS)


class Checker:
    """The type checker. One instance per program."""

    def __init__(self, program: A.Program):
        self.program = program
        self.top = Scope()
        self.error_type = T.ErrorType([])
        self.match_kind_type = T.MatchKindType([])
        self.error_members: dict[str, A.EnumMember] = {}
        self.match_kinds: dict[str, A.EnumMember] = {}
        self.ctx = Context("top")
        self._struct_cache: dict = {}

    # =========================================================================================
    # Declarations
    # =========================================================================================

    def check(self):
        for decl in self.program.declarations:
            self.top_declaration(decl)
            if isinstance(decl, A.Instantiation) and decl.name == "main":
                self.program.main = decl

    def top_declaration(self, d):
        scope = self.top
        if isinstance(d, A.ErrorDecl):
            for m in d.members:
                if m.name in self.error_members:
                    raise CompileError(m.loc, f"error.{m.name} is already declared")
                self.error_members[m.name] = m
                self.error_type.members.append(m.name)
                m.type = self.error_type
            d.type = self.error_type
            return
        if isinstance(d, A.MatchKindDecl):
            for m in d.members:
                if m.name in self.match_kinds:
                    raise CompileError(m.loc, f"match_kind {m.name} is already declared")
                self.match_kinds[m.name] = m
                self.match_kind_type.members.append(m.name)
                m.type = self.match_kind_type
                scope.declare(m.name, m)
            d.type = self.match_kind_type
            return
        if isinstance(d, A.EmptyStatement):
            return
        self.declaration(d, scope)

    def declaration(self, d, scope: Scope):
        """Check a declaration and declare it in `scope`."""
        if isinstance(d, A.ConstantDecl):
            self.constant_decl(d, scope)
        elif isinstance(d, A.VariableDecl):
            self.variable_decl(d, scope)
        elif isinstance(d, A.TypedefDecl):
            base = self.resolve(d.type_ref, scope)
            d.type = T.NewType(d.name, d, base) if d.is_newtype else base
            scope.declare(d.name, d)
        elif isinstance(d, A.StructLikeDecl):
            scope.declare(d.name, d)
            self.struct_like_decl(d, scope)
        elif isinstance(d, A.EnumDecl):
            scope.declare(d.name, d)
            self.enum_decl(d, scope)
        elif isinstance(d, A.ExternDecl):
            scope.declare(d.name, d)
            self.extern_decl(d, scope)
        elif isinstance(d, A.ExternFunctionDecl):
            inner = self.generic_scope(scope, d.type_params)
            d.return_type.type = self.resolve(d.return_type, inner)
            self.parameters(d.params, inner)
            d.type = T.ActionType(d.name, d)
            scope.declare(d.name, d)
        elif isinstance(d, (A.ParserTypeDecl, A.ControlTypeDecl)):
            inner = self.generic_scope(scope, d.type_params)
            self.parameters(d.params, inner)
            cls = T.ParserType if isinstance(d, A.ParserTypeDecl) else T.ControlType
            d.type = cls(d.name, d, d.params)
            scope.declare(d.name, d)
        elif isinstance(d, A.PackageTypeDecl):
            inner = self.generic_scope(scope, d.type_params)
            self.parameters(d.params, inner)
            d.type = T.PackageType(d.name, d, d.params)
            scope.declare(d.name, d)
        elif isinstance(d, A.ParserDecl):
            scope.declare(d.name, d)
            self.parser_decl(d, scope)
        elif isinstance(d, A.ControlDecl):
            scope.declare(d.name, d)
            self.control_decl(d, scope)
        elif isinstance(d, A.ActionDecl):
            self.action_decl(d, scope)
            scope.declare(d.name, d)
        elif isinstance(d, A.FunctionDecl):
            self.function_decl(d, scope)
            scope.declare(d.name, d)
        elif isinstance(d, A.Instantiation):
            self.instantiation(d, scope)
            scope.declare(d.name, d)
        elif isinstance(d, A.TableDecl):
            self.table_decl(d, scope)
            scope.declare(d.name, d)
        elif isinstance(d, A.ValueSetDecl):
            elem = self.resolve(d.type_ref, scope)
            self.expr(d.size, scope, T.INT)
            self.require_const(d.size, "value_set size")
            d.type = T.SetType(elem)
            scope.declare(d.name, d)
        elif isinstance(d, A.EmptyStatement):
            pass
        else:
            raise CompileError(d.loc, f"unexpected declaration {type(d).__name__}")

    def generic_scope(self, scope: Scope, type_params) -> Scope:
        if not type_params:
            return scope
        inner = Scope(scope)
        for tp in type_params:
            tp.type = T.TypeVar(tp.name, tp)
            inner.declare(tp.name, tp)
        return inner

    def parameters(self, params, scope: Scope):
        seen = set()
        for p in params:
            if p.name in seen:
                raise CompileError(p.loc, f"duplicate parameter '{p.name}'")
            seen.add(p.name)
            p.type = self.resolve(p.type_ref, scope)
            if p.default is not None:
                self.expr(p.default, scope, p.type)

    def declare_params(self, params, scope: Scope):
        for p in params:
            scope.declare(p.name, p)

    def constant_decl(self, d: A.ConstantDecl, scope: Scope):
        d.type = self.resolve(d.type_ref, scope)
        self.expr(d.value, scope, d.type)
        self.require_const(d.value, f"initializer of constant '{d.name}'")
        scope.declare(d.name, d)

    def variable_decl(self, d: A.VariableDecl, scope: Scope):
        d.type = self.resolve(d.type_ref, scope)
        if isinstance(d.type, (T.ExternType, T.ParserType, T.PackageType)):
            raise CompileError(d.loc, f"cannot declare a variable of type {d.type}")
        if d.init is not None:
            self.expr(d.init, scope, d.type)
            self.coerce(d.init, d.type, lambda a, t: f"cannot initialize '{d.name}' of type {t} with a value of type {a}")
        scope.declare(d.name, d)

    def struct_like_decl(self, d: A.StructLikeDecl, scope: Scope):
        inner = self.generic_scope(scope, d.type_params)
        names = set()
        for f in d.fields:
            if f.name in names:
                raise CompileError(f.loc, f"duplicate field '{f.name}' in {d.name}")
            names.add(f.name)
            f.type = self.resolve(f.type_ref, inner)
            self.field_list_indices(f, scope)
            if isinstance(d, A.HeaderDecl):
                self.check_header_field(f)
            if isinstance(d, A.HeaderUnionDecl) and not isinstance(f.type, T.HeaderType):
                raise CompileError(f.loc, f"header_union field '{f.name}' must be a header")
        fields = [(f.name, f.type) for f in d.fields]
        targs = tuple(tp.type for tp in d.type_params)
        cls = {A.HeaderDecl: T.HeaderType, A.HeaderUnionDecl: T.HeaderUnionType,
               A.StructDecl: T.StructType}[type(d)]
        d.type = cls(d.name, d, fields, targs)
        if isinstance(d, A.HeaderDecl) and sum(isinstance(t, T.VarbitType) for _, t in fields) > 1:
            raise CompileError(d.loc, f"header {d.name} has more than one varbit field")

    def field_list_indices(self, f: A.StructField, scope: Scope):
        """Fold the indices of a field's `@field_list(i, ...)` annotations: literals or named
        compile-time constants (e.g. `const int FL = 1;`)."""
        for ann in f.annotations:
            if ann.name != "field_list":
                continue
            for arg in ann.args:
                self.expr(arg, scope, T.INT)
                self.require_const(arg, "@field_list index")

    def check_header_field(self, f: A.StructField):
        t = T.strip_newtype(f.type)
        ok = isinstance(t, (T.BitsType, T.VarbitType, T.BoolType, T.TypeVar)) or \
            (isinstance(t, T.EnumType) and t.underlying is not None) or isinstance(t, T.StructType)
        if not ok:
            raise CompileError(f.loc, f"header field '{f.name}' cannot have type {f.type}")

    def enum_decl(self, d: A.EnumDecl, scope: Scope):
        underlying = None
        values = {}
        if d.underlying is not None:
            underlying = T.strip_newtype(self.resolve(d.underlying, scope))
            if not isinstance(underlying, T.BitsType):
                raise CompileError(d.underlying.loc, "a serializable enum needs a bit<W> or int<W> type")
        names = []
        etype = T.EnumType(d.name, d, names, underlying, values)
        d.type = etype
        for m in d.members:
            if m.name in names:
                raise CompileError(m.loc, f"duplicate enum member '{m.name}'")
            names.append(m.name)
            m.type = etype
            if underlying is not None:
                if m.value is None:
                    raise CompileError(m.loc, f"member '{m.name}' of serializable enum {d.name} needs a value")
                self.expr(m.value, scope, underlying)
                self.require_const(m.value, "enum member value")
                values[m.name] = m.value.const_value
            elif m.value is not None:
                raise CompileError(m.value.loc, "only serializable enums have member values")

    def extern_decl(self, d: A.ExternDecl, scope: Scope):
        inner = self.generic_scope(scope, d.type_params)
        d.type = T.ExternType(d.name, d, tuple(tp.type for tp in d.type_params))
        for c in d.constructors:
            c.extern = d
            self.parameters(c.params, inner)
        for m in d.methods:
            m.extern = d
            minner = self.generic_scope(inner, m.type_params)
            m.return_type.type = self.resolve(m.return_type, minner)
            self.parameters(m.params, minner)

    def block_scope(self, d, scope: Scope) -> Scope:
        """Scope of a parser/control body: type params, apply params, constructor params."""
        if d.type_params:
            unsupported(d.loc, f"generic {type(d).__name__[:-4].lower()} declaration '{d.name}'")
        inner = Scope(scope)
        self.parameters(d.params, inner)
        self.parameters(d.ctor_params, inner)
        for p in d.ctor_params:
            if p.direction is not None:
                raise CompileError(p.loc, f"constructor parameter '{p.name}' cannot have a direction")
        self.declare_params(d.params, inner)
        self.declare_params(d.ctor_params, inner)
        return inner

    def parser_decl(self, d: A.ParserDecl, scope: Scope):
        d.type = T.ParserType(d.name, d, d.params)
        inner = self.block_scope(d, scope)
        saved = self.ctx
        self.ctx = Context("parser", block=d)
        try:
            for local in d.locals:
                self.declaration(local, inner)
            states = Scope(inner)
            for s in d.states:
                if s.name in ("accept", "reject"):
                    raise CompileError(s.loc, f"state '{s.name}' is built in and cannot be declared")
                s.type = T.STATE
                states.declare(s.name, s)
            if d.state_named("start") is None:
                raise CompileError(d.loc, f"parser {d.name} has no 'start' state")
            for s in d.states:
                self.parser_state(s, d, states)
        finally:
            self.ctx = saved

    def parser_state(self, s: A.ParserState, parser: A.ParserDecl, scope: Scope):
        body = Scope(scope)
        for st in s.statements:
            self.statement(st, body)
        if s.select is not None:
            sel = s.select
            for e in sel.exprs:
                self.expr(e, body)
                self.require_sized(e)
            sel.type = T.TupleType(e.type for e in sel.exprs)
            for case in sel.cases:
                self.keyset(case.keyset, [e.type for e in sel.exprs], body, "select")
                case.state_decl = self.state_target(case.next_state, case.state_loc, parser)
        elif s.next_state is not None:
            s.next_decl = self.state_target(s.next_state, s.next_loc, parser)

    def state_target(self, name: str, loc, parser: A.ParserDecl):
        if name in ("accept", "reject"):
            return None
        state = parser.state_named(name)
        if state is None:
            raise CompileError(loc, f"state '{name}' is not declared in parser {parser.name}")
        return state

    def control_decl(self, d: A.ControlDecl, scope: Scope):
        d.type = T.ControlType(d.name, d, d.params)
        inner = self.block_scope(d, scope)
        saved = self.ctx
        self.ctx = Context("control", block=d)
        try:
            for local in d.locals:
                self.declaration(local, inner)
            self.block(d.body, inner)
        finally:
            self.ctx = saved

    def action_decl(self, d: A.ActionDecl, scope: Scope):
        inner = Scope(scope)
        self.parameters(d.params, inner)
        seen_directionless = False
        for p in d.params:
            if p.direction is None:
                seen_directionless = True
            elif seen_directionless:
                raise CompileError(p.loc, f"action '{d.name}': directional parameters must come "
                                          "before directionless ones")
        self.declare_params(d.params, inner)
        d.type = T.ActionType(d.name, d)
        saved = self.ctx
        self.ctx = Context("action", block=saved.block)
        try:
            self.block(d.body, inner)
        finally:
            self.ctx = saved

    def function_decl(self, d: A.FunctionDecl, scope: Scope):
        if d.type_params:
            unsupported(d.loc, f"generic function '{d.name}'")
        inner = self.generic_scope(scope, d.type_params)
        ret = self.resolve(d.return_type, inner)
        d.return_type.type = ret
        inner = Scope(inner)
        self.parameters(d.params, inner)
        self.declare_params(d.params, inner)
        d.type = T.ActionType(d.name, d)
        saved = self.ctx
        self.ctx = Context("function", return_type=ret, block=saved.block)
        try:
            self.block(d.body, inner)
        finally:
            self.ctx = saved

    # -- instantiations ------------------------------------------------------------------------

    def instantiation(self, d: A.Instantiation, scope: Scope):
        t = self.resolve(d.type_ref, scope, allow_partial=True)
        decl = getattr(t, "decl", None)
        d.decl = decl
        d.type = t
        if isinstance(t, T.ExternType):
            d.type, d.param_args = self.extern_constructor(t, d.args, scope, d.loc)
            if d.initializer:
                self.abstract_methods(d, scope)
        elif isinstance(t, (T.ParserType, T.ControlType)) and isinstance(decl, (A.ParserDecl, A.ControlDecl)):
            d.param_args = self.bind_arguments(decl.ctor_params, d.args, scope, decl.name, d.loc)
        elif isinstance(t, T.PackageType):
            d.type, d.param_args = self.package_arguments(t, d.args, scope, d.loc)
        else:
            raise CompileError(d.type_ref.loc, f"cannot instantiate {t}")
        if self.ctx.kind in ("action", "function"):
            raise CompileError(d.loc, "instantiations are not allowed inside actions or functions")

    def abstract_methods(self, d: A.Instantiation, scope: Scope):
        unsupported(d.loc, f"abstract method implementation in instance '{d.name}'")

    def extern_constructor(self, t: T.ExternType, args, scope, loc):
        decl: A.ExternDecl = t.decl
        ctors = [c for c in decl.constructors if self.arity_matches(c.params, args)]
        if not ctors:
            counts = sorted({len(c.params) for c in decl.constructors})
            raise CompileError(loc, f"no constructor of extern {decl.name} takes {len(args)} arguments"
                               + (f" (it takes {', '.join(map(str, counts))})" if counts else ""))
        ctor = ctors[0]
        mapping = self.extern_bindings(t)
        pairs = self.bind_arguments(ctor.params, args, scope, decl.name, loc, mapping)
        bound = T.ExternType(decl.name, decl, tuple(mapping.get(tp, tp.type) for tp in decl.type_params))
        for _, arg in pairs:
            if arg is not None and arg.const_value is None and not isinstance(
                    arg.type, (T.ExternType, T.ParserType)) and not self.is_ctor_param(arg):
                self.require_const(arg, f"constructor argument of {decl.name}")
        return bound, pairs

    def is_ctor_param(self, e) -> bool:
        """A directionless parameter (its value is known once the block is instantiated)."""
        return isinstance(e, A.PathExpression) and isinstance(e.decl, A.Parameter) and e.decl.direction is None

    def extern_bindings(self, t: T.ExternType) -> dict:
        decl = t.decl
        return {tp: ta for tp, ta in zip(decl.type_params, t.type_args) if not isinstance(ta, T.TypeVar)}

    def package_arguments(self, t: T.PackageType, args, scope, loc):
        decl: A.PackageTypeDecl = t.decl
        mapping = {tp: ta for tp, ta in zip(decl.type_params, t.type_args)
                   if not isinstance(ta, (T.TypeVar, T.DontCareType))}
        pairs = self.bind_arguments(decl.params, args, scope, decl.name, loc, mapping)
        bound = T.PackageType(decl.name, decl, decl.params,
                              tuple(mapping.get(tp, tp.type) for tp in decl.type_params))
        return bound, pairs

    # -- tables --------------------------------------------------------------------------------

    def table_decl(self, d: A.TableDecl, scope: Scope):
        d.type = T.TableType(d.name, d)
        if self.ctx.kind != "control":
            raise CompileError(d.loc, "tables can only be declared in controls")
        key_types = []
        for k in d.key:
            self.expr(k.expr, scope)
            self.require_sized(k.expr)
            mk = self.match_kinds.get(k.match_kind)
            if mk is None:
                raise CompileError(k.match_kind_loc, f"unknown match kind '{k.match_kind}'")
            k.match_kind_decl = mk
            key_types.append(k.expr.type)
        seen = set()
        for ref in d.actions:
            self.action_ref(ref, scope, in_action_list=True)
            if ref.decl in seen:
                raise CompileError(ref.loc, f"action '{ref.name}' is listed twice in table {d.name}")
            seen.add(ref.decl)
        if d.default_action is not None:
            ref = d.default_action
            self.action_ref(ref, scope, in_action_list=False)
            listed = self.listed_action(d, ref.decl)
            if listed is None:
                raise CompileError(ref.loc, f"default action '{ref.name}' is not in the actions "
                                            f"of table {d.name}")
        for entry in d.entries:
            if len(entry.keys) != len(d.key) and not (len(entry.keys) == 1 and isinstance(
                    entry.keys[0], (A.DefaultExpression, A.DontCareExpression))):
                raise CompileError(entry.loc, f"entry has {len(entry.keys)} keys, table {d.name} "
                                              f"has {len(d.key)}")
            if len(entry.keys) == len(d.key):
                for kexpr, ktype in zip(entry.keys, key_types):
                    self.keyset_element(kexpr, ktype, scope, "entry")
            self.action_ref(entry.action, scope, in_action_list=False)
            if self.listed_action(d, entry.action.decl) is None:
                raise CompileError(entry.action.loc, f"action '{entry.action.name}' is not in the "
                                                     f"actions of table {d.name}")
            if entry.priority is not None:
                self.expr(entry.priority, scope, T.INT)
                self.require_const(entry.priority, "entry priority")
        for prop in d.properties.values():
            self.table_property(d, prop, scope)
        self.annotated_entry_priorities(d, scope)

    def annotated_entry_priorities(self, table: A.TableDecl, scope: Scope):
        """Give entries written with the older `@priority(N)` annotation their `priority`.

        That form (p4c's bmv2 convention) lets the smaller number win, and an entry without
        the annotation takes its 1-based position; translate it into the table's own
        convention (`largest_priority_wins`, default true) so both forms mean one thing."""
        annotated = [(e, A.find_annotation(e.annotations, "priority")) for e in table.entries]
        if all(ann is None for _, ann in annotated):
            return
        kinds = [k.match_kind for k in table.key]
        if not any(k in ("ternary", "range", "optional") for k in kinds) and kinds.count("lpm") < 2:
            # Exact keys (and one lpm key, ranked by prefix length) never leave a choice
            # between matching entries, so there is nothing for a priority to decide.
            return
        smaller_wins = []
        for position, (entry, ann) in enumerate(annotated, start=1):
            if ann is None:
                smaller_wins.append(position)
                continue
            if entry.priority is not None:
                raise CompileError(ann.loc, "an entry cannot have both 'priority =' and @priority")
            if len(ann.args) != 1:
                raise CompileError(ann.loc, "@priority takes one compile-time constant")
            self.expr(ann.args[0], scope, T.INT)
            value = self.require_const(ann.args[0], "entry priority")
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CompileError(ann.loc, f"@priority must be a positive integer, got {value}")
            smaller_wins.append(value)
        if any(e.priority is not None for e in table.entries):
            raise CompileError(table.loc, f"table {table.name}: entries mix 'priority =' "
                                          "with @priority")
        largest_wins = table.properties.get("largest_priority_wins")
        flip = largest_wins is None or bool(largest_wins.value.const_value)
        top = max(smaller_wins) + 1
        for (entry, ann), value in zip(annotated, smaller_wins):
            priority = top - value if flip else value
            entry.priority = A.IntLiteral(loc=(ann or entry).loc, value=priority, text=str(priority),
                                          type=T.INT, const_value=priority)

    def listed_action(self, table: A.TableDecl, action_decl):
        for ref in table.actions:
            if ref.decl is action_decl:
                return ref
        return None

    def table_property(self, table: A.TableDecl, prop: A.TableProperty, scope: Scope):
        name = prop.name
        if name in ("size", "priority_delta"):
            self.expr(prop.value, scope, T.INT)
            if not self.is_ctor_param(prop.value):
                self.require_const(prop.value, f"table property {name}")
        elif name in ("largest_priority_wins", "support_timeout"):
            self.expr(prop.value, scope, T.BOOL)
            self.require_const(prop.value, f"table property {name}")
        elif name in ("implementation", "counters", "meters"):
            self.expr(prop.value, scope)
            if not isinstance(prop.value.type, T.ExternType):
                raise CompileError(prop.value.loc, f"table property {name} must name an extern instance")
        else:
            self.expr(prop.value, scope)

    def action_ref(self, ref: A.ActionRef, scope: Scope, in_action_list: bool):
        found = (self.top if ref.is_global else scope).lookup(ref.name)
        if not found or not isinstance(found[0], A.ActionDecl):
            if not found:
                raise CompileError(ref.loc, f"'{ref.name}' is not declared")
            raise CompileError(ref.loc, f"'{ref.name}' is not an action")
        action: A.ActionDecl = found[0]
        ref.decl = action
        if in_action_list:
            # Only directional parameters may be bound in the actions list.
            directional = [p for p in action.params if p.direction is not None]
            if ref.has_parens or directional:
                ref.param_args = self.bind_arguments(directional, ref.args, scope, action.name, ref.loc)
        else:
            if ref.has_parens or action.params:
                params = [p for p in action.params if p.direction is None]
                if len(ref.args) == len(action.params):
                    params = action.params
                if not ref.has_parens and params:
                    raise CompileError(ref.loc, f"action '{action.name}' needs arguments "
                                                f"({len(params)} expected)")
                ref.param_args = self.bind_arguments(params, ref.args, scope, action.name, ref.loc)
                for p, a in ref.param_args:
                    if p.direction is None and a is not None:
                        self.require_const(a, f"argument '{p.name}' of action '{action.name}'")

    # =========================================================================================
    # Types
    # =========================================================================================

    def resolve(self, ref: A.TypeRef, scope: Scope, allow_partial=False) -> T.Type:
        """The Type a TypeRef denotes (also stored in ref.type)."""
        t = self._resolve(ref, scope, allow_partial)
        ref.type = t
        return t

    def _resolve(self, ref, scope, allow_partial):
        if isinstance(ref, A.BaseTypeRef):
            n = ref.name
            if n in ("bit", "int", "varbit"):
                if ref.width is None:
                    return T.INT
                self.expr(ref.width, scope, T.INT)
                w = self.require_const(ref.width, "type width")
                if not isinstance(w, int) or isinstance(w, bool) or w < 0 or (n != "bit" and w == 0):
                    raise CompileError(ref.width.loc, f"invalid width {w} for {n}")
                if n == "varbit":
                    return T.VarbitType(w)
                return T.BitsType(w, n == "int")
            return {"bool": T.BOOL, "string": T.STRING, "void": T.VOID, "error": self.error_type,
                    "match_kind": self.match_kind_type}[n]
        if isinstance(ref, A.HeaderStackTypeRef):
            elem = self.resolve(ref.element, scope)
            self.expr(ref.size, scope, T.INT)
            size = self.require_const(ref.size, "header stack size")
            if not isinstance(elem, (T.HeaderType, T.HeaderUnionType)):
                raise CompileError(ref.loc, f"stack element type {elem} must be a header or header_union")
            return T.StackType(elem, size)
        if isinstance(ref, A.TupleTypeRef):
            if ref.is_list:
                if len(ref.elements) != 1:
                    raise CompileError(ref.loc, "list<T> takes one type argument")
                return T.ListType(self.resolve(ref.elements[0], scope))
            return T.TupleType(self.resolve(e, scope) for e in ref.elements)
        if isinstance(ref, A.DontCareTypeRef):
            return T.DONTCARE
        if isinstance(ref, A.NamedTypeRef):
            found = (self.top if ref.is_global else scope).lookup_type(ref.name)
            if not found:
                raise CompileError(ref.loc, f"type '{ref.name}' is not declared")
            decl = found[0]
            if not _is_type_decl(decl):
                raise CompileError(ref.loc, f"'{ref.name}' is not a type")
            ref.decl = decl
            args = [self.resolve(a, scope) for a in ref.type_args]
            return self.named_type(decl, args, ref, allow_partial)
        raise CompileError(ref.loc, f"unexpected type syntax {type(ref).__name__}")

    def named_type(self, decl, args, ref, allow_partial):
        params = getattr(decl, "type_params", [])
        if isinstance(decl, A.TypeParameter):
            return decl.type
        if isinstance(decl, A.TypedefDecl):
            return decl.type
        if args and len(args) != len(params) and not (allow_partial and len(args) < len(params)):
            message = f"{decl.name} expects {len(params)} type arguments, got {len(args)}"
            raise CompileError(ref.loc, message + self.v1model_version_hint(decl, args, params))
        if not args and params and not isinstance(decl, (A.ExternDecl, A.PackageTypeDecl,
                                                         A.ParserTypeDecl, A.ControlTypeDecl)):
            raise CompileError(ref.loc, f"{decl.name} needs {len(params)} type arguments")
        if isinstance(decl, A.StructLikeDecl):
            if not args:
                return decl.type
            return self.specialize_struct(decl, tuple(args))
        if isinstance(decl, A.EnumDecl):
            return decl.type
        full = tuple(args) + tuple(tp.type for tp in params[len(args):])
        if isinstance(decl, A.ExternDecl):
            return T.ExternType(decl.name, decl, full)
        if isinstance(decl, (A.ParserTypeDecl, A.ParserDecl)):
            return T.ParserType(decl.name, decl, decl.params, full)
        if isinstance(decl, (A.ControlTypeDecl, A.ControlDecl)):
            return T.ControlType(decl.name, decl, decl.params, full)
        if isinstance(decl, A.PackageTypeDecl):
            return T.PackageType(decl.name, decl, decl.params, full)
        raise CompileError(ref.loc, f"'{decl.name}' is not a type")

    # The externs of v1model.p4 that are generic in their index type only from version 20200408:
    # name -> (the generic form, the number of type parameters of the older form).
    V1MODEL_INDEXED = {"counter": ("counter<I>", 0), "meter": ("meter<I>", 0),
                       "register": ("register<T, I>", 1)}

    def v1model_version_hint(self, decl, args, params) -> str:
        """Why a v1model counter, meter or register takes one type argument fewer than given:
        the program is compiled at a V1MODEL_VERSION before 20200408."""
        generic, old_count = self.V1MODEL_INDEXED.get(decl.name, (None, None))
        if (generic is None or not isinstance(decl, A.ExternDecl) or len(params) != old_count
                or not decl.loc.file.endswith("v1model.p4") or len(args) != old_count + 1):
            return ""
        found = self.top.lookup("__v1model_version")
        value = getattr(getattr(found[0], "value", None), "const_value", None) if found else None
        version = f" (this program has {value})" if value is not None else ""
        return (f"; v1model.p4 declares {generic} only from V1MODEL_VERSION 20200408 on{version}:"
                f" #define V1MODEL_VERSION 20200408 before #include <v1model.p4>")

    def specialize_struct(self, decl: A.StructLikeDecl, args: tuple):
        key = (id(decl), args)
        cached = self._struct_cache.get(key)
        if cached is None:
            mapping = dict(zip(decl.type_params, args))
            fields = [(n, self.substitute(t, mapping)) for n, t in decl.type.fields]
            cached = type(decl.type)(decl.name, decl, fields, args)
            self._struct_cache[key] = cached
        return cached

    def substitute(self, t: T.Type, mapping: dict) -> T.Type:
        """Replace type variables (keyed by TypeParameter decl) in t."""
        if not mapping:
            return t
        if isinstance(t, T.TypeVar):
            return mapping.get(t.decl, t)
        if isinstance(t, T.StructLikeType) and t.type_args:
            args = tuple(self.substitute(a, mapping) for a in t.type_args)
            if args == t.type_args:
                return t
            return self.specialize_struct(t.decl, args)
        if isinstance(t, T.StackType):
            return T.StackType(self.substitute(t.element, mapping), t.size)
        if isinstance(t, T.TupleType):
            return T.TupleType(self.substitute(e, mapping) for e in t.elements)
        if isinstance(t, (T.ExternType, T.ParserType, T.PackageType)) and t.type_args:
            args = tuple(self.substitute(a, mapping) for a in t.type_args)
            if isinstance(t, T.ExternType):
                return T.ExternType(t.name, t.decl, args)
            return type(t)(t.name, t.decl, t.params, args)
        return t

    def block_param_types(self, t: T.ParserType) -> list:
        """Apply-parameter types of a parser/control type, with its type arguments applied."""
        decl = t.decl
        mapping = dict(zip(getattr(decl, "type_params", []), t.type_args))
        return [self.substitute(p.type, mapping) for p in decl.params]

    def block_fits(self, actual: T.ParserType, want: T.ParserType) -> bool:
        """Does a parser/control declaration match a parser/control type's signature?"""
        return self.block_mismatch(actual, want) is None

    def block_mismatch(self, actual: T.ParserType, want: T.ParserType):
        """Why a parser/control declaration does not match a parser/control type's
        signature (directions and types of the apply parameters must be equal), or None."""
        if isinstance(actual, T.ControlType) != isinstance(want, T.ControlType):
            kind = "a control" if isinstance(actual, T.ControlType) else "a parser"
            return f"{actual.name} is {kind}"
        have_params = actual.decl.params
        want_params = want.decl.params
        if len(have_params) != len(want_params):
            return f"{actual.name} has {len(have_params)} parameters, {want} has {len(want_params)}"
        for h, w, wt in zip(have_params, want_params, self.block_param_types(want)):
            if h.direction != w.direction:
                return (f"parameter '{h.name}' is {h.direction or 'directionless'}, {want} has "
                        f"{w.direction or 'directionless'}")
            if h.type != wt:
                return f"parameter '{h.name}' has type {h.type}, {want} has {wt}"
        return None

    def unify(self, want: T.Type, have: T.Type, mapping: dict) -> bool:
        """Bind type variables of `want` so that `have` fits it; False on a mismatch."""
        if isinstance(want, T.TypeVar):
            bound = mapping.get(want.decl)
            if bound is None:
                if isinstance(have, (T.IntType, T.StructExpressionType)) or have is None:
                    return True  # decided later (or by the argument's own type)
                mapping[want.decl] = have
                return True
            return self.unify(bound, have, mapping) if isinstance(bound, T.TypeVar) else True
        if isinstance(want, T.StructLikeType) and want.type_args and isinstance(have, T.StructLikeType) \
                and have.decl is want.decl:
            return all(self.unify(w, h, mapping) for w, h in zip(want.type_args, have.type_args))
        if isinstance(want, T.StackType) and isinstance(have, T.StackType):
            return self.unify(want.element, have.element, mapping)
        if isinstance(want, T.TupleType) and isinstance(have, T.TupleType) and \
                len(want.elements) == len(have.elements):
            return all(self.unify(w, h, mapping) for w, h in zip(want.elements, have.elements))
        if isinstance(want, T.ExternType) and isinstance(have, T.ExternType) and want.decl is have.decl:
            return all(self.unify(w, h, mapping) for w, h in zip(want.type_args, have.type_args))
        if isinstance(want, T.ParserType) and isinstance(have, T.ParserType) and \
                isinstance(want, T.ControlType) == isinstance(have, T.ControlType):
            wp = self.block_param_types(want)
            hp = self.block_param_types(have) if have.decl is not want.decl else list(have.type_args)
            if have.decl is want.decl:
                return all(self.unify(w, h, mapping) for w, h in zip(want.type_args, have.type_args))
            if len(wp) != len(hp):
                return False
            return all(self.unify(w, h, mapping) for w, h in zip(wp, hp))
        return True

    # =========================================================================================
    # Statements
    # =========================================================================================

    def block(self, b: A.BlockStatement, scope: Scope):
        inner = Scope(scope)
        for st in b.statements:
            self.statement(st, inner)

    def statement(self, st, scope: Scope):
        fn = self._STATEMENTS.get(type(st))
        if fn is None:
            if isinstance(st, (A.VariableDecl, A.ConstantDecl, A.Instantiation)):
                return self.declaration(st, scope)
            if isinstance(st, (A.FunctionDecl, A.ActionDecl, A.TableDecl)):
                raise CompileError(st.loc, f"{type(st).__name__[:-4].lower()} declarations are not "
                                           "allowed inside a block")
            raise CompileError(st.loc, f"unexpected statement {type(st).__name__}")
        fn(self, st, scope)

    def assignment(self, st: A.AssignmentStatement, scope: Scope):
        self.expr(st.lhs, scope)
        self.require_lvalue(st.lhs, "assign to")
        self.expr(st.rhs, scope, st.lhs.type)
        self.coerce(st.rhs, st.lhs.type, lambda a, t: (
            f"cannot assign a value of type {a} to '{expr_text(st.lhs)}' of type {t}"))

    def call_statement(self, st: A.MethodCallStatement, scope: Scope):
        self.expr(st.call, scope)

    def if_statement(self, st: A.IfStatement, scope: Scope):
        self.condition(st.cond, scope, "if")
        self.statement_in_scope(st.then, scope)
        if st.else_ is not None:
            self.statement_in_scope(st.else_, scope)

    def statement_in_scope(self, st, scope):
        self.statement(st, Scope(scope))

    def condition(self, e, scope, what):
        self.expr(e, scope, T.BOOL)
        if not isinstance(e.type, T.BoolType):
            raise CompileError(e.loc, f"{what} condition must be bool, not {e.type}")

    def return_statement(self, st: A.ReturnStatement, scope: Scope):
        ctx = self.ctx
        if ctx.kind == "function":
            if isinstance(ctx.return_type, T.VoidType):
                if st.value is not None:
                    raise CompileError(st.loc, "a void function cannot return a value")
            else:
                if st.value is None:
                    raise CompileError(st.loc, f"return needs a value of type {ctx.return_type}")
                self.expr(st.value, scope, ctx.return_type)
                self.coerce(st.value, ctx.return_type,
                            lambda a, t: f"cannot return a value of type {a} from a function returning {t}")
        elif st.value is not None:
            raise CompileError(st.loc, "return with a value is only allowed in functions")
        elif ctx.kind == "parser":
            raise CompileError(st.loc, "return is not allowed in a parser")

    def exit_statement(self, st, scope):
        if self.ctx.kind in ("parser", "function"):
            raise CompileError(st.loc, f"exit is not allowed in a {self.ctx.kind}")

    def empty_statement(self, st, scope):
        pass

    def loop_control(self, st, scope):
        if not self.ctx.in_loop:
            word = "break" if isinstance(st, A.BreakStatement) else "continue"
            raise CompileError(st.loc, f"{word} outside a loop")

    def switch_statement(self, st: A.SwitchStatement, scope: Scope):
        self.expr(st.expr, scope)
        t = st.expr.type
        seen = set()
        if isinstance(t, T.ActionEnumType):
            table: A.TableDecl = t.decl
            for case in st.cases:
                if isinstance(case.label, A.DefaultExpression):
                    key = "default"
                else:
                    if not isinstance(case.label, A.PathExpression):
                        raise CompileError(case.label.loc, "action_run switch labels must be action names")
                    action = self.table_action_named(table, case.label.name)
                    if action is None:
                        raise CompileError(case.label.loc, f"'{case.label.name}' is not an action of "
                                                           f"table {table.name}")
                    case.label.decl = action
                    case.label.type = t
                    key = action
                if key in seen:
                    raise CompileError(case.label.loc, f"duplicate switch label '{expr_text(case.label)}'")
                seen.add(key)
                if case.body is not None:
                    self.block(case.body, scope)
            return
        base = T.strip_newtype(t)
        if not isinstance(base, (T.BitsType, T.EnumType, T.ErrorType, T.IntType)):
            raise CompileError(st.expr.loc, f"cannot switch on a value of type {t}")
        for case in st.cases:
            if not isinstance(case.label, A.DefaultExpression):
                self.expr(case.label, scope, t)
                self.coerce(case.label, t, lambda a, w: f"switch label of type {a} does not match {w}")
                value = self.require_const(case.label, "switch label")
                if value in seen:
                    raise CompileError(case.label.loc, f"duplicate switch label '{expr_text(case.label)}'")
                seen.add(value)
            if case.body is not None:
                self.block(case.body, scope)
        if st.cases and st.cases[-1].body is None:
            raise CompileError(st.cases[-1].loc, "the last switch label needs a body")

    def table_action_named(self, table: A.TableDecl, name: str):
        """The ActionDecl called `name` that `table` can run (its actions, plus the implicit
        NoAction default of a table without default_action)."""
        for ref in table.actions:
            if ref.name == name:
                return ref.decl
        if name == "NoAction" and table.default_action is None:
            found = self.top.lookup("NoAction")
            if found and isinstance(found[0], A.ActionDecl):
                return found[0]
        return None

    def for_statement(self, st: A.ForStatement, scope: Scope):
        inner = Scope(scope)
        for s in st.init:
            self.statement(s, inner)
        if st.cond is not None:
            self.condition(st.cond, inner, "for")
        for s in st.updates:
            self.statement(s, inner)
        self.loop_body(st.body, inner)

    def for_in_statement(self, st: A.ForInStatement, scope: Scope):
        inner = Scope(scope)
        var = st.var
        declared = self.resolve(var.type_ref, inner) if var.type_ref is not None else None
        elem = self.collection_element(st.collection, inner, declared)
        var.type = declared if declared is not None else elem
        if isinstance(var.type, T.IntType):
            raise CompileError(var.loc, f"loop variable '{var.name}' needs a type with a width")
        if declared is not None and elem != declared:
            self.check_loop_element(st.collection, elem, declared)
        inner.declare(var.name, var)
        self.loop_body(st.body, inner)

    def collection_element(self, coll: A.Expression, scope: Scope, declared):
        """Element type of what a for-in loop iterates over: a range `lo .. hi`, a header
        stack, or a list."""
        if isinstance(coll, A.RangeExpression):
            hint = declared
            self.expr(coll.lo, scope, hint)
            self.expr(coll.hi, scope, hint if hint is not None else coll.lo.type)
            if isinstance(coll.lo.type, T.IntType) and not isinstance(coll.hi.type, T.IntType):
                self.coerce(coll.lo, coll.hi.type, None)
            if coll.lo.type != coll.hi.type:
                raise CompileError(coll.loc, f"range bounds have different types: {coll.lo.type} "
                                             f"and {coll.hi.type}")
            coll.type = T.SetType(coll.lo.type)
            return coll.lo.type
        self.expr(coll, scope)
        t = coll.type
        if isinstance(t, (T.StackType, T.ListType)):
            return t.element
        if isinstance(t, T.TupleType) and len(set(t.elements)) == 1:
            return t.elements[0]
        raise CompileError(coll.loc, f"cannot iterate over a value of type {t}")

    def check_loop_element(self, where: A.Expression, have: T.Type, want: T.Type):
        if not (isinstance(have, T.IntType) and T.is_integer(want)):
            raise CompileError(where.loc, f"loop variable of type {want} cannot take values of type {have}")

    def loop_body(self, body, scope):
        saved = self.ctx.in_loop
        self.ctx.in_loop = True
        try:
            self.statement(body, Scope(scope))
        finally:
            self.ctx.in_loop = saved

    def block_statement(self, st, scope):
        self.block(st, scope)

    _STATEMENTS = {
        A.AssignmentStatement: assignment,
        A.MethodCallStatement: call_statement,
        A.IfStatement: if_statement,
        A.BlockStatement: block_statement,
        A.ReturnStatement: return_statement,
        A.ExitStatement: exit_statement,
        A.EmptyStatement: empty_statement,
        A.BreakStatement: loop_control,
        A.ContinueStatement: loop_control,
        A.SwitchStatement: switch_statement,
        A.ForStatement: for_statement,
        A.ForInStatement: for_in_statement,
    }

    # =========================================================================================
    # Expressions
    # =========================================================================================

    def expr(self, e: A.Expression, scope: Scope, expected: T.Type = None) -> T.Type:
        """Type-check `e`; `expected` (if known) types literals and untyped aggregates."""
        fn = self._EXPRESSIONS.get(type(e))
        if fn is None:
            raise CompileError(e.loc, f"'{expr_text(e)}' is not allowed here")
        t = fn(self, e, scope, expected)
        e.type = t
        if expected is not None and isinstance(t, T.IntType) and e.const_value is not None:
            self.coerce(e, expected, None)
        return e.type

    # -- literals ------------------------------------------------------------------------------

    def int_literal(self, e: A.IntLiteral, scope, expected):
        if e.width is None:
            e.const_value = e.value
            return T.INT
        t = T.BitsType(e.width, e.signed)
        if e.signed and e.width < 1:
            raise CompileError(e.loc, "int<W> literals need a width of at least 1")
        e.const_value = t.wrap(e.value)
        return t

    def bool_literal(self, e, scope, expected):
        e.const_value = e.value
        return T.BOOL

    def string_literal(self, e, scope, expected):
        e.const_value = e.value
        return T.STRING

    # -- names ---------------------------------------------------------------------------------

    def path(self, e: A.PathExpression, scope: Scope, expected):
        if e.name == "error":
            e.decl = None
            return self.error_type
        if e.name == "this":
            unsupported(e.loc, "'this'")
        found = (self.top if e.is_global else scope).lookup(e.name)
        if not found:
            raise CompileError(e.loc, f"'{e.name}' is not declared")
        decl = found[0]
        e.decl = decl if len(found) == 1 else found
        if isinstance(decl, (A.ConstantDecl,)):
            e.const_value = decl.value.const_value
            return decl.type
        if isinstance(decl, (A.VariableDecl, A.Parameter, A.Instantiation, A.ValueSetDecl,
                             A.ParserState, A.TableDecl)):
            return decl.type
        if isinstance(decl, (A.ActionDecl, A.FunctionDecl, A.ExternFunctionDecl)):
            return T.ActionType(decl.name, decl)
        if isinstance(decl, A.EnumMember):  # a match_kind member
            e.const_value = decl.name
            return decl.type
        if _is_type_decl(decl):
            return TypeName(decl)
        raise CompileError(e.loc, f"'{e.name}' cannot be used as a value")

    def member(self, e: A.MemberExpression, scope: Scope, expected):
        base = e.expr
        bt = self.expr(base, scope)
        name = e.member
        if isinstance(bt, TypeName):
            return self.static_member(e, bt.decl)
        if isinstance(bt, T.ErrorType) and isinstance(base, A.PathExpression) and base.name == "error":
            member = self.error_members.get(name)
            if member is None:
                raise CompileError(e.loc, f"error.{name} is not declared")
            e.decl = member
            e.const_value = name
            return self.error_type
        t = T.strip_newtype(bt)
        if isinstance(t, T.StructLikeType):
            ft = t.field_type(name)
            if ft is not None:
                e.decl = t.decl.field_named(name) if t.decl is not None else None
                return ft
            if isinstance(t, (T.HeaderType, T.HeaderUnionType)) and name in ("isValid", "setValid", "setInvalid"):
                return BuiltinMethod(name, t)
            if name in SIZE_METHODS:
                return BuiltinMethod(name, t)
            raise CompileError(e.loc, f"{t} has no field '{name}'")
        if isinstance(t, T.StackType):
            if name in ("next", "last"):
                if self.ctx.kind != "parser":
                    raise CompileError(e.loc, f"'{name}' of a header stack can only be used in a parser")
                return t.element
            if name in ("size", "lastIndex", "nextIndex"):
                if name == "size":
                    e.const_value = t.size
                return T.bit(32)
            if name in ("push_front", "pop_front"):
                return BuiltinMethod(name, t)
            raise CompileError(e.loc, f"header stack has no member '{name}'")
        if isinstance(t, T.ExternType):
            methods = t.decl.methods_named(name)
            if not methods:
                raise CompileError(e.loc, f"extern {t.decl.name} has no method '{name}'")
            e.decl = methods[0] if len(methods) == 1 else methods
            return BuiltinMethod(name, t)
        if isinstance(t, T.TableType):
            if name != "apply":
                raise CompileError(e.loc, f"table {t.name} has no member '{name}'")
            return BuiltinMethod(name, t)
        if isinstance(t, T.TableResultType):
            if name in ("hit", "miss"):
                return T.BOOL
            if name == "action_run":
                return T.ActionEnumType(t.name, t.decl)
            raise CompileError(e.loc, f"a table apply result has no member '{name}'")
        if isinstance(t, T.ParserType):
            if name != "apply":
                raise CompileError(e.loc, f"{t.name} has no member '{name}'")
            return BuiltinMethod(name, t)
        raise CompileError(e.loc, f"a value of type {bt} has no member '{name}'")

    def static_member(self, e: A.MemberExpression, decl):
        name = e.member
        if isinstance(decl, A.EnumDecl):
            etype: T.EnumType = decl.type
            if name not in etype.members:
                raise CompileError(e.loc, f"{decl.name} has no member '{name}'")
            e.decl = next(m for m in decl.members if m.name == name)
            e.const_value = etype.values[name] if etype.underlying is not None else name
            return etype
        if isinstance(decl, A.TypedefDecl) and isinstance(T.strip_newtype(decl.type), T.EnumType):
            return self.static_member(e, T.strip_newtype(decl.type).decl)
        if isinstance(decl, (A.ParserDecl, A.ControlDecl)) and name == "apply":
            return BuiltinMethod("apply", decl.type)
        if isinstance(decl, A.StructLikeDecl) and name in SIZE_METHODS:
            return BuiltinMethod(name, decl.type)
        raise CompileError(e.loc, f"type {decl.name} has no member '{name}'")

    # -- operators -----------------------------------------------------------------------------

    def unary(self, e: A.UnaryExpression, scope, expected):
        op = e.op
        if op == "!":
            self.expr(e.operand, scope, T.BOOL)
            if not isinstance(e.operand.type, T.BoolType):
                raise CompileError(e.loc, f"'!' needs a bool operand, not {e.operand.type}")
            if e.operand.const_value is not None:
                e.const_value = not e.operand.const_value
            return T.BOOL
        t = self.expr(e.operand, scope, expected if self.is_numeric(expected) else None)
        base = T.strip_newtype(t)
        if not isinstance(base, (T.BitsType, T.IntType)):
            raise CompileError(e.loc, f"'{op}' needs an integer operand, not {t}")
        if op == "~" and isinstance(base, T.IntType):
            raise CompileError(e.loc, "'~' cannot be applied to an integer without a width; "
                                      "give it one, e.g. (bit<8>)x")
        v = e.operand.const_value
        if v is not None:
            v = {"-": lambda x: -x, "+": lambda x: x, "~": lambda x: ~x}[op](v)
            e.const_value = base.wrap(v) if isinstance(base, T.BitsType) else v
        return t

    def is_numeric(self, t) -> bool:
        return t is not None and isinstance(T.strip_newtype(t), (T.BitsType, T.IntType))

    def binary(self, e: A.BinaryExpression, scope, expected):
        op = e.op
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                self.expr(side, scope, T.BOOL)
                if not isinstance(side.type, T.BoolType):
                    raise CompileError(side.loc, f"'{op}' needs bool operands, not {side.type}")
            lv, rv = e.left.const_value, e.right.const_value
            if lv is not None and rv is not None:
                e.const_value = (lv and rv) if op == "&&" else (lv or rv)
            return T.BOOL
        if op == "++":
            return self.concat(e, scope)
        if op in ("<<", ">>"):
            return self.shift(e, scope, expected)
        lt = self.expr(e.left, scope, None)
        rt = self.expr(e.right, scope, None)
        if isinstance(lt, T.IntType) and not isinstance(rt, T.IntType):
            self.coerce_operand(e.left, rt, e)
        elif isinstance(rt, T.IntType) and not isinstance(lt, T.IntType):
            self.coerce_operand(e.right, lt, e)
        lt, rt = self.enum_to_underlying(e.left, rt), self.enum_to_underlying(e.right, lt)
        if op in ("==", "!="):
            if not self.same_type(lt, rt):
                raise CompileError(e.loc, f"cannot compare values of types {lt} and {rt}")
            self.fold_binary(e, op, lt)
            return T.BOOL
        base = T.strip_newtype(lt)
        if not isinstance(base, (T.BitsType, T.IntType)):
            raise CompileError(e.loc, f"'{op}' needs integer operands, not {lt}")
        if not self.same_type(lt, rt):
            if isinstance(base, T.BitsType) and isinstance(T.strip_newtype(rt), T.BitsType):
                rb = T.strip_newtype(rt)
                if base.signed != rb.signed:
                    raise CompileError(e.loc, f"'{op}' on values of different signedness: {lt} and {rt}")
                raise CompileError(e.loc, f"'{op}' on values of different widths: {lt} and {rt}")
            raise CompileError(e.loc, f"'{op}' on values of different types: {lt} and {rt}")
        if op in ("/", "%"):
            if isinstance(base, T.BitsType) and base.signed:
                raise CompileError(e.loc, f"'{op}' is not allowed on signed values ({lt})")
            rv = e.right.const_value
            if rv == 0:
                raise CompileError(e.right.loc, "division by zero")
            if isinstance(base, T.IntType) and ((e.left.const_value or 0) < 0 or (rv or 0) < 0):
                raise CompileError(e.loc, f"'{op}' on negative integers is not allowed")
        if op in ("|+|", "|-|") and isinstance(base, T.IntType):
            raise CompileError(e.loc, f"saturating '{op}' needs operands with a width")
        if op in ("<", ">", "<=", ">="):
            self.fold_binary(e, op, lt)
            return T.BOOL
        self.fold_binary(e, op, lt)
        return lt

    def enum_to_underlying(self, operand, other_type):
        """A serializable enum operand next to a value of its representation type takes that type."""
        t = operand.type
        if isinstance(t, T.EnumType) and t.underlying is not None and t.underlying == other_type:
            operand.type = t.underlying
        return operand.type

    def coerce_operand(self, operand, target, e):
        if isinstance(T.strip_newtype(target), (T.BitsType,)) or isinstance(target, T.NewType):
            self.coerce(operand, target, lambda a, t: f"'{e.op}' on values of types {a} and {t}")
        elif isinstance(target, T.EnumType) and target.underlying is not None:
            raise CompileError(e.loc, f"'{e.op}' on values of types {target} and int: cast one of them")
        elif isinstance(target, (T.BoolType, T.EnumType, T.ErrorType, T.StructLikeType)):
            raise CompileError(e.loc, f"'{e.op}' on values of types int and {target}")

    def same_type(self, a, b) -> bool:
        return a == b

    def fold_binary(self, e, op, operand_type):
        lv, rv = e.left.const_value, e.right.const_value
        if lv is None or rv is None:
            return
        base = T.strip_newtype(operand_type)
        if op in ("==", "!="):
            e.const_value = (lv == rv) == (op == "==")
            return
        if op in ("<", ">", "<=", ">="):
            e.const_value = {"<": lv < rv, ">": lv > rv, "<=": lv <= rv, ">=": lv >= rv}[op]
            return
        if not isinstance(lv, int) or isinstance(lv, bool):
            return
        if op == "|+|" or op == "|-|":
            v = lv + rv if op == "|+|" else lv - rv
            lo, hi = (-(1 << (base.width - 1)), (1 << (base.width - 1)) - 1) if base.signed else (0, base.mask)
            e.const_value = min(max(v, lo), hi)
            return
        if op == "/":
            v = abs(lv) // abs(rv)
            v = v if (lv >= 0) == (rv >= 0) else -v
        elif op == "%":
            v = lv % rv
        else:
            v = {"+": lambda: lv + rv, "-": lambda: lv - rv, "*": lambda: lv * rv,
                 "&": lambda: lv & rv, "|": lambda: lv | rv, "^": lambda: lv ^ rv}[op]()
        e.const_value = base.wrap(v) if isinstance(base, T.BitsType) else v

    def shift(self, e: A.BinaryExpression, scope, expected):
        lt = self.expr(e.left, scope, expected if self.is_numeric(expected) else None)
        rt = self.expr(e.right, scope)
        base = T.strip_newtype(lt)
        if not isinstance(base, (T.BitsType, T.IntType)):
            raise CompileError(e.loc, f"'{e.op}' needs an integer left operand, not {lt}")
        rb = T.strip_newtype(rt)
        if isinstance(rb, T.BitsType) and rb.signed:
            raise CompileError(e.right.loc, "a shift amount must be unsigned")
        if isinstance(rb, T.IntType):
            if e.right.const_value is None or e.right.const_value < 0:
                raise CompileError(e.right.loc, "a shift amount must be a non-negative constant or unsigned")
        elif not isinstance(rb, T.BitsType):
            raise CompileError(e.right.loc, f"a shift amount must be an integer, not {rt}")
        if isinstance(base, T.IntType) and e.right.const_value is None:
            raise CompileError(e.loc, "shifting an integer without a width needs a constant amount")
        lv, rv = e.left.const_value, e.right.const_value
        if lv is not None and rv is not None:
            v = lv << rv if e.op == "<<" else lv >> rv
            e.const_value = base.wrap(v) if isinstance(base, T.BitsType) else v
        return lt

    def concat(self, e: A.BinaryExpression, scope):
        lt = self.expr(e.left, scope)
        rt = self.expr(e.right, scope)
        lb, rb = T.strip_newtype(lt), T.strip_newtype(rt)
        for side, b in ((e.left, lb), (e.right, rb)):
            if isinstance(b, T.IntType):
                raise CompileError(side.loc, f"'++' needs operands with a width; '{expr_text(side)}' has none")
            if not isinstance(b, T.BitsType):
                raise CompileError(side.loc, f"'++' needs bit<W> or int<W> operands, not {b}")
        t = T.BitsType(lb.width + rb.width, lb.signed)
        lv, rv = e.left.const_value, e.right.const_value
        if lv is not None and rv is not None:
            e.const_value = t.wrap(((lv & lb.mask) << rb.width) | (rv & rb.mask))
        return t

    def ternary(self, e: A.TernaryExpression, scope, expected):
        self.condition(e.cond, scope, "'?:'")
        tt = self.expr(e.then, scope, expected)
        et = self.expr(e.else_, scope, expected if expected is not None else
                       (tt if not isinstance(tt, T.IntType) else None))
        if isinstance(tt, T.IntType) and not isinstance(et, T.IntType):
            self.coerce(e.then, et, None)
        tt = e.then.type
        if not self.same_type(tt, et):
            raise CompileError(e.loc, f"the branches of '?:' have different types: {tt} and {et}")
        if isinstance(tt, T.IntType) and e.cond.const_value is None:
            raise CompileError(e.loc, "'?:' with integer branches without a width needs a constant condition")
        c = e.cond.const_value
        if c is not None:
            e.const_value = e.then.const_value if c else e.else_.const_value
        return tt

    def cast(self, e: A.CastExpression, scope, expected):
        target = self.resolve(e.type_ref, scope)
        if isinstance(e.expr, (A.ListExpression, A.StructExpression, A.InvalidHeaderExpression)):
            self.expr(e.expr, scope, target)
            self.coerce(e.expr, target, lambda a, t: f"cannot cast {a} to {t}")
            e.const_value = e.expr.const_value
            return target
        st = self.expr(e.expr, scope, None)
        src, dst = T.strip_newtype(st), T.strip_newtype(target)
        if not self.castable(src, dst, st, target):
            raise CompileError(e.loc, f"cannot cast a value of type {st} to {target}")
        v = e.expr.const_value
        if v is not None:
            e.const_value = self.cast_value(v, src, dst)
        return target

    def castable(self, src, dst, st, target) -> bool:
        if src == dst:
            return True
        ints = (T.BitsType, T.IntType)
        if isinstance(dst, T.BitsType) and isinstance(src, ints):
            return not (isinstance(src, T.BitsType) and src.signed != dst.signed and src.width != dst.width)
        if isinstance(dst, T.BitsType) and isinstance(src, T.BoolType):
            return dst.width == 1 and not dst.signed
        if isinstance(dst, T.BoolType) and isinstance(src, ints):
            return isinstance(src, T.IntType) or (src.width == 1 and not src.signed)
        if isinstance(dst, T.EnumType) and dst.underlying is not None:
            return isinstance(src, ints) or (isinstance(src, T.EnumType) and src.underlying is not None)
        if isinstance(src, T.EnumType) and src.underlying is not None and isinstance(dst, ints):
            return True
        if isinstance(dst, T.IntType) and isinstance(src, ints):
            return True
        return False

    def cast_value(self, v, src, dst):
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

    def slice(self, e: A.SliceExpression, scope, expected):
        t = self.expr(e.expr, scope)
        base = T.strip_newtype(t)
        self.expr(e.hi, scope, T.INT)
        self.expr(e.lo, scope, T.INT)
        hi = self.require_const(e.hi, "slice bound")
        lo = self.require_const(e.lo, "slice bound")
        if isinstance(base, T.IntType):
            if e.expr.const_value is None:
                raise CompileError(e.loc, "cannot slice an integer without a width")
        elif not isinstance(base, T.BitsType):
            raise CompileError(e.loc, f"cannot slice a value of type {t}")
        if not (isinstance(hi, int) and isinstance(lo, int)) or lo < 0 or hi < lo:
            raise CompileError(e.loc, f"invalid slice [{hi}:{lo}]")
        if isinstance(base, T.BitsType) and hi >= base.width:
            raise CompileError(e.loc, f"slice [{hi}:{lo}] is out of range for {t}")
        rt = T.bit(hi - lo + 1)
        if e.expr.const_value is not None:
            e.const_value = (e.expr.const_value >> lo) & rt.mask
        return rt

    def index(self, e: A.IndexExpression, scope, expected):
        t = T.strip_newtype(self.expr(e.expr, scope))
        self.expr(e.index, scope)
        if not self.is_numeric(e.index.type):
            raise CompileError(e.index.loc, f"an index must be an integer, not {e.index.type}")
        if isinstance(e.index.type, T.IntType):
            self.coerce(e.index, T.bit(32), None)
        i = e.index.const_value
        if isinstance(t, T.StackType):
            if i is not None and not (0 <= i < t.size):
                raise CompileError(e.index.loc, f"index {i} is out of range for a stack of size {t.size}")
            return t.element
        if isinstance(t, T.TupleType):
            if i is None or not (0 <= i < len(t.elements)):
                raise CompileError(e.index.loc, "a tuple index must be a constant in range")
            return t.elements[i]
        raise CompileError(e.loc, f"cannot index a value of type {t}")

    # -- aggregates ----------------------------------------------------------------------------

    def list_expression(self, e: A.ListExpression, scope, expected):
        target = T.strip_newtype(expected) if expected is not None else None
        if isinstance(target, T.StructLikeType) and not isinstance(target, T.HeaderUnionType):
            if len(e.elements) != len(target.fields):
                raise CompileError(e.loc, f"{target} has {len(target.fields)} fields, the list has "
                                          f"{len(e.elements)} elements")
            for el, (fname, ftype) in zip(e.elements, target.fields):
                self.expr(el, scope, ftype)
                self.coerce(el, ftype, lambda a, t, n=fname: f"field '{n}': cannot use {a} as {t}")
            self.fold_aggregate(e, [(n, el) for (n, _), el in zip(target.fields, e.elements)])
            return expected
        if isinstance(target, T.TupleType) and len(target.elements) == len(e.elements):
            for el, et in zip(e.elements, target.elements):
                self.expr(el, scope, et)
                self.coerce(el, et, lambda a, t: f"cannot use {a} as {t}")
            self.fold_aggregate(e, [(None, el) for el in e.elements])
            return expected
        if isinstance(target, T.ListType):
            for el in e.elements:
                self.expr(el, scope, target.element)
                self.coerce(el, target.element, lambda a, t: f"list element of type {a} is not a {t}")
            self.fold_aggregate(e, [(None, el) for el in e.elements])
            return expected
        if isinstance(target, T.StackType) and len(e.elements) == target.size:
            for el in e.elements:
                self.expr(el, scope, target.element)
            return expected
        for el in e.elements:
            self.expr(el, scope)
        self.fold_aggregate(e, [(None, el) for el in e.elements])
        return T.TupleType(el.type for el in e.elements)

    def fold_aggregate(self, e, named_elements):
        """const_value of a list/struct expression whose elements are all constants:
        a tuple (unnamed elements) or a dict field name -> value (struct fields)."""
        values = [el.const_value for _, el in named_elements]
        if not named_elements or any(v is None for v in values):
            return
        if named_elements[0][0] is None:
            e.const_value = tuple(values)
        else:
            e.const_value = {n: v for (n, _), v in zip(named_elements, values)}

    def struct_expression(self, e: A.StructExpression, scope, expected):
        target = T.strip_newtype(expected) if expected is not None else None
        if e.type_ref is not None:
            target = self.resolve(e.type_ref, scope)
        if isinstance(target, T.StructLikeType):
            given = {}
            has_dots = False
            for f in e.fields:
                if f.name == "...":
                    has_dots = True
                    continue
                ft = target.field_type(f.name)
                if ft is None:
                    raise CompileError(f.loc, f"{target} has no field '{f.name}'")
                if f.name in given:
                    raise CompileError(f.loc, f"field '{f.name}' is given twice")
                self.expr(f.value, scope, ft)
                self.coerce(f.value, ft, lambda a, t, n=f.name: f"field '{n}': cannot use {a} as {t}")
                given[f.name] = f
            missing = [n for n in target.field_names() if n not in given]
            if missing and not has_dots:
                raise CompileError(e.loc, f"missing field '{missing[0]}' of {target}")
            if not missing:
                self.fold_aggregate(e, [(n, given[n].value) for n in target.field_names()])
            return target
        for f in e.fields:
            if f.name != "...":
                self.expr(f.value, scope)
        return T.StructExpressionType((f.name, f.value.type) for f in e.fields if f.name != "...")

    def invalid_header(self, e, scope, expected):
        target = T.strip_newtype(expected) if expected is not None else None
        if not isinstance(target, (T.HeaderType, T.HeaderUnionType)):
            raise CompileError(e.loc, "'{#}' needs a header type from its context")
        return target

    def dont_care(self, e, scope, expected):
        return T.DONTCARE

    def dots(self, e, scope, expected):
        return T.DONTCARE

    def default_expr(self, e, scope, expected):
        return T.DONTCARE

    def keyset_only(self, e, scope, expected):
        raise CompileError(e.loc, f"'{expr_text(e)}' is only allowed in a select case or table entry")

    def select_in_expression(self, e, scope, expected):
        raise CompileError(e.loc, "select is only allowed as a parser state's transition")

    def constructor_call(self, e: A.ConstructorCallExpression, scope, expected):
        t = self.resolve(e.type_ref, scope, allow_partial=True)
        decl = getattr(t, "decl", None)
        e.decl = decl
        if isinstance(t, T.ExternType):
            bound, e.param_args = self.extern_constructor(t, e.args, scope, e.loc)
            return bound
        if isinstance(decl, (A.ParserDecl, A.ControlDecl)):
            e.param_args = self.bind_arguments(decl.ctor_params, e.args, scope, decl.name, e.loc)
            return decl.type
        if isinstance(t, T.PackageType):
            bound, e.param_args = self.package_arguments(t, e.args, scope, e.loc)
            return bound
        raise CompileError(e.loc, f"cannot construct a value of type {t}")

    # -- calls ---------------------------------------------------------------------------------

    def call(self, e: A.MethodCallExpression, scope: Scope, expected):
        callee = e.callee
        type_args = [self.resolve(t, scope) for t in e.type_args]
        e.resolved_type_args = type_args
        if isinstance(callee, A.PathExpression):
            self.expr(callee, scope)
            decl = callee.decl
            candidates = decl if isinstance(decl, list) else [decl]
            first = candidates[0]
            if isinstance(first, A.ActionDecl):
                return self.action_call(e, first, scope)
            if isinstance(first, (A.FunctionDecl, A.ExternFunctionDecl)):
                fn = self.pick_overload(candidates, e, callee.name)
                callee.decl = fn
                return self.function_call(e, fn, scope, type_args, expected)
            raise CompileError(callee.loc, f"'{callee.name}' is not a function or action")
        if isinstance(callee, A.MemberExpression):
            bt = self.expr(callee, scope)
            if not isinstance(bt, BuiltinMethod):
                raise CompileError(callee.loc, f"'{expr_text(callee)}' is not a method")
            return self.method_call(e, callee, bt, scope, type_args, expected)
        self.expr(callee, scope)
        raise CompileError(callee.loc, f"'{expr_text(callee)}' cannot be called")

    def pick_overload(self, candidates, e: A.MethodCallExpression, name):
        fits = [c for c in candidates if self.arity_matches(c.params, e.args)]
        if not fits:
            counts = sorted({len(c.params) for c in candidates})
            raise CompileError(e.loc, f"'{name}' expects {' or '.join(map(str, counts))} "
                                      f"argument{'s' if counts != [1] else ''}, got {len(e.args)}")
        return fits[0]

    def arity_matches(self, params, args) -> bool:
        if any(a.name for a in args):
            names = {p.name for p in params}
            return all(a.name in names for a in args) and all(
                p.name in {a.name for a in args} or p.optional or p.default is not None for p in params)
        required = sum(1 for p in params if not (p.optional or p.default is not None))
        return required <= len(args) <= len(params)

    def action_call(self, e: A.MethodCallExpression, action: A.ActionDecl, scope: Scope):
        if self.ctx.kind == "parser":
            raise CompileError(e.loc, "actions cannot be called from a parser")
        e.callee_decl = action
        e.call_kind = "action"
        e.param_args = self.bind_arguments(action.params, e.args, scope, action.name, e.loc)
        return T.VOID

    def function_call(self, e, fn, scope, type_args, expected):
        e.callee_decl = fn
        is_extern = isinstance(fn, A.ExternFunctionDecl)
        e.call_kind = "extern_function" if is_extern else "function"
        if is_extern and fn.name == "verify" and fn.loc.file.endswith("core.p4"):
            e.call_kind = "builtin"
            e.builtin = "verify"
            if self.ctx.kind != "parser":
                raise CompileError(e.loc, "verify can only be called in a parser")
        mapping = self.explicit_type_args(fn.type_params, type_args, e, fn.name)
        e.param_args = self.bind_arguments(fn.params, e.args, scope, fn.name, e.loc, mapping,
                                           generic=fn.type_params)
        e.resolved_type_args = [mapping.get(tp) for tp in fn.type_params]
        if is_extern and fn.name == "static_assert" and fn.loc.file.endswith("core.p4"):
            self.static_assert(e)
        return self.substitute(fn.return_type.type, mapping)

    def static_assert(self, e: A.MethodCallExpression):
        check = e.param_args[0][1]
        if self.require_const(check, "the condition of static_assert") is not True:
            message = "static assertion failed"
            if len(e.param_args) > 1 and e.param_args[1][1] is not None:
                message += f": {e.param_args[1][1].const_value}"
            raise CompileError(e.loc, message)
        e.const_value = True

    def explicit_type_args(self, type_params, type_args, e, name) -> dict:
        if type_args and len(type_args) != len(type_params):
            raise CompileError(e.loc, f"'{name}' takes {len(type_params)} type arguments, got {len(type_args)}")
        return {tp: ta for tp, ta in zip(type_params, type_args) if not isinstance(ta, T.DontCareType)}

    def method_call(self, e, callee: A.MemberExpression, m: "BuiltinMethod", scope, type_args, expected):
        owner = m.owner
        name = m.name
        if isinstance(owner, T.ExternType):
            candidates = callee.decl if isinstance(callee.decl, list) else [callee.decl]
            method = self.pick_overload(candidates, e, f"{owner.name}.{name}")
            callee.decl = method
            e.callee_decl = method
            extern_decl = owner.decl
            if extern_decl.name in ("packet_in", "packet_out") and extern_decl.loc.file.endswith("core.p4"):
                e.call_kind = "builtin"
                e.builtin = name
                if extern_decl.name == "packet_in" and self.ctx.kind not in ("parser",):
                    raise CompileError(e.loc, f"packet_in.{name} can only be called in a parser")
            else:
                e.call_kind = "extern_method"
            mapping = {tp: ta for tp, ta in zip(extern_decl.type_params, owner.type_args)
                       if not isinstance(ta, T.TypeVar) or ta.decl is not tp}
            mapping.update(self.explicit_type_args(method.type_params, type_args, e, name))
            free = [tp for tp in list(extern_decl.type_params) + list(method.type_params) if tp not in mapping]
            # An extern's own type parameters left open by its instantiation (v1model's
            # `counter(1024, CounterType.packets) c;`) default to bit<32> for int arguments.
            open_extern_params = [tp for tp in extern_decl.type_params if tp not in mapping]
            e.param_args = self.bind_arguments(method.params, e.args, scope, f"{owner.name}.{name}",
                                               e.loc, mapping, generic=free, int_default=open_extern_params)
            e.resolved_type_args = [mapping.get(tp) for tp in method.type_params]
            ret = self.substitute(method.return_type.type, mapping)
            if isinstance(ret, T.TypeVar):
                raise CompileError(e.loc, f"cannot infer the result type of {owner.name}.{name}; "
                                          f"give it explicitly, e.g. {name}<bit<8>>()")
            if e.builtin == "extract":
                self.check_extract(e)
            if e.builtin == "emit":
                self.check_emit(e)
            return ret
        e.call_kind = "builtin"
        e.builtin = name
        if isinstance(owner, T.TableType):
            if e.args:
                raise CompileError(e.loc, "apply() of a table takes no arguments")
            if self.ctx.kind != "control":
                raise CompileError(e.loc, "tables can only be applied in a control's apply block")
            e.call_kind = "table_apply"
            e.builtin = None
            e.callee_decl = owner.decl
            return T.TableResultType(owner.name, owner.decl)
        if isinstance(owner, T.ParserType):
            e.call_kind = "block_apply"
            e.builtin = None
            base = callee.expr
            e.callee_decl = base.decl if isinstance(base, A.PathExpression) else owner.decl
            decl = owner.decl
            if isinstance(owner, T.ControlType) != (self.ctx.kind != "parser"):
                what = "controls" if isinstance(owner, T.ControlType) else "parsers"
                where = "parsers" if isinstance(owner, T.ControlType) else "controls"
                raise CompileError(e.loc, f"{what} cannot be applied in {where}")
            e.param_args = self.bind_arguments(decl.params, e.args, scope, decl.name, e.loc)
            return T.VOID
        if name in ("isValid", "setValid", "setInvalid"):
            if e.args:
                raise CompileError(e.loc, f"{name}() takes no arguments")
            if isinstance(owner, T.HeaderUnionType) and name != "isValid":
                raise CompileError(e.loc, f"{name}() cannot be called on a header_union")
            if name != "isValid":
                self.require_lvalue(callee.expr, f"call {name}() on")
                return T.VOID
            return T.BOOL
        if name in ("push_front", "pop_front"):
            if len(e.args) != 1:
                raise CompileError(e.loc, f"{name} expects 1 argument, got {len(e.args)}")
            self.expr(e.args[0].value, scope, T.INT)
            self.require_const(e.args[0].value, f"argument of {name}")
            self.require_lvalue(callee.expr, f"call {name} on")
            e.param_args = [(None, e.args[0].value)]
            return T.VOID
        if name in SIZE_METHODS:
            if e.args:
                raise CompileError(e.loc, f"{name}() takes no arguments")
            e.const_value = header_size(owner, name)
            return T.INT
        unsupported(e.loc, f"method {name}()")

    def check_extract(self, e):
        arg = e.args[0].value if e.args else None
        t = T.strip_newtype(arg.type) if arg is not None else None
        if not isinstance(t, T.HeaderType):
            raise CompileError(arg.loc if arg is not None else e.loc,
                               f"extract needs a header, not {arg.type if arg is not None else 'nothing'}")
        varbits = [n for n, ft in t.fields if isinstance(ft, T.VarbitType)]
        if len(e.args) == 1 and varbits:
            raise CompileError(e.loc, f"extract of header {t} with a varbit field needs a size argument")
        if len(e.args) == 2 and not varbits:
            raise CompileError(e.loc, f"two-argument extract needs a header with a varbit field; {t} has none")
        self.require_whole_bytes(t, arg.loc, "extract")

    def check_emit(self, e):
        arg = e.args[0].value
        t = T.strip_newtype(arg.type)
        if not isinstance(t, (T.HeaderType, T.HeaderUnionType, T.StackType, T.StructType)):
            raise CompileError(arg.loc, f"emit needs a header, header union, stack or struct, not {arg.type}")
        self.require_whole_bytes(t, arg.loc, "emit")

    def require_whole_bytes(self, t: T.Type, loc, operation: str):
        """v1model (bmv2) packets are byte strings: every header extracted or emitted must
        be a whole number of bytes (a varbit field counts as 0 bits: its size is checked
        when the packet is parsed)."""
        t = T.strip_newtype(t)
        if isinstance(t, T.StackType):
            self.require_whole_bytes(t.element, loc, operation)
        elif isinstance(t, (T.StructType, T.HeaderUnionType)):
            for _, ft in t.fields:
                self.require_whole_bytes(ft, loc, operation)
        elif isinstance(t, T.HeaderType):
            width = sum(T.bit_width(ft) for _, ft in t.fields
                        if not isinstance(T.strip_newtype(ft), T.VarbitType))
            if width % 8:
                raise CompileError(loc, f"unsupported: {operation} of header {t.name}, whose "
                                        f"fixed-size fields are {width} bits, not a whole "
                                        "number of bytes")

    def bind_arguments(self, params, args, scope, callee_name, loc, mapping=None, generic=(),
                       int_default=()):
        """Match arguments to parameters (positional or named), type-check them, infer type
        variables into `mapping`; returns [(Parameter, Expression or None)]."""
        mapping = {} if mapping is None else mapping
        if any(a.name for a in args):
            if not all(a.name for a in args):
                raise CompileError(loc, f"call to '{callee_name}' mixes named and positional arguments")
            by_name = {}
            for a in args:
                if a.name not in {p.name for p in params}:
                    raise CompileError(a.loc, f"'{callee_name}' has no parameter named '{a.name}'")
                if a.name in by_name:
                    raise CompileError(a.loc, f"argument '{a.name}' is given twice")
                by_name[a.name] = a
            pairs = [(p, by_name[p.name].value if p.name in by_name else None) for p in params]
        else:
            required = sum(1 for p in params if not (p.optional or p.default is not None))
            if not (required <= len(args) <= len(params)):
                expect = str(len(params)) if required == len(params) else f"{required} to {len(params)}"
                raise CompileError(loc, f"'{callee_name}' expects {expect} argument"
                                        f"{'s' if expect != '1' else ''}, got {len(args)}")
            pairs = [(p, args[i].value if i < len(args) else None) for i, p in enumerate(params)]
        for p, a in pairs:
            if a is None and not (p.optional or p.default is not None):
                raise CompileError(loc, f"missing argument for parameter '{p.name}' of '{callee_name}'")
        # First pass: arguments whose type does not depend on inference.
        for p, a in pairs:
            if a is None:
                continue
            want = self.substitute(p.type, mapping)
            if self.has_typevar(want):
                self.expr(a, scope)
                if not self.unify(want, a.type, mapping):
                    raise CompileError(a.loc, f"argument '{p.name}' of '{callee_name}': {a.type} does "
                                              f"not match {want}")
        # Second pass: check every argument against its (now known) parameter type.
        for p, a in pairs:
            if a is None:
                continue
            want = self.substitute(p.type, mapping)
            if isinstance(want, T.TypeVar) and want.decl in int_default and isinstance(a.type, T.IntType):
                mapping[want.decl] = want = T.bit(32)
            if self.has_typevar(want):
                if isinstance(a.type, T.IntType):
                    raise CompileError(a.loc, f"cannot infer the width of argument '{p.name}' of "
                                              f"'{callee_name}'; give it a width, e.g. (bit<32>){expr_text(a)}")
                if isinstance(a.type, T.TupleType) and any(isinstance(x, T.IntType) for x in a.type.elements):
                    raise CompileError(a.loc, f"a list passed as '{p.name}' of '{callee_name}' contains "
                                              "an integer without a width")
                self.check_direction(p, a, callee_name)
                continue
            if a.type is None or isinstance(a, (A.ListExpression, A.StructExpression, A.InvalidHeaderExpression)):
                self.expr(a, scope, want)
            elif isinstance(a.type, T.IntType):
                self.coerce(a, want, None)
            self.coerce(a, want, lambda at, t, n=p.name: (
                f"argument '{n}' of '{callee_name}' has type {at}, expected {t}"))
            self.check_direction(p, a, callee_name)
        return pairs

    def check_direction(self, p, a, callee_name):
        if p.direction in ("out", "inout"):
            if isinstance(a, A.DontCareExpression):
                if p.direction == "inout":
                    raise CompileError(a.loc, f"'_' cannot be passed to inout parameter '{p.name}'")
                return
            problem = self.lvalue_problem(a)
            if problem is not None:
                raise CompileError(a.loc, f"{p.direction} argument '{p.name}' of '{callee_name}' must be "
                                          f"writable; '{expr_text(a)}' is not: {problem}")
        elif isinstance(a, A.DontCareExpression) and p.direction is not None:
            raise CompileError(a.loc, "'_' can only be passed to an out parameter")

    def has_typevar(self, t) -> bool:
        if isinstance(t, T.TypeVar):
            return True
        if isinstance(t, (T.StructLikeType, T.ExternType, T.ParserType)):
            return any(self.has_typevar(a) for a in t.type_args)
        if isinstance(t, T.StackType):
            return self.has_typevar(t.element)
        if isinstance(t, T.TupleType):
            return any(self.has_typevar(a) for a in t.elements)
        return False

    # -- keysets -------------------------------------------------------------------------------

    def keyset(self, ks: A.Expression, types: list, scope, where):
        if isinstance(ks, (A.DefaultExpression, A.DontCareExpression)):
            ks.type = T.DONTCARE
            return
        if len(types) == 1 and not isinstance(ks, A.ListExpression):
            self.keyset_element(ks, types[0], scope, where)
            return
        if isinstance(ks, A.PathExpression):
            self.expr(ks, scope)
            if isinstance(ks.decl, A.ValueSetDecl):
                return
        if not isinstance(ks, A.ListExpression) or len(ks.elements) != len(types):
            raise CompileError(ks.loc, f"the keyset needs {len(types)} elements")
        for el, t in zip(ks.elements, types):
            self.keyset_element(el, t, scope, where)
        ks.type = T.SetType(T.TupleType(types))

    def keyset_element(self, ks: A.Expression, t: T.Type, scope, where):
        if isinstance(ks, (A.DefaultExpression, A.DontCareExpression)):
            ks.type = T.DONTCARE
            return
        if isinstance(ks, (A.MaskExpression, A.RangeExpression)):
            # Masks and ranges are defined on bits: for a serializable-enum key their operands
            # are values of the enum's representation type (enum members convert to it).
            base = T.strip_newtype(t)
            part_type = base.underlying if isinstance(base, T.EnumType) and base.underlying else t
            parts = (ks.value, ks.mask) if isinstance(ks, A.MaskExpression) else (ks.lo, ks.hi)
            for part in parts:
                self.keyset_value(part, part_type, scope)
            ks.type = T.SetType(t)
            return
        if isinstance(ks, A.PathExpression):
            self.expr(ks, scope, t)
            if isinstance(ks.decl, A.ValueSetDecl):
                if ks.type.element != t and not isinstance(ks.type.element, T.StructType):
                    raise CompileError(ks.loc, f"value_set of {ks.type.element} used for a {t} key")
                return
            self.coerce(ks, t, lambda a, w: f"keyset value of type {a} does not match {w}")
            self.require_const(ks, "a keyset value")
            return
        self.keyset_value(ks, t, scope)

    def keyset_value(self, e, t, scope):
        self.expr(e, scope, t)
        self.coerce(e, t, lambda a, w: f"keyset value of type {a} does not match {w}")
        self.require_const(e, "a keyset value")

    # -- checks --------------------------------------------------------------------------------

    def coerce(self, e: A.Expression, target: T.Type, message):
        """Make `e` usable as a `target` value: gives int constants the target's width;
        raises CompileError(message(actual, target)) when the types do not fit."""
        if target is None:
            return
        actual = e.type
        if actual == target or isinstance(target, (T.TypeVar, T.DontCareType)):
            return
        if isinstance(e, A.DontCareExpression):
            return
        base = T.strip_newtype(target)
        if isinstance(actual, T.IntType):
            if isinstance(base, T.BitsType):
                if e.const_value is not None:
                    e.const_value = base.wrap(e.const_value)
                e.type = target
                self.retype_int_tree(e, target)
                return
            if isinstance(base, T.IntType):
                return
            if isinstance(base, T.EnumType) and base.underlying is not None:
                if message is None:
                    return
        if isinstance(actual, T.EnumType) and actual.underlying is not None and actual.underlying == base:
            return  # a serializable enum value converts to its representation type
        if isinstance(actual, T.StructExpressionType) and isinstance(base, T.StructLikeType):
            e.type = target
            return
        if isinstance(actual, T.TupleType) and isinstance(base, (T.StructLikeType, T.TupleType)) and \
                isinstance(e, A.ListExpression):
            e.type = target
            return
        if isinstance(actual, T.StructLikeType) and isinstance(base, T.StructLikeType) and \
                actual.decl is base.decl and actual.type_args == base.type_args:
            return
        reason = None
        if isinstance(actual, T.ParserType) and isinstance(base, T.ParserType):
            reason = self.block_mismatch(actual, base)
            if reason is None:
                return
        if isinstance(actual, T.ExternType) and isinstance(base, T.ExternType) and actual.decl is base.decl \
                and all(a == b or isinstance(a, T.TypeVar) for a, b in zip(actual.type_args, base.type_args)):
            return  # type arguments the instantiation left open fit any
        if message is None:
            return
        raise CompileError(e.loc, message(actual, target) + (f" ({reason})" if reason else ""))

    def retype_int_tree(self, e, target):
        """Give the infinite-precision sub-expressions of e the width of `target`."""
        if isinstance(e, (A.BinaryExpression,)) and e.op not in ("<<", ">>"):
            for side in (e.left, e.right):
                if isinstance(side.type, T.IntType):
                    side.type = target
                    if side.const_value is not None:
                        side.const_value = T.strip_newtype(target).wrap(side.const_value)
                    self.retype_int_tree(side, target)
        elif isinstance(e, A.UnaryExpression) and isinstance(e.operand.type, T.IntType):
            e.operand.type = target
            if e.operand.const_value is not None:
                e.operand.const_value = T.strip_newtype(target).wrap(e.operand.const_value)
            self.retype_int_tree(e.operand, target)
        elif isinstance(e, A.TernaryExpression):
            for side in (e.then, e.else_):
                if isinstance(side.type, T.IntType):
                    side.type = target
                    if side.const_value is not None:
                        side.const_value = T.strip_newtype(target).wrap(side.const_value)
                    self.retype_int_tree(side, target)
        elif isinstance(e, A.BinaryExpression) and isinstance(e.left.type, T.IntType):
            e.left.type = target
            if e.left.const_value is not None:
                e.left.const_value = T.strip_newtype(target).wrap(e.left.const_value)
            self.retype_int_tree(e.left, target)

    def require_const(self, e: A.Expression, what: str):
        if e.const_value is None:
            raise CompileError(e.loc, f"{what} must be a compile-time constant")
        return e.const_value

    def require_sized(self, e: A.Expression):
        if isinstance(e.type, T.IntType):
            raise CompileError(e.loc, f"'{expr_text(e)}' needs a width here")

    def require_lvalue(self, e: A.Expression, what: str):
        """Raise unless `e` can be written; `what` completes "cannot <what> 'e'"."""
        problem = self.lvalue_problem(e)
        if problem is not None:
            raise CompileError(e.loc, f"cannot {what} '{expr_text(e)}': {problem}")

    def lvalue_problem(self, e: A.Expression):
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

    _EXPRESSIONS = {
        A.IntLiteral: int_literal,
        A.BoolLiteral: bool_literal,
        A.StringLiteral: string_literal,
        A.PathExpression: path,
        A.MemberExpression: member,
        A.UnaryExpression: unary,
        A.BinaryExpression: binary,
        A.TernaryExpression: ternary,
        A.CastExpression: cast,
        A.SliceExpression: slice,
        A.IndexExpression: index,
        A.ListExpression: list_expression,
        A.StructExpression: struct_expression,
        A.InvalidHeaderExpression: invalid_header,
        A.DontCareExpression: dont_care,
        A.DotsExpression: dots,
        A.DefaultExpression: keyset_only,
        A.MaskExpression: keyset_only,
        A.RangeExpression: keyset_only,
        A.SelectExpression: select_in_expression,
        A.MethodCallExpression: call,
        A.ConstructorCallExpression: constructor_call,
    }


SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


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


class TypeName(T.Type):
    """Internal: the 'type' of a name that denotes a type (as in `MyEnum.A`)."""

    __slots__ = ("decl",)

    def __init__(self, decl):
        self.decl = decl

    def __str__(self):
        return f"type {self.decl.name}"


class BuiltinMethod(T.Type):
    """Internal: the 'type' of a method member (`hdr.isValid`, `r.read`, `t.apply`)
    before it is called; `owner` is the type of the object."""

    __slots__ = ("name", "owner")

    def __init__(self, name, owner):
        self.name = name
        self.owner = owner

    def __str__(self):
        return f"method {self.name}"


def check_program(program: A.Program) -> A.Program:
    """Type-check `program` in place (see the module docstring)."""
    Checker(program).check()
    return program
