"""Seeded differential fuzzing on three back ends: p4src/main.p4 at K = 1 and K = 64 and the
forwarding programs (tests/p4/ipv4_lpm, tests/p4/ipv6_lpm, p4src's ECMP routes), each with
its STF's control plane and 500 packets, the STF's own mutated (tests/native/parity.py's
fuzz_commands, seeded by name), through Python, C and real bmv2: the same packets out (port,
bytes, order per port), registers, counters and digests (threeway.py)."""

import io
import pathlib

import pytest

from p4switch import stf

from threeway import run_three

REPO = pathlib.Path(__file__).resolve().parents[2]
MAIN_P4 = REPO / "p4src" / "main.p4"
PACKETS = 500

from parity import fuzz_commands, stable_seed  # noqa: E402  (threeway put tests/native on the path)


def _agg_stf(k):
    import agg_stf
    out = io.StringIO()
    agg_stf.write_stf(out, k, 3, 2, 6)
    return out.getvalue()


def _file(path):
    return lambda: path.read_text()


CASES = [
    pytest.param(MAIN_P4, (), {"AGG_K": "1"}, lambda: _agg_stf(1), id="p4src-K1"),
    pytest.param(MAIN_P4, (), {"AGG_K": "64"}, lambda: _agg_stf(64), id="p4src-K64"),
    pytest.param(MAIN_P4, (), {"AGG_K": "1", "AGG_SLOTS": "16"},
                 _file(REPO / "tests" / "p4src" / "ecmp.stf"), id="p4src-ecmp"),
    pytest.param(REPO / "tests" / "p4" / "ipv4_lpm.p4", (REPO / "tests" / "p4",), {},
                 _file(REPO / "tests" / "p4" / "ipv4_lpm.stf"), id="ipv4_lpm"),
    pytest.param(REPO / "tests" / "p4" / "ipv6_lpm.p4", (REPO / "tests" / "p4",), {},
                 _file(REPO / "tests" / "p4" / "ipv6_lpm.stf"), id="ipv6_lpm"),
]


@pytest.mark.bmv2
@pytest.mark.parametrize("program_path, include_dirs, defines, stf_text", CASES)
def test_fuzz_python_c_and_bmv2_identical(p4lang_toolchain, compiled_programs, request,
                                          fuzz_seed, program_path, include_dirs, defines,
                                          stf_text):
    compiled, ours = compiled_programs(program_path, include_dirs, defines)
    assert not isinstance(compiled, Exception), str(compiled)
    commands = stf.parse_stf(stf_text(), "fuzz.stf")
    name = request.node.callspec.id
    seed = fuzz_seed(stable_seed(name))
    fuzzed = fuzz_commands(commands, seed, PACKETS)
    report = run_three(p4lang_toolchain, compiled, ours, fuzzed, name)
    assert report.problems == [], f"seed {seed} (re-run: --fuzz-seed {seed})\n{report}"
    assert report.packets_in == PACKETS
    # packets came out (an aggregation mutant mostly changes registers, not the output)
    assert report.packets_out > 0
    if program_path == MAIN_P4:
        assert report.cells > 1000         # p4src's registers and counters were compared


# Every other STF program bmv2 runs, 150 mutated packets each, those that parse in full
# (threeway.without_parser_errors: an invalid header's fields are unspecified, and bmv2 reads
# an earlier packet's values there).  Programs p4c refuses, and STFs using an extension bmv2
# cannot run, are the lists of test_bmv2_stf.py.
ALL_PACKETS = 150


def _all_cases():
    from test_bmv2_stf import REFUSED_BY_P4C, UNSUPPORTED_ON_BMV2
    cases = []
    for folder, prefix in ((REPO / "tests" / "p4", "p4"),
                           (REPO / "tests" / "frontend" / "programs", "frontend")):
        for path in sorted(folder.glob("*.stf")):
            case = f"{prefix}/{path.stem}"
            if case not in REFUSED_BY_P4C and case not in UNSUPPORTED_ON_BMV2:
                cases.append(pytest.param(path, id=case))
    return cases


@pytest.mark.bmv2
@pytest.mark.parametrize("stf_path", _all_cases())
def test_fuzz_every_stf_program_on_three_back_ends(p4lang_toolchain, compiled_programs,
                                                   fuzz_seed, stf_path):
    from threeway import without_parser_errors
    compiled, ours = compiled_programs(stf_path.with_suffix(".p4"), (stf_path.parent,), None)
    commands = stf.parse_stf(stf_path.read_text(), str(stf_path))
    seed = fuzz_seed(stable_seed(stf_path.stem))
    fuzzed = fuzz_commands(commands, seed, ALL_PACKETS)
    kept = without_parser_errors(ours, fuzzed)
    report = run_three(p4lang_toolchain, compiled, ours, kept, stf_path.name)
    assert report.problems == [], f"seed {seed} (re-run: --fuzz-seed {seed})\n{report}"
    assert report.packets_in >= 10               # mutants that parse in full were compared
    assert report.packets_out > 0
