"""P4-16 front end: preprocess, parse, type-check and elaborate a program.

`load(path, include_dirs=(), defines=None)` and `load_source(text, filename)` return an
`ast.Program` that is typed and elaborated (`program.pipeline`). Errors raise
`errors.CompileError` whose str() is `FILE:LINE:COL: message`.
"""

from .errors import CompileError


def load(path, include_dirs=(), defines=None):
    """Preprocess, parse, type-check and elaborate the P4 file at `path`."""
    from .driver import load_file
    return load_file(path, include_dirs=include_dirs, defines=defines)


def load_source(text, filename="<string>", include_dirs=(), defines=None):
    """Like `load`, for program text given as a string (includes resolve relative to the
    current directory and `include_dirs`)."""
    from .driver import load_text
    return load_text(text, filename, include_dirs=include_dirs, defines=defines)


def load_preprocessed(text, filename="<string>"):
    """Like `load_source`, for text that `preprocess.preprocess` already produced."""
    from .driver import load_preprocessed as run
    return run(text, filename)


__all__ = ["CompileError", "load", "load_preprocessed", "load_source"]
