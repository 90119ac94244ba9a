"""The back end: the checked P4 AST to a Python module compiled once per program."""

from .compiler import CompiledProgram, compile_pipeline

__all__ = ["CompiledProgram", "compile_pipeline"]
