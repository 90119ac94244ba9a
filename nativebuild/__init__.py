"""nativebuild: compile C sources into a shared object once, and load it with ctypes.

The one place where the project builds C (p4switch's generated pipelines and runtime,
hosts' batched UDP helper). It depends on nothing in the project, so both can use it and
still stand alone. An object is cached under a hash of the sources, the extra files that
feed the hash, the compiler's identity and the flags, in $P4SWITCH_CACHE, else
~/.cache/p4switch (or the temporary directory when there is no writable home). Objects are
written under a temporary name and renamed, so concurrent builders never load a half-written
file.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

DEFAULT_FLAGS = ("-O2", "-shared", "-fPIC", "-pthread", "-std=gnu11",
                 "-Wall", "-Wno-unused-function", "-Wno-unused-variable",
                 "-Wno-unused-but-set-variable", "-Wno-unused-label")
SANITIZER_FLAGS = ("-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                   "-fno-omit-frame-pointer")


class BuildError(Exception):
    """The C compiler is missing or refused the sources."""


def find_program(env_var: str, *names: str) -> str | None:
    """The path of the program $`env_var` names, else of the first of `names` on the PATH;
    None when there is none."""
    for name in (os.environ.get(env_var), *names):
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def compiler() -> str | None:
    """The C compiler to use ($CC, else gcc, else cc), or None when there is none."""
    return find_program("CC", "gcc", "cc")


def cache_dir() -> str:
    base = os.environ.get("P4SWITCH_CACHE")
    if not base:
        home = os.path.expanduser("~")
        base = os.path.join(home, ".cache", "p4switch") if home and home != "~" and \
            os.access(home, os.W_OK) else os.path.join(tempfile.gettempdir(), "p4switch-cache")
    os.makedirs(base, exist_ok=True)
    return base


_compiler_ids: dict[str, str] = {}


def _compiler_id(cc: str) -> str:
    if cc not in _compiler_ids:
        try:
            out = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
        except OSError:
            out = cc
        _compiler_ids[cc] = out.splitlines()[0] if out else cc
    return _compiler_ids[cc]


def build_shared(name: str, sources: dict[str, str], flags=DEFAULT_FLAGS, extra_flags=(),
                 include_dirs=(), hashed_files=()) -> str:
    """Build the C `sources` ({file name: text}; the .c ones are compiled, the others sit
    beside them for #include) into a shared object and return its path. `include_dirs` go
    on the include path; `hashed_files` (paths) take part in the cache key too."""
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler found (install gcc, or set CC)")
    flags = tuple(flags) + tuple(extra_flags)
    digest = hashlib.sha256()
    digest.update(_compiler_id(cc).encode())
    digest.update("\0".join(flags).encode())
    for file_name in sorted(sources):
        digest.update(file_name.encode() + b"\0" + sources[file_name].encode() + b"\0")
    for path in sorted(hashed_files):
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read())
    key = digest.hexdigest()[:24]
    target = os.path.join(cache_dir(), f"{name}-{key}.so")
    if os.path.exists(target):
        return target
    with tempfile.TemporaryDirectory(prefix="nativebuild-") as work:
        paths = []
        for file_name, text in sources.items():
            path = os.path.join(work, file_name)
            with open(path, "w") as f:
                f.write(text)
            if file_name.endswith(".c"):
                paths.append(path)
        out = os.path.join(work, "out.so")
        includes = [arg for d in include_dirs for arg in ("-I", d)]
        result = subprocess.run([cc, *flags, *includes, "-o", out, *paths],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"{os.path.basename(cc)} failed on {name}:\n"
                             + (result.stderr.strip() or result.stdout.strip()))
        partial = f"{target}.{os.getpid()}.tmp"
        shutil.copyfile(out, partial)
        os.replace(partial, target)
    return target


def load(path: str) -> ctypes.CDLL:
    """Load a built object. ctypes.CDLL releases the GIL around every call into it."""
    return ctypes.CDLL(path)
