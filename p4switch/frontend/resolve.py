"""Name resolution: the first pass after parsing (p4c's ResolveReferences).

`resolve_names(program)` walks the declarations in source order (P4 requires declaration
before use) with lexical scopes and records what every name denotes:

* `PathExpression.decl`: the declaration (a list of them for overloaded functions and extern
  functions, which type inference picks from by arity); `error.X` gets the error member as
  `MemberExpression.decl`;
* `NamedTypeRef.decl`: the type declaration (type names are looked up among types first,
  so a parameter `hdr` of a header type `hdr` does not hide the type);
* `ActionRef.decl` (table actions, default actions, entries), `KeyElement.match_kind_decl`,
  `ParserState.next_decl` and `SelectCase.state_decl` (None for accept/reject).

Members (`hdr.ipv4`, `t.apply`) depend on types and are left to type inference, as are the
labels of an `action_run` switch (names of the table's actions). Undeclared names,
redeclarations and names of the wrong kind raise CompileError here.
"""

from __future__ import annotations

from . import ast as A
from .errors import CompileError

TYPE_DECLS = (A.TypedefDecl, A.StructLikeDecl, A.EnumDecl, A.ExternDecl, A.ParserTypeDecl,
              A.ControlTypeDecl, A.PackageTypeDecl, A.ParserDecl, A.ControlDecl, A.TypeParameter)

OVERLOADABLE = (A.ExternFunctionDecl, A.FunctionDecl, A.MethodPrototype)


def unsupported(loc, what: str):
    raise CompileError(loc, f"unsupported: {what} is not supported by p4switch")


def is_type_decl(d) -> bool:
    return isinstance(d, TYPE_DECLS)


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
            if found and is_type_decl(found[0]):
                return found
            scope = scope.parent
        return self.lookup(name)


class Resolver:
    """Resolves the names of one program (see the module docstring)."""

    def __init__(self, program: A.Program):
        self.program = program
        self.top = Scope()
        self.error_members: dict[str, A.EnumMember] = {}
        self.match_kinds: dict[str, A.EnumMember] = {}

    def run(self):
        for d in self.program.declarations:
            if isinstance(d, A.ErrorDecl):
                for m in d.members:
                    if m.name in self.error_members:
                        raise CompileError(m.loc, f"error.{m.name} is already declared")
                    self.error_members[m.name] = m
            elif isinstance(d, A.MatchKindDecl):
                for m in d.members:
                    if m.name in self.match_kinds:
                        raise CompileError(m.loc, f"match_kind {m.name} is already declared")
                    self.match_kinds[m.name] = m
                    self.top.declare(m.name, m)
            else:
                self.declaration(d, self.top, top=True)

    # -- declarations --------------------------------------------------------------------------

    # Types are declared before their bodies, so they can refer to themselves; values after
    # their initializers and bodies.
    _DECLARED_FIRST = (A.StructLikeDecl, A.EnumDecl, A.ExternDecl, A.ParserDecl, A.ControlDecl)

    def declaration(self, d, scope: Scope, top=False):
        """Resolve the names inside `d` and declare it in `scope`."""
        if isinstance(d, A.EmptyStatement):
            return
        if isinstance(d, self._DECLARED_FIRST):
            scope.declare(d.name, d)
            self.type_declaration(d, scope)
        else:
            self.value_declaration(d, scope, top)
            scope.declare(d.name, d)

    def type_declaration(self, d, scope: Scope):
        if isinstance(d, A.StructLikeDecl):
            inner = self.generic_scope(scope, d.type_params)
            names = set()
            for f in d.fields:
                if f.name in names:
                    raise CompileError(f.loc, f"duplicate field '{f.name}' in {d.name}")
                names.add(f.name)
                self.type_ref(f.type_ref, inner)
                for ann in f.annotations:
                    if ann.name == "field_list":
                        for arg in ann.args:
                            self.expression(arg, scope)
        elif isinstance(d, A.EnumDecl):
            self.type_ref(d.underlying, scope)
            for m in d.members:
                self.expression(m.value, scope)
        elif isinstance(d, A.ExternDecl):
            inner = self.generic_scope(scope, d.type_params)
            for c in d.constructors:
                self.parameters(c.params, inner)
            for m in d.methods:
                minner = self.generic_scope(inner, m.type_params)
                self.type_ref(m.return_type, minner)
                self.parameters(m.params, minner)
        elif isinstance(d, A.ParserDecl):
            self.parser_decl(d, scope)
        else:
            inner = self.block_scope(d, scope)
            for local in d.locals:
                self.declaration(local, inner)
            self.block(d.body, inner)

    def value_declaration(self, d, scope: Scope, top: bool):
        if isinstance(d, (A.ConstantDecl, A.VariableDecl)):
            self.type_ref(d.type_ref, scope)
            value = d.value if isinstance(d, A.ConstantDecl) else d.init
            self.expression(value, scope)
        elif isinstance(d, A.TypedefDecl):
            self.type_ref(d.type_ref, scope)
        elif isinstance(d, (A.ExternFunctionDecl, A.BlockTypeDecl)):
            inner = self.generic_scope(scope, d.type_params)
            self.type_ref(getattr(d, "return_type", None), inner)
            self.parameters(d.params, inner)
        elif isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            inner = self.generic_scope(scope, getattr(d, "type_params", ()))
            self.type_ref(getattr(d, "return_type", None), inner)
            inner = Scope(inner)
            self.parameters(d.params, inner, declare=True)
            self.block(d.body, inner)
        elif isinstance(d, A.Instantiation):
            self.type_ref(d.type_ref, scope)
            self.arguments(d.args, scope)
        elif isinstance(d, A.TableDecl):
            self.table_decl(d, scope)
        elif isinstance(d, A.ValueSetDecl):
            self.type_ref(d.type_ref, scope)
            self.expression(d.size, scope)
        elif isinstance(d, (A.ErrorDecl, A.MatchKindDecl)) and not top:
            raise CompileError(d.loc, f"{type(d).__name__[:-4].lower()} declarations are only "
                                      "allowed at the top level")
        else:
            raise CompileError(d.loc, f"unexpected declaration {type(d).__name__}")

    def generic_scope(self, scope: Scope, type_params) -> Scope:
        if not type_params:
            return scope
        inner = Scope(scope)
        for tp in type_params:
            inner.declare(tp.name, tp)
        return inner

    def parameters(self, params, scope: Scope, declare=False):
        seen = set()
        for p in params:
            if p.name in seen:
                raise CompileError(p.loc, f"duplicate parameter '{p.name}'")
            seen.add(p.name)
            self.type_ref(p.type_ref, scope)
            self.expression(p.default, scope)
        if declare:
            for p in params:
                scope.declare(p.name, p)

    def block_scope(self, d, scope: Scope) -> Scope:
        """Scope of a parser/control body: type params, apply params, constructor params."""
        inner = Scope(self.generic_scope(scope, d.type_params))
        self.parameters(d.params, inner)
        self.parameters(d.ctor_params, inner)
        for p in list(d.params) + list(d.ctor_params):
            inner.declare(p.name, p)
        return inner

    def parser_decl(self, d: A.ParserDecl, scope: Scope):
        inner = self.block_scope(d, scope)
        for local in d.locals:
            self.declaration(local, inner)
        states = Scope(inner)
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise CompileError(s.loc, f"state '{s.name}' is built in and cannot be declared")
            states.declare(s.name, s)
        if d.state_named("start") is None:
            raise CompileError(d.loc, f"parser {d.name} has no 'start' state")
        for s in d.states:
            body = Scope(states)
            for st in s.statements:
                self.statement(st, body)
            if s.select is not None:
                for e in s.select.exprs:
                    self.expression(e, body)
                for case in s.select.cases:
                    self.expression(case.keyset, body)
                    case.state_decl = self.state_target(case.next_state, case.state_loc, d)
            elif s.next_state is not None:
                s.next_decl = self.state_target(s.next_state, s.next_loc, d)

    def state_target(self, name: str, loc, parser: A.ParserDecl):
        if name in ("accept", "reject"):
            return None
        state = parser.state_named(name)
        if state is None:
            raise CompileError(loc, f"state '{name}' is not declared in parser {parser.name}")
        return state

    def table_decl(self, d: A.TableDecl, scope: Scope):
        for k in d.key:
            self.expression(k.expr, scope)
            mk = self.match_kinds.get(k.match_kind)
            if mk is None:
                raise CompileError(k.match_kind_loc, f"unknown match kind '{k.match_kind}'")
            k.match_kind_decl = mk
        for ref in d.actions:
            self.action_ref(ref, scope)
        if d.default_action is not None:
            self.action_ref(d.default_action, scope)
        for entry in d.entries:
            for k in entry.keys:
                self.expression(k, scope)
            self.action_ref(entry.action, scope)
            self.expression(entry.priority, scope)
            for ann in entry.annotations:
                if ann.name == "priority":
                    for arg in ann.args:
                        self.expression(arg, scope)
        for prop in d.properties.values():
            self.expression(prop.value, scope)

    def action_ref(self, ref: A.ActionRef, scope: Scope):
        found = (self.top if ref.is_global else scope).lookup(ref.name)
        if not found:
            raise CompileError(ref.loc, f"'{ref.name}' is not declared")
        if not isinstance(found[0], A.ActionDecl):
            raise CompileError(ref.loc, f"'{ref.name}' is not an action")
        ref.decl = found[0]
        self.arguments(ref.args, scope)

    # -- statements ----------------------------------------------------------------------------

    def block(self, b: A.BlockStatement, scope: Scope):
        inner = Scope(scope)
        for st in b.statements:
            self.statement(st, inner)

    def statement(self, st, scope: Scope):
        if st is None:
            return
        if isinstance(st, (A.VariableDecl, A.ConstantDecl, A.Instantiation)):
            self.declaration(st, scope)
        elif isinstance(st, (A.FunctionDecl, A.ActionDecl, A.TableDecl)):
            raise CompileError(st.loc, f"{type(st).__name__[:-4].lower()} declarations are not "
                                       "allowed inside a block")
        elif isinstance(st, A.BlockStatement):
            self.block(st, scope)
        elif isinstance(st, A.IfStatement):
            self.expression(st.cond, scope)
            self.statement(st.then, Scope(scope))
            self.statement(st.else_, Scope(scope))
        elif isinstance(st, A.SwitchStatement):
            self.expression(st.expr, scope)
            for case in st.cases:
                if isinstance(case.label, A.PathExpression):
                    # An action name when switching on action_run (type inference decides).
                    found = (self.top if case.label.is_global else scope).lookup(case.label.name)
                    case.label.decl = (found[0] if len(found) == 1 else found) if found else None
                else:
                    self.expression(case.label, scope)
                if case.body is not None:
                    self.block(case.body, scope)
        elif isinstance(st, A.ForStatement):
            inner = Scope(scope)
            for s in st.init:
                self.statement(s, inner)
            self.expression(st.cond, inner)
            for s in st.updates:
                self.statement(s, inner)
            self.statement(st.body, Scope(inner))
        elif isinstance(st, A.ForInStatement):
            inner = Scope(scope)
            self.type_ref(st.var.type_ref, inner)
            self.expression(st.collection, inner)
            inner.declare(st.var.name, st.var)
            self.statement(st.body, Scope(inner))
        elif isinstance(st, (A.AssignmentStatement, A.MethodCallStatement, A.ReturnStatement)):
            for name in st.CHILDREN:
                self.expression(getattr(st, name), scope)
        elif not isinstance(st, (A.ExitStatement, A.EmptyStatement, A.BreakStatement,
                                 A.ContinueStatement)):
            raise CompileError(st.loc, f"unexpected statement {type(st).__name__}")

    # -- expressions and types -----------------------------------------------------------------

    def arguments(self, args, scope: Scope):
        for a in args:
            self.expression(a.value, scope)

    def expression(self, e, scope: Scope):
        """Resolve every name in `e` (an expression, a type reference or None)."""
        if e is None:
            return
        if isinstance(e, A.TypeRef):
            self.type_ref(e, scope)
        elif isinstance(e, A.PathExpression):
            self.path(e, scope)
        elif isinstance(e, A.MemberExpression) and isinstance(e.expr, A.PathExpression) \
                and e.expr.name == "error" and not e.expr.is_global:
            member = self.error_members.get(e.member)
            if member is None:
                raise CompileError(e.loc, f"error.{e.member} is not declared")
            e.decl = member
        else:
            for name in e.CHILDREN:
                v = getattr(e, name)
                if isinstance(v, list):
                    for x in v:
                        self.expression(x.value if isinstance(x, (A.Argument, A.NamedExpression))
                                        else x, scope)
                elif isinstance(v, dict):
                    for x in v.values():
                        self.expression(x, scope)
                else:
                    self.expression(v, scope)

    def path(self, e: A.PathExpression, scope: Scope):
        if e.name == "error":
            e.decl = None
            return
        if e.name == "this":
            unsupported(e.loc, "'this'")
        found = (self.top if e.is_global else scope).lookup(e.name)
        if not found:
            raise CompileError(e.loc, f"'{e.name}' is not declared")
        e.decl = found[0] if len(found) == 1 else found

    def type_ref(self, ref, scope: Scope):
        if ref is None:
            return
        if isinstance(ref, A.NamedTypeRef):
            found = (self.top if ref.is_global else scope).lookup_type(ref.name)
            if not found:
                raise CompileError(ref.loc, f"type '{ref.name}' is not declared")
            if not is_type_decl(found[0]):
                raise CompileError(ref.loc, f"'{ref.name}' is not a type")
            ref.decl = found[0]
        for name in ref.CHILDREN:
            v = getattr(ref, name)
            for x in (v if isinstance(v, list) else [v]):
                self.expression(x, scope)


def resolve_names(program: A.Program) -> A.Program:
    """Resolve the names of `program` in place (see the module docstring)."""
    Resolver(program).run()
    return program
