"""The front end's passes, in order: preprocess -> parse -> the passes in PASSES ->
elaborate. This is the one place that lists them (p4switch.program and the front end's
`load*` functions all come through here)."""

from __future__ import annotations

import os

from .constfold import fold_constants
from .errors import CompileError
from .lvalues import check_lvalues
from .parser import parse_program
from .preprocess import preprocess
from .resolve import resolve_names
from .tables import check_tables
from .typeinfer import infer_types

# After parsing, each pass annotates or checks the AST in place (see each module).
PASSES = (
    resolve_names,      # names -> declarations (resolve.py)
    infer_types,        # types, call resolution, literal widths (typeinfer*.py)
    fold_constants,     # compile-time values (constfold.py)
    check_tables,       # table rules that are not about types (tables.py)
    check_lvalues,      # every write goes to a writable place (lvalues.py)
)


def read_source(path) -> str:
    """The text of the P4 file at `path` (CompileError when it cannot be read)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise CompileError(None, f"{path}: cannot read: {e.strerror}") from None


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
        for run in PASSES:
            run(program)
        program.pipeline = elaborate(program)
    return program


def load_file(path, include_dirs=(), defines=None, check=True):
    """Run the whole front end on the file at `path`."""
    path = os.fspath(path)
    return load_text(read_source(path), path, include_dirs=include_dirs, defines=defines, check=check)
