"""Session caches for the bmv2 tier: each program is compiled once per session by p4c-bm2-ss
and once by our compiler, whatever number of tests use it."""

import pytest

import p4switch
from p4switch.bmv2.compiler import P4cError, compile_program


@pytest.fixture(scope="session")
def compiled_programs(p4lang_toolchain):
    """compile(path, include_dirs=(), defines=None) -> (p4c's Compiled, our Program), cached;
    a program p4c refuses gives (P4cError, our Program or None)."""
    cache = {}

    def compile_both(path, include_dirs=(), defines=None):
        key = (str(path), tuple(map(str, include_dirs)), tuple(sorted((defines or {}).items())))
        if key not in cache:
            try:
                theirs = compile_program(p4lang_toolchain, path, include_dirs, defines)
            except P4cError as exc:
                theirs = exc
            try:
                ours = p4switch.compile_file(path, include_dirs=include_dirs, defines=defines)
            except p4switch.CompileError:
                ours = None
            cache[key] = (theirs, ours)
        return cache[key]

    yield compile_both
    for theirs, _ in cache.values():
        if not isinstance(theirs, P4cError):
            theirs.cleanup()
