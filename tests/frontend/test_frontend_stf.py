"""The front-end test programs that have runtime behaviour run their STF (tests/frontend/
programs/X.stf beside X.p4) on the Python back end, and on the C back end wherever it takes
the program; where it does not, it refuses with a message that says so (and `auto` falls
back to Python)."""

import os

import pytest

from p4switch import Switch, compile_file, stf
from p4switch.targets import c_refusal
from skip_or_fail import skip_or_fail

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
    skip_or_fail(why)
    result, _ = run(name, "c")
    assert result.passed, "\n".join(result.failures)


def test_the_ecmp_flows_spread_over_every_member():
    with open(os.path.join(PROGRAMS, "ecmp_selector.stf")) as f:
        commands = stf.parse_stf(f.read(), "ecmp_selector.stf")
    groups = [c for c in commands if isinstance(c, stf.GroupCmd)]
    assert [(g.profile, g.group, g.members) for g in groups] == [("routes", 10, [1, 2, 3, 4])]
    entries = [(c.member, c.group) for c in commands if isinstance(c, stf.AddCmd)]
    assert entries == [(None, 10), (3, None)]
    assert {c.port for c in commands if isinstance(c, stf.ExpectCmd)} == {1, 2, 3, 4}


def test_profile_commands_refuse_unknown_members_and_groups():
    program = compile_file(os.path.join(PROGRAMS, "ecmp_selector.p4"))
    bad = ("member routes 1 next_hop(mac:1, port:1)\n"
           "group routes 10 1 7\n")
    result_error = None
    try:
        stf.StfRunner(Switch(program, backend="python"), program, "bad.stf").run(
            stf.parse_stf(bad, "bad.stf"))
    except stf.StfError as e:
        result_error = str(e)
    assert result_error is not None and result_error.startswith("bad.stf:2: ") \
        and "member 7" in result_error
    with pytest.raises(stf.StfError, match="bad group id"):
        stf.parse_stf("group routes ten 1\n", "bad.stf")
