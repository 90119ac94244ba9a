"""Building C sources into a shared object, once: the result is cached under a hash of the
sources, the compiler's identity and the flags.

The cache lives in $P4SWITCH_CACHE, else ~/.cache/p4switch (or /tmp when there is no home).
Objects are written to a temporary name and renamed, so concurrent builders never load a
half-written file.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")
DEFAULT_FLAGS = ("-O2", "-shared", "-fPIC", "-pthread", "-std=gnu11",
                 "-Wall", "-Wno-unused-function", "-Wno-unused-variable",
                 "-Wno-unused-but-set-variable", "-Wno-unused-label")
SANITIZER_FLAGS = ("-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                   "-fno-omit-frame-pointer")


class BuildError(Exception):
    """The C compiler is missing or refused the sources."""


def compiler() -> str | None:
    """The C compiler to use ($CC, else gcc, else cc), or None when there is none."""
    for name in (os.environ.get("CC"), "gcc", "cc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


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


def build_shared(name: str, sources: dict[str, str], flags=DEFAULT_FLAGS,
                 extra_flags=(), include_runtime: bool = True) -> str:
    """Build the C `sources` ({file name: text}) into a shared object and return its path.

    `name` names the cache entry (a readable prefix). The runtime directory is on the
    include path, and its headers take part in the hash."""
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler found (install gcc, or set CC)")
    flags = tuple(flags) + tuple(extra_flags)
    digest = hashlib.sha256()
    digest.update(_compiler_id(cc).encode())
    digest.update("\0".join(flags).encode())
    for file_name in sorted(sources):
        digest.update(file_name.encode() + b"\0" + sources[file_name].encode() + b"\0")
    if include_runtime:
        for header in sorted(os.listdir(RUNTIME_DIR)):
            if header.endswith(".h"):
                with open(os.path.join(RUNTIME_DIR, header), "rb") as f:
                    digest.update(header.encode() + b"\0" + f.read())
    key = digest.hexdigest()[:24]
    target = os.path.join(cache_dir(), f"{name}-{key}.so")
    if os.path.exists(target):
        return target
    with tempfile.TemporaryDirectory(prefix="p4switch-build-") as work:
        paths = []
        for file_name, text in sources.items():
            path = os.path.join(work, file_name)
            with open(path, "w") as f:
                f.write(text)
            if file_name.endswith(".c"):
                paths.append(path)
        out = os.path.join(work, "out.so")
        command = [cc, *flags, "-I", RUNTIME_DIR, "-o", out, *paths]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"{os.path.basename(cc)} failed on {name}:\n"
                             + (result.stderr.strip() or result.stdout.strip()))
        partial = f"{target}.{os.getpid()}.tmp"
        shutil.copyfile(out, partial)
        os.replace(partial, target)
    return target


def runtime_source(file_name: str) -> str:
    """The text of one file of the C runtime."""
    with open(os.path.join(RUNTIME_DIR, file_name)) as f:
        return f.read()


def load(path: str) -> ctypes.CDLL:
    """Load a built object. ctypes.CDLL releases the GIL around every call into it."""
    return ctypes.CDLL(path)
