"""Statements of the P4-16 grammar (the `StatementParser` part of `parser.Parser`): blocks,
assignments (compound ones expanded), calls, if, switch, return/exit, for loops."""

from __future__ import annotations

from . import ast as A
from .errors import CompileError
from .parser_core import COMPOUND_ASSIGN, describe


class StatementParser:
    """Parses statements; mixed into `parser.Parser`, which supplies the token helpers."""

    def block(self, anns=None) -> A.BlockStatement:
        start = self.expect("{")
        stmts = []
        while not self.accept("}"):
            if self.at("EOF"):
                self.fail(self.tok, "expected '}', found end of file")
            stmts.append(self.statement())
        return A.BlockStatement(loc=start.loc, statements=stmts, annotations=anns or [])

    def statement(self):
        anns = self.annotations() if self.at("@") else []
        t = self.tok
        k = t.kind
        if k == "{":
            return self.block(anns)
        if k == "if":
            self.advance()
            self.expect("(")
            cond = self.expression()
            self.expect(")")
            then = self.statement()
            else_ = self.statement() if self.accept("else") else None
            return A.IfStatement(loc=t.loc, cond=cond, then=then, else_=else_)
        if k == "switch":
            return self.switch_statement()
        if k == "return":
            self.advance()
            value = None if self.at(";") else self.expression()
            self.expect(";")
            return A.ReturnStatement(loc=t.loc, value=value)
        if k == "exit":
            self.advance()
            self.expect(";")
            return A.ExitStatement(loc=t.loc)
        if k == "break" or k == "continue":
            self.advance()
            self.expect(";")
            return (A.BreakStatement if k == "break" else A.ContinueStatement)(loc=t.loc)
        if k == ";":
            self.advance()
            return A.EmptyStatement(loc=t.loc)
        if k == "const":
            return self.constant_decl(anns)
        if k == "for":
            return self.for_statement()
        if k == "transition":
            self.fail(t, "a transition statement is only allowed at the end of a parser state")
        if self.declaration_follows():
            return self.instantiation_or_function(anns, allow_variable=True)
        stmt = self.simple_statement()
        self.expect(";")
        return stmt

    def declaration_follows(self) -> bool:
        """Does a local declaration (`T x ...` or `T(args) x`) start here?"""
        if not self.starts_type():
            return False
        t = self.tok
        if t.kind in ("error", "match_kind") and self.peek(1).kind == ".":
            return False
        if t.kind == "ID" and self.peek(1).kind == ".":
            return False  # MyEnum.A ... is an expression
        return True

    def simple_statement(self):
        """An assignment or a method call (no trailing ';')."""
        t = self.tok
        lhs = self.expression()
        op_tok = self.tok
        if op_tok.kind == "=":
            self.advance()
            return A.AssignmentStatement(loc=lhs.loc, lhs=lhs, rhs=self.expression())
        if op_tok.kind in COMPOUND_ASSIGN:
            self.advance()
            return self.compound_assignment(op_tok, lhs, COMPOUND_ASSIGN[op_tok.kind])
        if op_tok.kind == ">" and op_tok.adjacent_next and self.peek(1).kind == ">=":
            self.advance()
            self.advance()
            return self.compound_assignment(op_tok, lhs, ">>")
        if isinstance(lhs, A.MethodCallExpression):
            return A.MethodCallStatement(loc=t.loc, call=lhs)
        if isinstance(lhs, A.PathExpression) and op_tok.kind == "ID" and not self.speculating:
            # `T x;` where T is not a known type
            raise CompileError(lhs.loc, f"type '{lhs.name}' is not declared")
        self.fail(op_tok, f"expected '=' or a method call, found {describe(op_tok)}")

    def compound_assignment(self, op_tok, lhs, op):
        rhs = self.expression()
        value = A.BinaryExpression(loc=lhs.loc, op=op, left=lhs, right=rhs)
        return A.AssignmentStatement(loc=lhs.loc, lhs=lhs, rhs=value, op=op + "=")

    def switch_statement(self) -> A.SwitchStatement:
        start = self.expect("switch")
        self.expect("(")
        expr = self.expression()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.accept("}"):
            ltok = self.tok
            if self.accept("default"):
                label = A.DefaultExpression(loc=ltok.loc)
            else:
                label = self.expression()
            self.expect(":")
            body = self.block() if self.at("{") else None
            cases.append(A.SwitchCase(loc=ltok.loc, label=label, body=body))
        is_action_run = isinstance(expr, A.MemberExpression) and expr.member == "action_run"
        return A.SwitchStatement(loc=start.loc, expr=expr, cases=cases, is_action_run=is_action_run)

    def for_statement(self):
        start = self.expect("for")
        self.expect("(")
        in_form = self.speculate(self.for_in_header)
        if in_form is not None:
            var, collection = in_form
            self.expect(")")
            body = self.statement()
            return A.ForInStatement(loc=start.loc, var=var, collection=collection, body=body)
        init = []
        if not self.at(";"):
            init = self.for_clause_list(allow_decl=True)
        self.expect(";")
        cond = None if self.at(";") else self.expression()
        self.expect(";")
        updates = [] if self.at(")") else self.for_clause_list(allow_decl=False)
        self.expect(")")
        body = self.statement()
        return A.ForStatement(loc=start.loc, init=init, cond=cond, updates=updates, body=body)

    def for_in_header(self):
        anns = self.annotations()
        t = self.tok
        ref = None
        if not (self.at_name() and self.peek(1).kind == "in"):
            ref = self.type_ref()
        name = self.name("a loop variable")
        self.expect("in")
        collection = self.keyset()
        return A.VariableDecl(loc=t.loc, name=name.value, annotations=anns, type_ref=ref), collection

    def for_clause_list(self, allow_decl):
        clauses = []
        while True:
            anns = self.annotations() if allow_decl else []
            t = self.tok
            if allow_decl and self.declaration_follows():
                ref = self.type_ref()
                name = self.name("a variable name")
                init = self.expression() if self.accept("=") else None
                clauses.append(A.VariableDecl(loc=t.loc, name=name.value, annotations=anns,
                                              type_ref=ref, init=init))
            else:
                clauses.append(self.simple_statement())
            if not self.accept(","):
                return clauses

    # -- expressions ---------------------------------------------------------------------------
