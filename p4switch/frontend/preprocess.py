"""C preprocessing of P4 source with pcpp.

`#include "x"` is looked up in the including file's folder, then the -I folders;
`#include <x>` in the -I folders, then p4switch/include (our core.p4 and v1model.p4).
The output keeps `#line N "file"` markers so the lexer can report original locations.
Preprocessor errors (missing include, bad directive, #error) become CompileError.
"""

from __future__ import annotations

import io
import os
import re

import pcpp

from .ast import Loc
from .errors import CompileError

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")


class _Preprocessor(pcpp.Preprocessor):
    """pcpp with errors turned into CompileError at the right location."""

    def __init__(self, include_dirs):
        super().__init__()
        self.line_directive = "#line"
        self.compress = 0
        for d in include_dirs:
            self.add_path(str(d))
        self.add_path(INCLUDE_DIR)
        self.current_location = None

    def on_error(self, file, line, msg):
        raise CompileError(Loc(file or "<unknown>", line or 0, 1), f"preprocessor: {msg}")

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        loc = _find_include_loc(self, includepath)
        raise CompileError(loc, f"cannot find include file '{includepath}'")

    def on_unknown_macro_in_defined_expr(self, tok):
        return False  # undefined macros are false in #if defined(...) like cpp

    def on_unknown_macro_in_expr(self, ident):
        return 0  # cpp evaluates undefined identifiers in #if as 0

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value in ("pragma", "warning"):
            return super().on_directive_unknown(directive, toks, ifpassthru, precedingtoks)
        raise CompileError(Loc(directive.source or "<unknown>", directive.lineno, 1),
                           f"preprocessor: unknown directive #{directive.value}")

    def on_comment(self, tok):
        return False  # drop comments from the output


def _find_include_loc(pp, includepath: str) -> Loc:
    """Where the failing #include is: pcpp only tells the file being processed, so search it."""
    source = getattr(pp, "source", None) or "<unknown>"
    text = pp._include_texts.get(source) if hasattr(pp, "_include_texts") else None
    if text is None and os.path.exists(source):
        with open(source, encoding="utf-8", errors="replace") as f:
            text = f.read()
    if text:
        pattern = re.compile(r"^[ \t]*#[ \t]*include[ \t]*([<\"])" + re.escape(includepath) + r"[>\"]", re.M)
        m = pattern.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start(1) - (text.rfind("\n", 0, m.start()) + 1) + 1
            return Loc(source, line, col)
    return Loc(source, 0, 1)


def preprocess(text: str, filename: str, include_dirs=(), defines=None) -> str:
    """Preprocess `text` (the contents of `filename`) and return the output with line markers."""
    pp = _Preprocessor(include_dirs)
    pp._include_texts = {filename: text}
    for name, value in (defines or {}).items():
        pp.define(f"{name} {value}" if value is not None and value != "" else f"{name} 1")
    pp.parse(text, filename)
    out = io.StringIO()
    pp.write(out)
    return out.getvalue()
