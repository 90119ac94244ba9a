"""Every STF test of the repository on real bmv2, and the same packets, registers, counters
and digests from our Python and C back ends as from bmv2 (tests/bmv2/threeway.py).

The STF files: tests/p4/*.stf with their programs, tests/frontend/programs/*.stf with theirs,
tests/p4src/*.stf against p4src/main.p4 with the defines tests/p4src runs them with.  A
program p4c's bmv2 back end refuses is listed in REFUSED_BY_P4C with the words of p4c's
error, and our compiler must refuse it too with ``target="bmv2"``; an STF using an extension
bmv2 cannot run is in UNSUPPORTED_ON_BMV2 with the words of the driver's one-line error.
Neither list can grow silently: each entry is checked to fail exactly so.
"""

import pathlib

import pytest

import p4switch
from p4switch import stf
from p4switch.bmv2.compiler import P4cError
from p4switch.bmv2.control import Unsupported
from p4switch.bmv2.runner import run_commands

from threeway import run_three

REPO = pathlib.Path(__file__).resolve().parents[2]
P4_DIR = REPO / "tests" / "p4"
FRONTEND_DIR = REPO / "tests" / "frontend" / "programs"
MAIN_P4 = REPO / "p4src" / "main.p4"


# The defines tests/p4src runs each STF with: star_k1 through the CLI with -D AGG_K=1
# (test_p4src_stf), ecmp through p4src_harness.program(k=1), which also sets AGG_SLOTS=16.
P4SRC_DEFINES = {"star_k1": {"AGG_K": "1"}, "ecmp": {"AGG_K": "1", "AGG_SLOTS": "16"}}


def _cases():
    cases = []
    for path in sorted(P4_DIR.glob("*.stf")):
        cases.append(pytest.param(path.with_suffix(".p4"), path, (P4_DIR,), {},
                                  id=f"p4/{path.stem}"))
    for path in sorted(FRONTEND_DIR.glob("*.stf")):
        cases.append(pytest.param(path.with_suffix(".p4"), path, (FRONTEND_DIR,), {},
                                  id=f"frontend/{path.stem}"))
    for path in sorted((REPO / "tests" / "p4src").glob("*.stf")):
        defines = P4SRC_DEFINES.get(path.stem, {"AGG_K": "1"})
        cases.append(pytest.param(MAIN_P4, path, (), defines, id=f"p4src/{path.stem}"))
    return cases


CASES = _cases()

# Programs p4c-bm2-ss refuses: the words of its error.
REFUSED_BY_P4C = {
    "p4/log_composite": "cannot have type 'Unknown type'",
    "p4/tuples": "cannot have type 'Unknown type'",
    "p4/wide_arith": "could not evaluate expression at compilation time",
    "p4/wide_misc": "Typechecking does not support iteration over this collection",
    "p4/wide_select": "BMV2 does not support loops",
    "frontend/ecmp_selector": "anonymous table property 'implementation'",
    "frontend/error_key": "unsupported exact key expression",
    "frontend/register_forms":
        "Type register has 2 type parameter(s), but it is specialized with 1",
}

# STF files that use an extension bmv2 cannot run: the words of the driver's error.
UNSUPPORTED_ON_BMV2 = {
    "p4/value_set": "value_set_add with a mask is not supported on bmv2",
    "p4/wide_state": "is not supported on bmv2",
}


def _case_id(stf_path):
    parent = stf_path.parent.name
    return {"p4": "p4", "programs": "frontend", "p4src": "p4src"}[parent] + "/" + stf_path.stem


def _setup(compiled_programs, program_path, stf_path, include_dirs, defines):
    case = _case_id(stf_path)
    theirs, ours = compiled_programs(program_path, include_dirs, defines)
    commands = stf.parse_stf(stf_path.read_text(), str(stf_path))
    if case in REFUSED_BY_P4C:
        assert isinstance(theirs, P4cError), f"p4c now compiles {case}: take it off the list"
        assert REFUSED_BY_P4C[case] in str(theirs), str(theirs)
        with pytest.raises(p4switch.CompileError) as ours_too:    # --target bmv2 refuses it
            p4switch.compile_file(program_path, include_dirs=include_dirs, defines=defines,
                                  target="bmv2")
        assert REFUSED_BY_P4C[case] in str(ours_too.value), str(ours_too.value)
        return case, None, ours, commands
    assert not isinstance(theirs, P4cError), f"p4c refuses {case}: {theirs}"
    return case, theirs, ours, commands


@pytest.mark.bmv2
@pytest.mark.parametrize("program_path, stf_path, include_dirs, defines", CASES)
def test_stf_passes_on_bmv2(p4lang_toolchain, compiled_programs, program_path, stf_path,
                            include_dirs, defines):
    case, compiled, _, commands = _setup(compiled_programs, program_path, stf_path,
                                         include_dirs, defines)
    if compiled is None:
        return                              # refused by p4c, as listed (checked in _setup)
    if case in UNSUPPORTED_ON_BMV2:
        with pytest.raises(Unsupported) as refusal:
            run_commands(p4lang_toolchain, compiled, commands, stf_path.name)
        assert UNSUPPORTED_ON_BMV2[case] in str(refusal.value)
        assert "\n" not in str(refusal.value)
        return
    result = run_commands(p4lang_toolchain, compiled, commands, stf_path.name)
    assert result.passed, "\n".join(result.failures)
    expects = sum(isinstance(c, stf.ExpectCmd) and c.pattern is not None for c in commands)
    assert result.packets_in > 0 and result.packets_out >= expects


@pytest.mark.bmv2
@pytest.mark.parametrize("program_path, stf_path, include_dirs, defines", CASES)
def test_python_c_and_bmv2_identical(p4lang_toolchain, compiled_programs, program_path,
                                     stf_path, include_dirs, defines):
    case, compiled, ours, commands = _setup(compiled_programs, program_path, stf_path,
                                            include_dirs, defines)
    if compiled is None or case in UNSUPPORTED_ON_BMV2:
        return
    assert ours is not None, f"our compiler refuses {case}"
    assert sorted(d.preamble.name for d in ours.p4info.digests) == \
        sorted(d.preamble.name for d in compiled.p4info.digests)
    report = run_three(p4lang_toolchain, compiled, ours, commands, stf_path.name)
    assert report.problems == [], str(report)
    assert report.packets_in > 0 and report.packets_out > 0


@pytest.mark.bmv2
def test_the_three_way_comparison_sees_a_difference(p4lang_toolchain, compiled_programs):
    """threeway.run_three against a program of ours that differs from what bmv2 runs (cell 3
    written +1): the packet that reads the cell back and the register differ, nothing else."""
    path = P4_DIR / "registers.p4"
    compiled, _ = compiled_programs(path, (P4_DIR,), {})
    source = path.read_text().replace(
        "acc.write((bit<32>)hdr.h.idx, value + hdr.h.add);",
        "acc.write((bit<32>)hdr.h.idx, value + hdr.h.add + (hdr.h.idx == 3 ? 32w1 : 32w0));")
    ours = p4switch.compile_source(source, "registers")
    commands = stf.parse_stf("packet 0 03 00000005 00000000\npacket 0 03 00000001 00000000\n"
                             "packet 0 02 00000001 00000000\n", "diff.stf")
    report = run_three(p4lang_toolchain, compiled, ours, commands, "diff.stf")
    assert len(report.problems) == 2, str(report)
    assert report.problems[0].startswith("diff.stf: packet 2 (line 2) on port 0: python "
                                         "{1: [b'\\x03\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x06']}")
    assert report.problems[1].startswith("diff.stf: register Ing.acc: cells [3] differ: "
                                         "python [8], bmv2 [6]")
