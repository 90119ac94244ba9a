"""Type inference for declarations (the `DeclarationTyping` part of `typeinfer.TypeInference`):
constants, variables, typedefs, headers/structs/enums, externs, parsers, controls, actions,
functions, instantiations and tables. Names are already resolved (resolve.py)."""

from __future__ import annotations

from contextlib import contextmanager

from . import ast as A
from . import types as T
from .constfold import value
from .errors import CompileError
from .resolve import unsupported


class Context:
    """Where inference is: the enclosing block kind and function return type."""

    __slots__ = ("kind", "return_type", "in_loop", "block")

    def __init__(self, kind: str, return_type=None, block=None):
        self.kind = kind          # 'top', 'parser', 'control', 'action', 'function'
        self.return_type = return_type
        self.in_loop = False
        self.block = block


class DeclarationTyping:
    """Types declarations; mixed into `typeinfer.TypeInference`."""

    @contextmanager
    def inside(self, kind: str, block=None, return_type=None):
        """Infer within a parser, control, action or function: a new Context, in `block`
        (default: the enclosing one's block), for the duration of the `with`."""
        saved = self.ctx
        self.ctx = Context(kind, return_type=return_type,
                           block=saved.block if block is None else block)
        try:
            yield
        finally:
            self.ctx = saved

    def top_declaration(self, d):
        if isinstance(d, (A.ErrorDecl, A.MatchKindDecl)):
            # every error (match_kind) declaration adds its members to the one error type
            merged = self.error_type if isinstance(d, A.ErrorDecl) else self.match_kind_type
            for m in d.members:
                merged.members.append(m.name)
                m.type = merged
            d.type = merged
        else:
            self.declaration(d)

    def declaration(self, d):
        """Type a declaration (with the method `_DECLARATIONS` names for its kind)."""
        for kind, method in self._DECLARATIONS:
            if isinstance(d, kind):
                method(self, d)
                return
        if not isinstance(d, A.EmptyStatement):
            raise CompileError(d.loc, f"unexpected declaration {type(d).__name__}")

    def constant_decl(self, d: A.ConstantDecl):
        d.type = self.resolve(d.type_ref)
        self.expr(d.value, d.type)
        self.require_const(d.value, f"initializer of constant '{d.name}'")

    def typedef_decl(self, d: A.TypedefDecl):
        base = self.resolve(d.type_ref)
        d.type = T.NewType(d.name, d, base) if d.is_newtype else base

    def extern_function_decl(self, d: A.ExternFunctionDecl):
        self.type_params(d.type_params)
        d.return_type.type = self.resolve(d.return_type)
        self.parameters(d.params)
        d.type = T.ActionType(d.name, d)

    def block_type_decl(self, d):
        """A parser, control or package type (no body)."""
        self.type_params(d.type_params)
        self.parameters(d.params)
        cls = {A.ParserTypeDecl: T.ParserType, A.ControlTypeDecl: T.ControlType,
               A.PackageTypeDecl: T.PackageType}[type(d)]
        d.type = cls(d.name, d, d.params)

    def value_set_decl(self, d: A.ValueSetDecl):
        elem = self.resolve(d.type_ref)
        self.expr(d.size, T.INT)
        self.require_const(d.size, "value_set size")
        d.type = T.SetType(elem)

    def type_params(self, type_params):
        for tp in type_params:
            tp.type = T.TypeVar(tp.name, tp)

    def parameters(self, params):
        for p in params:
            p.type = self.resolve(p.type_ref)
            if p.default is not None:
                self.expr(p.default, p.type)

    def variable_decl(self, d: A.VariableDecl):
        d.type = self.resolve(d.type_ref)
        if isinstance(d.type, (T.ExternType, T.ParserType, T.PackageType)):
            raise CompileError(d.loc, f"cannot declare a variable of type {d.type}")
        if d.init is not None:
            self.expr(d.init, d.type)
            self.coerce(d.init, d.type, lambda a, t: f"cannot initialize '{d.name}' of type {t} with a value of type {a}")

    def struct_like_decl(self, d: A.StructLikeDecl):
        self.type_params(d.type_params)
        for f in d.fields:
            f.type = self.resolve(f.type_ref)
            self.field_list_indices(f)
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

    def field_list_indices(self, f: A.StructField):
        """Fold the indices of a field's `@field_list(i, ...)` annotations: literals or named
        compile-time constants (e.g. `const int FL = 1;`)."""
        for ann in f.annotations:
            if ann.name != "field_list":
                continue
            for arg in ann.args:
                self.expr(arg, T.INT)
                self.require_const(arg, "@field_list index")

    def check_header_field(self, f: A.StructField):
        t = T.strip_newtype(f.type)
        ok = isinstance(t, (T.BitsType, T.VarbitType, T.BoolType, T.TypeVar)) or \
            (isinstance(t, T.EnumType) and t.underlying is not None) or isinstance(t, T.StructType)
        if not ok:
            raise CompileError(f.loc, f"header field '{f.name}' cannot have type {f.type}")

    def enum_decl(self, d: A.EnumDecl):
        underlying = None
        values = {}
        if d.underlying is not None:
            underlying = T.strip_newtype(self.resolve(d.underlying))
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
                self.expr(m.value, underlying)
                values[m.name] = self.require_const(m.value, "enum member value")
            elif m.value is not None:
                raise CompileError(m.value.loc, "only serializable enums have member values")

    def extern_decl(self, d: A.ExternDecl):
        self.type_params(d.type_params)
        d.type = T.ExternType(d.name, d, tuple(tp.type for tp in d.type_params))
        for c in d.constructors:
            c.extern = d
            self.parameters(c.params)
        for m in d.methods:
            m.extern = d
            self.type_params(m.type_params)
            m.return_type.type = self.resolve(m.return_type)
            self.parameters(m.params)

    def block_decl(self, d):
        """A parser or control: its type, apply and constructor parameters, locals, then its
        states or apply block."""
        is_parser = isinstance(d, A.ParserDecl)
        d.type = (T.ParserType if is_parser else T.ControlType)(d.name, d, d.params)
        if d.type_params:
            unsupported(d.loc, f"generic {type(d).__name__[:-4].lower()} declaration '{d.name}'")
        self.parameters(d.params)
        self.parameters(d.ctor_params)
        for p in d.ctor_params:
            if p.direction is not None:
                raise CompileError(p.loc, f"constructor parameter '{p.name}' cannot have a direction")
        with self.inside("parser" if is_parser else "control", block=d):
            for local in d.locals:
                self.declaration(local)
            if not is_parser:
                self.block(d.body)
                return
            for s in d.states:
                s.type = T.STATE
            for s in d.states:
                self.parser_state(s)

    def parser_state(self, s: A.ParserState):
        for st in s.statements:
            self.statement(st)
        if s.select is not None:
            sel = s.select
            for e in sel.exprs:
                self.expr(e)
                self.require_sized(e)
            sel.type = T.TupleType(e.type for e in sel.exprs)
            for case in sel.cases:
                self.keyset(case.keyset, [e.type for e in sel.exprs], "select")

    def action_decl(self, d: A.ActionDecl):
        self.parameters(d.params)
        seen_directionless = False
        for p in d.params:
            if p.direction is None:
                seen_directionless = True
            elif seen_directionless:
                raise CompileError(p.loc, f"action '{d.name}': directional parameters must come "
                                          "before directionless ones")
        d.type = T.ActionType(d.name, d)
        with self.inside("action"):
            self.block(d.body)

    def function_decl(self, d: A.FunctionDecl):
        if d.type_params:
            unsupported(d.loc, f"generic function '{d.name}'")
        ret = self.resolve(d.return_type)
        d.return_type.type = ret
        self.parameters(d.params)
        d.type = T.ActionType(d.name, d)
        with self.inside("function", return_type=ret):
            self.block(d.body)

    # -- instantiations ------------------------------------------------------------------------

    def instantiation(self, d: A.Instantiation):
        t = self.resolve(d.type_ref, allow_partial=True)
        decl = getattr(t, "decl", None)
        d.decl = decl
        d.type = t
        if isinstance(t, T.ExternType):
            d.type, d.param_args = self.extern_constructor(t, d.args, d.loc)
            if d.initializer:
                unsupported(d.loc, f"abstract method implementation in instance '{d.name}'")
        elif isinstance(t, (T.ParserType, T.ControlType)) and isinstance(decl, (A.ParserDecl, A.ControlDecl)):
            d.param_args = self.bind_arguments(decl.ctor_params, d.args, decl.name, d.loc)
        elif isinstance(t, T.PackageType):
            d.type, d.param_args = self.package_arguments(t, d.args, d.loc)
        else:
            raise CompileError(d.type_ref.loc, f"cannot instantiate {t}")
        if self.ctx.kind in ("action", "function"):
            raise CompileError(d.loc, "instantiations are not allowed inside actions or functions")

    def extern_constructor(self, t: T.ExternType, args, loc):
        decl: A.ExternDecl = t.decl
        ctors = [c for c in decl.constructors if self.arity_matches(c.params, args)]
        if not ctors:
            counts = sorted({len(c.params) for c in decl.constructors})
            raise CompileError(loc, f"no constructor of extern {decl.name} takes {len(args)} arguments"
                               + (f" (it takes {', '.join(map(str, counts))})" if counts else ""))
        ctor = ctors[0]
        mapping = self.extern_bindings(t)
        pairs = self.bind_arguments(ctor.params, args, decl.name, loc, mapping)
        bound = T.ExternType(decl.name, decl, tuple(mapping.get(tp, tp.type) for tp in decl.type_params))
        for _, arg in pairs:
            if arg is not None and value(arg) is None and not isinstance(
                    arg.type, (T.ExternType, T.ParserType)) and not is_ctor_param(arg):
                self.require_const(arg, f"constructor argument of {decl.name}")
        return bound, pairs

    def extern_bindings(self, t: T.ExternType) -> dict:
        decl = t.decl
        return {tp: ta for tp, ta in zip(decl.type_params, t.type_args) if not isinstance(ta, T.TypeVar)}

    def package_arguments(self, t: T.PackageType, args, loc):
        decl: A.PackageTypeDecl = t.decl
        mapping = {tp: ta for tp, ta in zip(decl.type_params, t.type_args)
                   if not isinstance(ta, (T.TypeVar, T.DontCareType))}
        pairs = self.bind_arguments(decl.params, args, decl.name, loc, mapping)
        bound = T.PackageType(decl.name, decl, decl.params,
                              tuple(mapping.get(tp, tp.type) for tp in decl.type_params))
        return bound, pairs

    # -- tables (the rules that are not about types are in tables.py) --------------------------

    def table_decl(self, d: A.TableDecl):
        d.type = T.TableType(d.name, d)
        if self.ctx.kind != "control":
            raise CompileError(d.loc, "tables can only be declared in controls")
        for k in d.key:
            self.expr(k.expr)
            self.require_sized(k.expr)
        for ref in d.actions:
            self.action_ref(ref, in_action_list=True)
        if d.default_action is not None:
            self.action_ref(d.default_action, in_action_list=False)
        for entry in d.entries:
            if len(entry.keys) == len(d.key):
                for kexpr, k in zip(entry.keys, d.key):
                    self.keyset_element(kexpr, k.expr.type, "entry")
            self.action_ref(entry.action, in_action_list=False)
            if entry.priority is not None:
                self.expr(entry.priority, T.INT)
            for ann in entry.annotations:
                if ann.name == "priority" and len(ann.args) == 1:
                    self.expr(ann.args[0], T.INT)
        for prop in d.properties.values():
            self.table_property(prop)

    def table_property(self, prop: A.TableProperty):
        name = prop.name
        if name in ("size", "priority_delta"):
            self.expr(prop.value, T.INT)
        elif name in ("largest_priority_wins", "support_timeout"):
            self.expr(prop.value, T.BOOL)
        else:
            self.expr(prop.value)

    def action_ref(self, ref: A.ActionRef, in_action_list: bool):
        action: A.ActionDecl = ref.decl
        if in_action_list:
            # Only directional parameters may be bound in the actions list.
            directional = [p for p in action.params if p.direction is not None]
            if ref.has_parens or directional:
                ref.param_args = self.bind_arguments(directional, ref.args, action.name, ref.loc)
        elif ref.has_parens or action.params:
            params = [p for p in action.params if p.direction is None]
            if len(ref.args) == len(action.params):
                params = action.params
            if not ref.has_parens and params:
                raise CompileError(ref.loc, f"action '{action.name}' needs arguments "
                                            f"({len(params)} expected)")
            ref.param_args = self.bind_arguments(params, ref.args, action.name, ref.loc)

    # The method that types each kind of declaration.
    _DECLARATIONS = (
        (A.ConstantDecl, constant_decl), (A.VariableDecl, variable_decl),
        (A.TypedefDecl, typedef_decl), (A.StructLikeDecl, struct_like_decl),
        (A.EnumDecl, enum_decl), (A.ExternDecl, extern_decl),
        (A.ExternFunctionDecl, extern_function_decl),
        (A.BlockTypeDecl, block_type_decl),
        ((A.ParserDecl, A.ControlDecl), block_decl), (A.ActionDecl, action_decl),
        (A.FunctionDecl, function_decl), (A.Instantiation, instantiation),
        (A.TableDecl, table_decl), (A.ValueSetDecl, value_set_decl))


def is_ctor_param(e) -> bool:
    """A directionless parameter (its value is known once the block is instantiated)."""
    return isinstance(e, A.PathExpression) and isinstance(e.decl, A.Parameter) and e.decl.direction is None

