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
from collections import OrderedDict

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
        self.texts: dict[str, str] = {}
        self.display_names: dict[str, str] = {}
        self.opened_files: list[str] = []

    def on_error(self, file, line, msg):
        raise CompileError(Loc(self.display_name(file), line or 0, 1), f"preprocessor: {msg}")

    def on_directive_handle(self, directive, toks, ifpassthru, precedingtoks):
        # Remember the directive being processed: pcpp does not pass it to its error hooks.
        self.directive = directive
        needs_argument = ("define", "undef", "ifdef", "ifndef", "include", "if", "elif")
        if directive.value in needs_argument and not any(t.value.strip() for t in toks):
            raise CompileError(self.directive_loc(), f"preprocessor: #{directive.value} needs an argument")
        return super().on_directive_handle(directive, toks, ifpassthru, precedingtoks)

    def directive_loc(self) -> Loc:
        d = getattr(self, "directive", None)
        if d is None:
            return Loc("<unknown>", 0, 1)
        return Loc(self.display_name(d.source), d.lineno, 1)

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        loc = self.include_loc()
        raise CompileError(loc, f"cannot find include file '{includepath.strip(chr(34))}'")

    def display_name(self, source: str) -> str:
        """The file name as the user gave it (pcpp makes the main file's path absolute)."""
        return self.display_names.get(os.path.abspath(source), source) if source else "<unknown>"

    def include_loc(self) -> Loc:
        tok = getattr(self, "directive", None)
        if tok is None:
            return Loc("<unknown>", 0, 1)
        source = tok.source or ""
        text = self.texts.get(os.path.abspath(source))
        if text is None:
            try:
                with open(source, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                text = ""
        lines = text.split("\n")
        col = 1
        if 0 < tok.lineno <= len(lines):
            m = re.search(r"include\s*([<\"])", lines[tok.lineno - 1])
            if m:
                col = m.start(1) + 1
        return Loc(self.display_name(source), tok.lineno, col)

    def on_unknown_macro_in_defined_expr(self, tok):
        return False  # undefined macros are false in #if defined(...) like cpp

    def on_unknown_macro_in_expr(self, ident):
        return 0  # cpp evaluates undefined identifiers in #if as 0

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value == "error":
            text = "".join(t.value for t in toks).strip()
            raise CompileError(Loc(self.display_name(directive.source), directive.lineno, 1), f"#error {text}")
        if directive.value in ("pragma", "warning"):
            return super().on_directive_unknown(directive, toks, ifpassthru, precedingtoks)
        raise CompileError(Loc(self.display_name(directive.source), directive.lineno, 1),
                           f"preprocessor: unknown directive #{directive.value}")

    def on_file_open(self, is_system_include, includepath):
        handle = super().on_file_open(is_system_include, includepath)
        self.opened_files.append(includepath)  # only files that exist get here
        return handle

    def on_comment(self, tok):
        return False  # drop comments from the output


# Results of recent runs, reused while the included files are unchanged: programs are
# compiled again and again (tests, device config reloads) and pcpp is the slowest stage.
_CACHE: "OrderedDict[tuple, tuple[str, list]]" = OrderedDict()
_CACHE_SIZE = 64


def _file_stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def preprocess(text: str, filename: str, include_dirs=(), defines=None) -> str:
    """Preprocess `text` (the contents of `filename`) and return the output with line markers."""
    key = (text, filename, os.getcwd(), tuple(str(d) for d in include_dirs),
           tuple(sorted((str(k), str(v)) for k, v in (defines or {}).items())))
    hit = _CACHE.get(key)
    if hit is not None and all(_file_stamp(path) == stamp for path, stamp in hit[1]):
        _CACHE.move_to_end(key)
        return hit[0]
    output, opened = _run_pcpp(text, filename, include_dirs, defines)
    _CACHE[key] = (output, [(path, _file_stamp(path)) for path in opened])
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return output


def _run_pcpp(text: str, filename: str, include_dirs, defines):
    """(preprocessed text, paths of the files it included)."""
    pp = _Preprocessor(include_dirs)
    pp.texts = {os.path.abspath(filename): text}
    pp.display_names = {os.path.abspath(filename): filename}
    for name, value in (defines or {}).items():
        pp.define(f"{name} {value}" if value is not None and value != "" else f"{name} 1")
    out = io.StringIO()
    try:
        pp.parse(text, filename)
        pp.write(out)
    except CompileError:
        raise
    except Exception as exc:  # pcpp fails on some malformed directives with a Python error
        raise CompileError(pp.directive_loc(), f"preprocessor: cannot process this directive ({exc})") from None
    return out.getvalue(), list(dict.fromkeys(pp.opened_files))
