"""Compile errors of the front end: `CompileError(loc, message)`, printed `FILE:LINE:COL: message`."""

from __future__ import annotations


class CompileError(Exception):
    """A diagnostic for the user. `loc` is an `ast.Loc` (or None when no position is known);
    str() is `FILE:LINE:COL: message` (or just the message without a location)."""

    def __init__(self, loc, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message

    def __str__(self) -> str:
        if self.loc is None:
            return self.message
        return f"{self.loc.file}:{self.loc.line}:{self.loc.col}: {self.message}"
