"""Shared pieces of the P4-16 parser: operator tables, the backtracking signal and token
descriptions for messages."""

from __future__ import annotations

from .lexer import Token

BASE_TYPE_KEYWORDS = frozenset({"bit", "int", "varbit", "bool", "string", "void", "error",
                                "match_kind", "tuple", "list"})

BINARY_PRECEDENCE = {
    "||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4,
    "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8,
    "++": 9, "+": 9, "-": 9, "|+|": 9, "|-|": 9, "*": 10, "/": 10, "%": 10,
}

COMPOUND_ASSIGN = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&",
                   "|=": "|", "^=": "^", "<<=": "<<", "|+|=": "|+|", "|-|=": "|-|"}

PREFIX_OPS = frozenset({"!", "~", "-", "+"})


class _Backtrack(Exception):
    """Raised inside a speculative parse that did not match."""


def describe(tok: Token) -> str:
    if tok.kind == "EOF":
        return "end of file"
    if tok.kind == "STRING":
        return f'string "{tok.value}"'
    if tok.kind == "INT":
        return f"'{tok.value[3]}'"
    return f"'{tok.value}'"
