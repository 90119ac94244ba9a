"""Running `python -m p4switch ...` from tests, and the location of the STF corpus."""

import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "p4"


def run_p4switch(*args, timeout=300):
    """Run the command line in the repository root; a CompletedProcess with text output."""
    return subprocess.run([sys.executable, "-m", "p4switch", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _compiler_available():
    try:
        from p4switch import Switch, compile_file  # noqa: F401
    except ImportError:
        return False
    return True


requires_compiler = pytest.mark.skipif(
    not _compiler_available(), reason="p4switch does not export compile_file/Switch yet")
