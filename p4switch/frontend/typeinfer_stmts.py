"""Type inference for statements (the `StatementTyping` part of `typeinfer.TypeInference`):
assignments, calls, if, switch (including `action_run` labels, resolved here against the
table's actions), return/exit/break/continue in their allowed places, for loops."""

from __future__ import annotations

from . import ast as A
from . import types as T
from .errors import CompileError
from .printer import expr_text


class StatementTyping:
    """Types statements; mixed into `typeinfer.TypeInference`."""

    def block(self, b: A.BlockStatement):
        for st in b.statements:
            self.statement(st)

    def statement(self, st):
        fn = self._STATEMENTS.get(type(st))
        if fn is None:
            if isinstance(st, (A.VariableDecl, A.ConstantDecl, A.Instantiation)):
                return self.declaration(st)
            raise CompileError(st.loc, f"unexpected statement {type(st).__name__}")
        fn(self, st)

    def assignment(self, st: A.AssignmentStatement):
        self.expr(st.lhs)
        self.expr(st.rhs, st.lhs.type)
        self.coerce(st.rhs, st.lhs.type, lambda a, t: (
            f"cannot assign a value of type {a} to '{expr_text(st.lhs)}' of type {t}"))

    def call_statement(self, st: A.MethodCallStatement):
        self.expr(st.call)

    def if_statement(self, st: A.IfStatement):
        self.condition(st.cond, "if")
        self.statement(st.then)
        if st.else_ is not None:
            self.statement(st.else_)

    def condition(self, e, what):
        self.expr(e, T.BOOL)
        if not isinstance(e.type, T.BoolType):
            raise CompileError(e.loc, f"{what} condition must be bool, not {e.type}")

    def return_statement(self, st: A.ReturnStatement):
        ctx = self.ctx
        if ctx.kind == "function":
            if isinstance(ctx.return_type, T.VoidType):
                if st.value is not None:
                    raise CompileError(st.loc, "a void function cannot return a value")
            else:
                if st.value is None:
                    raise CompileError(st.loc, f"return needs a value of type {ctx.return_type}")
                self.expr(st.value, ctx.return_type)
                self.coerce(st.value, ctx.return_type,
                            lambda a, t: f"cannot return a value of type {a} from a function returning {t}")
        elif st.value is not None:
            raise CompileError(st.loc, "return with a value is only allowed in functions")
        elif ctx.kind == "parser":
            raise CompileError(st.loc, "return is not allowed in a parser")

    def exit_statement(self, st):
        if self.ctx.kind in ("parser", "function"):
            raise CompileError(st.loc, f"exit is not allowed in a {self.ctx.kind}")

    def empty_statement(self, st):
        pass

    def loop_control(self, st):
        if not self.ctx.in_loop:
            word = "break" if isinstance(st, A.BreakStatement) else "continue"
            raise CompileError(st.loc, f"{word} outside a loop")

    def switch_statement(self, st: A.SwitchStatement):
        self.expr(st.expr)
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
                    self.block(case.body)
            return
        base = T.strip_newtype(t)
        if not isinstance(base, (T.BitsType, T.EnumType, T.ErrorType, T.IntType)):
            raise CompileError(st.expr.loc, f"cannot switch on a value of type {t}")
        for case in st.cases:
            if not isinstance(case.label, A.DefaultExpression):
                self.expr(case.label, t)
                self.coerce(case.label, t, lambda a, w: f"switch label of type {a} does not match {w}")
                value = self.require_const(case.label, "switch label")
                if value in seen:
                    raise CompileError(case.label.loc, f"duplicate switch label '{expr_text(case.label)}'")
                seen.add(value)
            if case.body is not None:
                self.block(case.body)
        if st.cases and st.cases[-1].body is None:
            raise CompileError(st.cases[-1].loc, "the last switch label needs a body")

    def table_action_named(self, table: A.TableDecl, name: str):
        """The ActionDecl called `name` that `table` can run (its actions, plus the implicit
        NoAction default of a table without default_action)."""
        for ref in table.actions:
            if ref.name == name:
                return ref.decl
        if name == "NoAction" and table.default_action is None:
            found = self.program.find("NoAction")
            if isinstance(found, A.ActionDecl):
                return found
        return None

    def for_statement(self, st: A.ForStatement):
        for s in st.init:
            self.statement(s)
        if st.cond is not None:
            self.condition(st.cond, "for")
        for s in st.updates:
            self.statement(s)
        self.loop_body(st.body)

    def for_in_statement(self, st: A.ForInStatement):
        var = st.var
        declared = self.resolve(var.type_ref) if var.type_ref is not None else None
        elem = self.collection_element(st.collection, declared)
        var.type = declared if declared is not None else elem
        if isinstance(var.type, T.IntType):
            raise CompileError(var.loc, f"loop variable '{var.name}' needs a type with a width")
        if declared is not None and elem != declared:
            self.check_loop_element(st.collection, elem, declared)
        self.loop_body(st.body)

    def collection_element(self, coll: A.Expression, declared):
        """Element type of what a for-in loop iterates over: a range `lo .. hi`, a header
        stack, or a list."""
        if isinstance(coll, A.RangeExpression):
            hint = declared
            self.expr(coll.lo, hint)
            self.expr(coll.hi, hint if hint is not None else coll.lo.type)
            if isinstance(coll.lo.type, T.IntType) and not isinstance(coll.hi.type, T.IntType):
                self.coerce(coll.lo, coll.hi.type, None)
            if coll.lo.type != coll.hi.type:
                raise CompileError(coll.loc, f"range bounds have different types: {coll.lo.type} "
                                             f"and {coll.hi.type}")
            coll.type = T.SetType(coll.lo.type)
            return coll.lo.type
        self.expr(coll)
        t = coll.type
        if isinstance(t, (T.StackType, T.ListType)):
            return t.element
        if isinstance(t, T.TupleType) and len(set(t.elements)) == 1:
            return t.elements[0]
        raise CompileError(coll.loc, f"cannot iterate over a value of type {t}")

    def check_loop_element(self, where: A.Expression, have: T.Type, want: T.Type):
        if not (isinstance(have, T.IntType) and T.is_integer(want)):
            raise CompileError(where.loc, f"loop variable of type {want} cannot take values of type {have}")

    def loop_body(self, body):
        saved = self.ctx.in_loop
        self.ctx.in_loop = True
        try:
            self.statement(body)
        finally:
            self.ctx.in_loop = saved

    def block_statement(self, st):
        self.block(st)

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
