"""A compiled P4 program: the front end's AST, our compiled pipeline, P4Info, device config.

`compile_file` runs the front end and the back end once; `Program.device_config` is what
`p4switch compile -o` writes and SetForwardingPipelineConfig carries: JSON with the
preprocessed source, from which `load_device_config` rebuilds the same Program.
"""

from __future__ import annotations

import json
import os

from .backend import compile_pipeline
from .frontend.driver import load_preprocessed, read_source
from .frontend.errors import CompileError
from .frontend.preprocess import preprocess
from .frontend.target_bmv2 import TARGETS, check as check_bmv2

DEVICE_CONFIG_FORMAT = "p4switch/1"


class Program:
    """One compiled program. `ast` is the checked, elaborated `frontend.ast.Program`."""

    def __init__(self, ast, name: str, source: str):
        self.ast = ast
        self.name = name
        self.source = source                  # preprocessed source text
        self.compiled = compile_pipeline(ast)
        self._p4info = None

    @property
    def p4info(self):
        """The P4Info message (built on first use)."""
        if self._p4info is None:
            from .p4info import build_p4info
            self._p4info = build_p4info(self.ast)
        return self._p4info

    @property
    def device_config(self) -> bytes:
        return json.dumps({"format": DEVICE_CONFIG_FORMAT, "name": self.name,
                           "source": self.source}).encode()


def _checked(ast, target):
    """`ast`, after the checks of `target` (None or "p4switch": ours; "bmv2": also refuse
    what p4c's bmv2 back end refuses, frontend/target_bmv2.py)."""
    if target not in (None,) + TARGETS:
        raise CompileError(None, f"unknown target {target!r} (targets: {', '.join(TARGETS)})")
    if target == "bmv2":
        check_bmv2(ast)
    return ast


def compile_file(path, include_dirs=(), defines=None, target=None) -> Program:
    """Front end + back end for the P4 file at `path` (CompileError on any problem).
    `target="bmv2"` also refuses what p4c's bmv2 back end refuses."""
    path = os.fspath(path)
    source = preprocess(read_source(path), path, include_dirs=include_dirs, defines=defines)
    name = os.path.splitext(os.path.basename(path))[0]
    return Program(_checked(load_preprocessed(source, path), target), name, source)


def compile_source(text: str, name: str = "program", include_dirs=(), defines=None,
                   target=None) -> Program:
    """Like compile_file, for program text."""
    source = preprocess(text, f"{name}.p4", include_dirs=include_dirs, defines=defines)
    return Program(_checked(load_preprocessed(source, f"{name}.p4"), target), name, source)


def load_device_config(data: bytes) -> Program:
    """The Program a device config (from `Program.device_config`) describes."""
    try:
        config = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CompileError(None, f"device config is not p4switch JSON: {e}") from None
    if not isinstance(config, dict) or config.get("format") != DEVICE_CONFIG_FORMAT:
        raise CompileError(None, f"device config format is not {DEVICE_CONFIG_FORMAT}")
    name, source = config.get("name", "program"), config.get("source")
    if not isinstance(source, str):
        raise CompileError(None, "device config has no program source")
    return Program(load_preprocessed(source, f"{name}.p4"), name, source)
