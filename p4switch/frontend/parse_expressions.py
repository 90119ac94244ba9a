"""Expressions of the P4-16 grammar (the `ExpressionParser` part of `parser.Parser`):
precedence climbing over the binary operators, prefix operators and casts, primaries,
postfix member/index/slice/call, brace (list and struct) expressions."""

from __future__ import annotations

from . import ast as A
from .lexer import CONTEXTUAL_KEYWORDS, Token
from .parser_core import BINARY_PRECEDENCE, PREFIX_OPS, _Backtrack, describe


class ExpressionParser:
    """Parses expressions; mixed into `parser.Parser`, which supplies the token helpers."""

    def expression(self) -> A.Expression:
        cond = self.binary(1)
        if self.at("?"):
            self.advance()
            then = self.expression()
            self.expect(":", "':' in conditional expression")
            else_ = self.expression()
            return A.TernaryExpression(loc=cond.loc, cond=cond, then=then, else_=else_)
        return cond

    def binary_operator(self):
        """The binary operator at the cursor and how many tokens it spans, or (None, 0)."""
        t = self.tok
        k = t.kind
        if k == ">":
            nxt = self.peek(1)
            if t.adjacent_next and nxt.kind == ">":
                return ">>", 2
            if t.adjacent_next and nxt.kind == ">=":
                return None, 0  # `>>=` compound assignment
            return ">", 1
        if k in BINARY_PRECEDENCE:
            return k, 1
        return None, 0

    def binary(self, min_prec: int) -> A.Expression:
        left = self.unary()
        while True:
            op, width = self.binary_operator()
            if op is None:
                return left
            prec = BINARY_PRECEDENCE[op]
            if prec < min_prec:
                return left
            self.i += width
            right = self.binary(prec + 1)
            left = A.BinaryExpression(loc=left.loc, op=op, left=left, right=right)

    def unary(self) -> A.Expression:
        t = self.tok
        if t.kind in PREFIX_OPS:
            self.advance()
            return A.UnaryExpression(loc=t.loc, op=t.kind, operand=self.unary())
        if t.kind == "(" and self.starts_type(1):
            cast = self.speculate(self.cast_prefix)
            if cast is not None:
                cast.expr = self.unary()
                return cast
        return self.postfix(self.primary())

    def cast_prefix(self) -> A.CastExpression:
        t = self.expect("(")
        ref = self.type_ref()
        self.expect(")")
        return A.CastExpression(loc=t.loc, type_ref=ref, expr=None)

    def primary(self) -> A.Expression:
        t = self.tok
        k = t.kind
        if k == "INT":
            self.advance()
            return self.int_literal(t)
        if k == "STRING":
            self.advance()
            return A.StringLiteral(loc=t.loc, value=t.value)
        if k == "true" or k == "false":
            self.advance()
            return A.BoolLiteral(loc=t.loc, value=k == "true")
        if k == "(":
            self.advance()
            e = self.expression()
            self.expect(")")
            return e
        if k == "{":
            return self.brace_expression()
        if k == "...":
            self.advance()
            return A.DotsExpression(loc=t.loc)
        if k == ".":
            self.advance()
            name = self.name()
            return A.PathExpression(loc=t.loc, name=name.value, is_global=True)
        if k in ("error", "match_kind", "this"):
            self.advance()
            return A.PathExpression(loc=t.loc, name=k)
        if k in ("bit", "int", "varbit", "bool", "tuple") or (k == "ID" and self.is_type_name(t.value)
                                                             and self.peek(1).kind in ("(", "<")):
            return self.constructor_call()
        if k == "ID" and t.value == "_":
            self.advance()
            return A.DontCareExpression(loc=t.loc)
        if k == "ID" or k in CONTEXTUAL_KEYWORDS:
            self.advance()
            return A.PathExpression(loc=t.loc, name=t.value)
        self.fail(t, f"expected an expression, found {describe(t)}")

    def constructor_call(self) -> A.Expression:
        t = self.tok
        ref = self.type_ref()
        if not self.at("("):
            self.fail(self.tok, f"expected '(' after type in expression, found {describe(self.tok)}")
        return A.ConstructorCallExpression(loc=t.loc, type_ref=ref, args=self.arguments())

    def int_literal(self, t: Token) -> A.IntLiteral:
        value, width, signed, text = t.value
        return A.IntLiteral(loc=t.loc, value=value, width=width, signed=signed, text=text)

    def brace_expression(self) -> A.Expression:
        start = self.expect("{")
        if self.at("#"):
            self.advance()
            self.expect("}")
            return A.InvalidHeaderExpression(loc=start.loc)
        if self.accept("}"):
            return A.ListExpression(loc=start.loc, elements=[])
        if self.at_name() and self.peek(1).kind == "=":
            fields = []
            while True:
                if self.at("..."):
                    dots = self.advance()
                    fields.append(A.NamedExpression(loc=dots.loc, name="...",
                                                    value=A.DotsExpression(loc=dots.loc)))
                else:
                    n = self.name("a field name")
                    self.expect("=")
                    fields.append(A.NamedExpression(loc=n.loc, name=n.value, value=self.expression()))
                if not self.accept(","):
                    break
                if self.at("}"):
                    break
            self.expect("}")
            return A.StructExpression(loc=start.loc, fields=fields)
        elems = [self.expression()]
        while self.accept(","):
            if self.at("}"):
                break
            elems.append(self.expression())
        self.expect("}")
        return A.ListExpression(loc=start.loc, elements=elems)

    def postfix(self, e: A.Expression) -> A.Expression:
        while True:
            t = self.tok
            k = t.kind
            if k == ".":
                self.advance()
                name = self.name("a member name")
                e = A.MemberExpression(loc=e.loc, expr=e, member=name.value)
            elif k == "[":
                self.advance()
                index = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    e = A.SliceExpression(loc=e.loc, expr=e, hi=index, lo=lo)
                else:
                    self.expect("]")
                    e = A.IndexExpression(loc=e.loc, expr=e, index=index)
            elif k == "(":
                e = A.MethodCallExpression(loc=e.loc, callee=e, args=self.arguments())
            elif k == "<" and isinstance(e, (A.PathExpression, A.MemberExpression)) and \
                    (self.starts_type(1) or (self.peek(1).kind == "ID" and self.peek(1).value == "_")):
                type_args = self.speculate(self.call_type_args)
                if type_args is None:
                    return e
                e = A.MethodCallExpression(loc=e.loc, callee=e, type_args=type_args, args=self.arguments())
            else:
                return e

    def call_type_args(self) -> list[A.TypeRef]:
        self.expect("<")
        args = self.type_arg_list()
        self.expect(">")
        if not self.at("("):
            raise _Backtrack()
        return args
