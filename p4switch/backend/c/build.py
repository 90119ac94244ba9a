"""Building the native back end's C: generated pipelines and the runtime beside them.

The compiling and caching is nativebuild's (shared with hosts/ina/fastio.py); here the runtime
directory goes on the include path and its headers into the cache key.
"""
from __future__ import annotations

import os

from nativebuild import (DEFAULT_FLAGS, SANITIZER_FLAGS, BuildError, cache_dir,  # noqa: F401
                         compiler, load)
from nativebuild import build_shared as _build_shared

RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")


def build_shared(name: str, sources: dict[str, str], flags=DEFAULT_FLAGS,
                 extra_flags=(), include_runtime: bool = True) -> str:
    """Build the C `sources` ({file name: text}) into a shared object and return its path.

    With `include_runtime`, the runtime directory is on the include path and its headers
    take part in the cache key."""
    headers = [os.path.join(RUNTIME_DIR, h) for h in sorted(os.listdir(RUNTIME_DIR))
               if h.endswith(".h")] if include_runtime else []
    return _build_shared(name, sources, flags=flags, extra_flags=extra_flags,
                         include_dirs=[RUNTIME_DIR] if include_runtime else [],
                         hashed_files=headers)


def runtime_source(file_name: str) -> str:
    """The text of one file of the C runtime."""
    with open(os.path.join(RUNTIME_DIR, file_name)) as f:
        return f.read()
