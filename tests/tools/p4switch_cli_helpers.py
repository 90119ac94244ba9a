"""Running `python -m p4switch ...` from tests, and the location of the STF corpus."""

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "p4"


def run_p4switch(*args, timeout=300):
    """Run the command line in the repository root; a CompletedProcess with text output."""
    return subprocess.run([sys.executable, "-m", "p4switch", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
