"""The front-end pipeline: preprocess -> parse -> type-check -> elaborate."""

from __future__ import annotations

import os

from .errors import CompileError
from .parser import parse_program
from .preprocess import preprocess


def load_text(text: str, filename: str, include_dirs=(), defines=None, check=True):
    """Run the whole front end on `text` (the contents of `filename`)."""
    output = preprocess(text, filename, include_dirs=include_dirs, defines=defines)
    return load_preprocessed(output, filename, check=check)


def load_preprocessed(output: str, filename: str, check=True):
    """Parse, check and elaborate already-preprocessed text (its `#line` markers keep
    diagnostics pointing at the original files)."""
    program = parse_program(output, filename)
    program.source_files = [filename]
    if check:
        from .elaborate import elaborate
        from .typecheck import check_program
        check_program(program)
        program.pipeline = elaborate(program)
    return program


def load_file(path, include_dirs=(), defines=None, check=True):
    """Run the whole front end on the file at `path`."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CompileError(None, f"{path}: cannot read: {e.strerror}") from None
    return load_text(text, path, include_dirs=include_dirs, defines=defines, check=check)
