"""Tokenizer for preprocessed P4-16 source.

Understands the `#line N "file"` markers that preprocess.py leaves in its output, so each
token's location is a position in the original file. `>` is always a token of its own (so
`bit<bit<8>>` closes two type-argument lists); the parser recognises a shift `>>` as two
adjacent `>` tokens (`Token.adjacent_next`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .ast import Loc
from .errors import CompileError

KEYWORDS = frozenset("""
    abstract action actions apply bit bool break const continue control default else entries
    enum error exit extern false for header header_union if in inout int key list match_kind
    out package parser priority return select state string struct switch table this transition
    true tuple type typedef value_set varbit void
""".split())

# Words that are keywords in some positions but may still name things (p4c's nonTypeName).
CONTEXTUAL_KEYWORDS = frozenset({"apply", "key", "actions", "state", "entries", "type",
                                 "priority", "list"})

# Longest first, so that e.g. '&&&' wins over '&&'.
PUNCTUATORS = [
    "&&&", "...", "|+|=", "|-|=", "|+|", "|-|", "<<=", "++", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "==", "!=", "<=", ">=", "<<", "&&", "||", "..",
    "{", "}", "(", ")", "[", "]", "<", ">", ";", ":", ",", ".", "=", "+", "-", "*", "/", "%",
    "&", "|", "^", "~", "!", "?", "@", "#",
]

_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<line>(?<![^\n])\#[ \t]*line\s+(?P<lineno>\d+)(?:\s+"(?P<linefile>[^"]*)")?[^\n]*\n)
  | (?P<pragma>(?<![^\n])\#[^\n]*)
  | (?P<int>(?:\d+[ws])?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[\d_]*))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>""" + "|".join(re.escape(p) for p in PUNCTUATORS) + r""")
""", re.VERBOSE | re.DOTALL)


@dataclass(eq=False, repr=False, slots=True)
class Token:
    """One token. kind: 'ID', 'INT', 'STRING', 'EOF', a keyword, or the punctuator text.
    value: the text (for INT a tuple (value, width, signed, text); for STRING the decoded
    string). start/end: offsets in the preprocessed text. adjacent_next: the next token
    follows with no whitespace in between (for '>' '>' == shift)."""

    kind: str
    value: Any
    loc: Loc
    start: int
    end: int
    adjacent_next: bool = field(default=False, init=False)

    def __repr__(self):
        return f"Token({self.kind!r}, {self.value!r}, {self.loc})"


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


def _decode_string(text: str) -> str:
    body = text[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def parse_int_literal(text: str, loc: Loc) -> tuple:
    """(value, width or None, signed) of an integer literal like 8w0x1F, 0b101, 42."""
    width = None
    signed = False
    m = re.match(r"(\d+)([ws])", text)
    if m and len(text) > len(m.group(0)):
        width = int(m.group(1))
        signed = m.group(2) == "s"
        text = text[m.end():]
    digits = text.replace("_", "")
    base = 10
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[digits[1].lower()]
        digits = digits[2:]
    if not digits:
        raise CompileError(loc, f"malformed integer literal '{text}'")
    if width is not None and width == 0 and not signed:
        raise CompileError(loc, "integer literal width must be positive")
    return int(digits, base), width, signed


def tokenize(text: str, filename: str) -> list[Token]:
    """Split preprocessed `text` into tokens, ending with an 'EOF' token."""
    tokens: list[Token] = []
    append = tokens.append
    match = _TOKEN_RE.match
    pos = 0
    n = len(text)
    file = filename
    line = 1
    line_start = 0
    prev = None
    while pos < n:
        m = match(text, pos)
        if m is None:
            loc = Loc(file, line, pos - line_start + 1)
            raise CompileError(loc, f"syntax error: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        end = m.end()
        if kind == "ws":
            prev = None
        elif kind == "nl":
            line += 1
            line_start = end
            prev = None
        elif kind == "comment":
            newlines = text.count("\n", pos, end)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, end) + 1
            prev = None
        elif kind == "line" or kind == "lineno" or kind == "linefile":
            line = int(m.group("lineno"))
            if m.group("linefile") is not None:
                file = m.group("linefile")
            line_start = end
            prev = None
        elif kind == "pragma":
            prev = None  # '#pragma' and other pass-through directives carry no P4 meaning here
        else:
            loc = Loc(file, line, pos - line_start + 1)
            value = m.group(0)
            if kind == "id":
                tok = Token(value if value in KEYWORDS else "ID", value, loc, pos, end)
            elif kind == "int":
                tok = Token("INT", parse_int_literal(value, loc) + (value,), loc, pos, end)
            elif kind == "string":
                tok = Token("STRING", _decode_string(value), loc, pos, end)
            else:
                tok = Token(value, value, loc, pos, end)
            if prev is not None:
                prev.adjacent_next = True
            append(tok)
            prev = tok
        pos = end
    tokens.append(Token("EOF", "", Loc(file, line, pos - line_start + 1), n, n))
    return tokens
