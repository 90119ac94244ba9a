"""Every tests/p4/*.stf passes through `python -m p4switch stf`; a wrong expect fails."""

import pytest

from p4switch import stf
from p4switch.program import compile_source

from p4switch_cli_helpers import CORPUS, run_p4switch

STF_FILES = sorted(CORPUS.glob("*.stf"))
# tests/p4/bench/NAME.stf drive tests/p4/NAME.p4 for `bench`; they are valid tests as well.
CASES = [(f, f.with_suffix(".p4")) for f in STF_FILES] + [
    (f, CORPUS / f"{f.stem}.p4") for f in sorted((CORPUS / "bench").glob("*.stf"))]


def test_corpus_is_complete():
    assert len(STF_FILES) >= 25
    for stf_file in STF_FILES:
        assert stf_file.with_suffix(".p4").exists(), stf_file


@pytest.mark.parametrize("stf_file, program", CASES,
                         ids=[str(f.relative_to(CORPUS)) for f, _ in CASES])
def test_stf_passes(stf_file, program):
    result = run_p4switch("stf", program, stf_file)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"PASS {stf_file}")


def test_wrong_expect_fails_with_a_diff(tmp_path):
    bad = tmp_path / "functions_wrong.stf"
    bad.write_text("packet 0 03 09 00\nexpect 1 09 04 09$\n")
    result = run_p4switch("stf", CORPUS / "functions.p4", bad)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"FAIL {bad}"
    assert lines[1] == "port 1: expected 1 packet(s), got 1"
    assert lines[2] == "  #0 (expect at line 2): first difference at byte 1"
    assert lines[3] == "    expected: 090409$"
    assert lines[4] == "    actual:   090309"
    assert lines[5] == "                 ^"


def test_missing_and_unexpected_packets_fail(tmp_path):
    bad = tmp_path / "ports.stf"
    # port 1 is named (a packet goes in there), so what comes out of it is compared
    bad.write_text("packet 0 03 09 00\npacket 1 03 09 00\nexpect 2 09 03 09\n")
    result = run_p4switch("stf", CORPUS / "functions.p4", bad)
    assert result.returncode == 1
    assert "port 1: expected 0 packet(s), got 2" in result.stderr
    assert "unexpected packet" in result.stderr
    assert "port 2: expected 1 packet(s), got 0" in result.stderr
    assert "no packet came out" in result.stderr


def test_failed_state_checks_are_reported(tmp_path):
    bad = tmp_path / "state.stf"
    bad.write_text("register_write acc 1 5\nregister_read acc 1 6\n"
                   "packet 0 01 00000000 00000000\nexpect 1 01 00000000 00000005\n"
                   "no_packet\n")
    result = run_p4switch("stf", CORPUS / "registers.p4", bad)
    assert result.returncode == 1
    assert f"{bad}:2: register acc[1] is 0x5, expected 0x6" in result.stderr
    assert f"{bad}:5: no_packet, but the last packet produced output on port(s) 1" in result.stderr


def test_malformed_stf_is_a_usage_error(tmp_path):
    bad = tmp_path / "malformed.stf"
    bad.write_text("packet 0 0g\n")
    result = run_p4switch("stf", CORPUS / "functions.p4", bad)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"{bad}:1: packet needs a port and hex digits"]


def test_unknown_table_is_reported_with_its_line(tmp_path):
    bad = tmp_path / "names.stf"
    bad.write_text("\nadd no_such_table k:1 a()\n")
    result = run_p4switch("stf", CORPUS / "action_run.p4", bad)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{bad}:2: ") and "no_such_table" in line


def test_packets_out_of_unnamed_ports_are_lost_not_compared(tmp_path):
    # simple_switch under p4c's runner has interfaces only for the ports the STF names:
    # functions.p4 sends everything out of port 1, which this file never names.
    unnamed = tmp_path / "unnamed.stf"
    unnamed.write_text("packet 0 03 09 00\n")
    result = run_p4switch("stf", CORPUS / "functions.p4", unnamed)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"PASS {unnamed}: 1 packet(s) in, 1 out")


def test_lost_packets_are_counted_and_named_ports_still_compared():
    program = compile_source((CORPUS / "functions.p4").read_text(), "functions.p4",
                             include_dirs=[str(CORPUS)])
    # everything leaves by port 1: the first packet goes in on 0 while port 1 is named by a
    # later line, so it is compared; with port 1 named nowhere both are lost
    named = stf.run_stf(program, "packet 0 03 09 00\nexpect 1 09 03 09$\n")
    assert named.passed and named.packets_lost == 0
    unnamed = stf.run_stf(program, "packet 0 03 09 00\npacket 2 0A 02 00\nexpect 2 00\n")
    assert unnamed.packets_out == 2 and unnamed.packets_lost == 2
    assert unnamed.failures == [
        "port 2: expected 1 packet(s), got 0\n  #0 (expect at line 3): no packet came out\n"
        "    expected: 00"]
