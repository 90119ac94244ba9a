"""``--target bmv2``: our compiler refuses exactly the programs of the repository that p4c's
bmv2 back end (p4c-bm2-ss with P4Info) refuses, at the same line where p4c names one in the
program, and takes the others (p4switch/frontend/target_bmv2.py)."""

import pathlib
import re
import subprocess
import sys

import pytest

import p4switch

REPO = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = sorted((REPO / "tests" / "p4").glob("*.p4")) + \
    sorted((REPO / "tests" / "frontend" / "programs").glob("*.p4")) + \
    sorted((REPO / "tests" / "runtime" / "programs").glob("*.p4"))


def _line(message, path):
    m = re.match(r"^(.+?):(\d+):\d+: ", message)
    return int(m.group(2)) if m and pathlib.Path(m.group(1)).resolve() == path.resolve() else None


@pytest.mark.bmv2
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_target_bmv2_refuses_what_p4c_refuses(p4lang_toolchain, compiled_programs, path):
    theirs, _ = compiled_programs(path, (path.parent,), None)
    try:
        p4switch.compile_file(path, include_dirs=[str(path.parent)], target="bmv2")
        ours = None
    except p4switch.CompileError as exc:
        ours = str(exc)
    if not isinstance(theirs, Exception):
        assert ours is None, f"p4c compiles it, --target bmv2 refuses: {ours}"
        return
    assert ours is not None, f"p4c refuses it ({theirs}), --target bmv2 takes it"
    if _line(str(theirs), path) is not None:
        assert _line(ours, path) == _line(str(theirs), path), f"p4c: {theirs}\nours: {ours}"


def test_target_option_of_the_cli(tmp_path):
    """`compile --target bmv2` prints the refusal as one line, exit 1; the default target
    takes the same program."""
    program = REPO / "tests" / "p4" / "wide_select.p4"
    base = [sys.executable, "-m", "p4switch", "compile", str(program)]
    refused = subprocess.run(base + ["--target", "bmv2"], capture_output=True, text=True,
                             cwd=REPO, timeout=120)
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith("BMV2 does not support loops")
    assert len(refused.stderr.strip().splitlines()) == 1
    taken = subprocess.run(base, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert taken.returncode == 0, taken.stderr
