"""The front-end test programs that have runtime behaviour run their STF (tests/frontend/
programs/X.stf beside X.p4) on the Python back end, and on the C back end wherever it takes
the program; where it does not, it refuses with a message that says so (and `auto` falls
back to Python)."""

import os

import pytest

from p4switch import Switch, compile_file, stf
from p4switch.backend.select import c_refusal

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
STF_FILES = sorted(f for f in os.listdir(PROGRAMS) if f.endswith(".stf"))


def run(name, backend):
    path = os.path.join(PROGRAMS, name)
    program = compile_file(path[:-4] + ".p4")
    with open(path) as f:
        commands = stf.parse_stf(f.read(), path)
    return stf.StfRunner(Switch(program, backend=backend), program, path).run(commands), program


@pytest.mark.parametrize("name", STF_FILES)
def test_stf_on_the_python_back_end(name):
    result, _ = run(name, "python")
    assert result.passed, "\n".join(result.failures)


@pytest.mark.parametrize("name", STF_FILES)
def test_stf_on_the_c_back_end_or_a_clear_refusal(name):
    program = compile_file(os.path.join(PROGRAMS, name[:-4] + ".p4"))
    why = c_refusal(program)
    if why is not None and not why.startswith("no C compiler"):
        assert "not supported by the c back end" in why, why
        result, _ = run(name, "auto")        # falls back to Python
        assert result.passed, "\n".join(result.failures)
        return
    if why is not None:
        pytest.skip(why)
    result, _ = run(name, "c")
    assert result.passed, "\n".join(result.failures)
