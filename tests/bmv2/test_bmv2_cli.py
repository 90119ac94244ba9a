"""`python -m p4switch stf ... --backend bmv2`: the report and exit codes of the other back
ends (0 pass; 1 with the per-port diff; 1 with p4c's first error; 2 with one line for bad
input, an STF command bmv2 cannot run, or a missing toolchain)."""

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
P4 = REPO / "tests" / "p4"


def stf(*args, env=None):
    return subprocess.run([sys.executable, "-m", "p4switch", "stf", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))


@pytest.mark.bmv2
def test_star_k1_passes_on_bmv2(p4lang_toolchain):
    result = stf(REPO / "p4src" / "main.p4", REPO / "tests" / "p4src" / "star_k1.stf",
                 "-DAGG_K=1", "--backend", "bmv2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"PASS {REPO / 'tests' / 'p4src' / 'star_k1.stf'}: " \
                                    "4 packet(s) in, 3 out"


@pytest.mark.bmv2
def test_a_wrong_expectation_gives_the_per_port_diff(p4lang_toolchain, tmp_path):
    wrong = tmp_path / "clone.stf"
    wrong.write_text((P4 / "clone.stf").read_text().replace("expect 7 02 02 BB$",
                                                            "expect 7 02 03 BB$"))
    result = stf(P4 / "clone.p4", wrong, "--backend", "bmv2")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"FAIL {wrong}"
    assert lines[1] == "port 7: expected 1 packet(s), got 1"
    assert "first difference at byte 1" in lines[2]
    assert lines[3].split() == ["expected:", "0203BB$"]
    assert lines[4].split() == ["actual:", "0202BB"]


@pytest.mark.bmv2
def test_a_program_p4c_refuses_is_one_line_exit_1(p4lang_toolchain):
    result = stf(P4 / "wide_select.p4", P4 / "wide_select.stf", "--backend", "bmv2")
    assert result.returncode == 1
    assert result.stderr.strip() == f"{P4 / 'wide_select.p4'}:31:9: BMV2 does not support loops"


@pytest.mark.bmv2
def test_an_extension_bmv2_cannot_run_is_one_line_exit_2(p4lang_toolchain):
    result = stf(P4 / "value_set.p4", P4 / "value_set.stf", "--backend", "bmv2")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(f"{P4 / 'value_set.stf'}:5: value_set_add with a mask is "
                                    "not supported on bmv2")


@pytest.mark.bmv2
def test_bad_stf_and_unknown_names_are_exit_2(p4lang_toolchain, tmp_path):
    bad = tmp_path / "bad.stf"
    bad.write_text("packet zero 00\n")
    result = stf(P4 / "clone.p4", bad, "--backend", "bmv2")
    assert (result.returncode, result.stderr.strip()) == \
        (2, f"{bad}:1: bad port 'zero'")
    unknown = tmp_path / "unknown.stf"
    unknown.write_text("add no_such_table k:1 a()\n")
    result = stf(P4 / "clone.p4", unknown, "--backend", "bmv2")
    assert result.returncode == 2
    assert result.stderr.strip() == f"{unknown}:1: no table named 'no_such_table'"


def test_a_missing_toolchain_is_one_line_exit_2(tmp_path):
    result = stf(P4 / "clone.p4", P4 / "clone.stf", "--backend", "bmv2",
                 env={"P4LANG_HOME": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.strip() == f"p4switch: error: P4LANG_HOME={tmp_path} holds none of " \
                                    "p4c-bm2-ss, simple_switch, simple_switch_grpc, " \
                                    "simple_switch_CLI in bin/"


STACK_OUT_OF_RANGE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> i; bit<8> v; }
header e_t { bit<8> x; }
struct headers_t { h_t h; e_t[2] s; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.s[0]); pkt.extract(hdr.s[1]);
                  transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.s[hdr.h.i].x = hdr.h.v; }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


@pytest.mark.bmv2
def test_a_switch_that_dies_is_one_line(p4lang_toolchain, tmp_path):
    """A header stack index out of range in a control (undefined in P4): simple_switch
    aborts; the run says so in one line, at once, and exits 1."""
    program, test = tmp_path / "stack.p4", tmp_path / "stack.stf"
    program.write_text(STACK_OUT_OF_RANGE)
    test.write_text("packet 0 01 07 AA BB\nexpect 1 01 07 AA 07\npacket 0 05 07 AA BB\n")
    result = stf(program, test, "--backend", "bmv2")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("p4switch: error: SwitchFailed: simple_switch died (exit "
                                    "status -6) on a packet on port 0: ")
    assert "_M_range_check" in result.stderr
