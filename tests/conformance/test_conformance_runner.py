"""scripts/conformance.py: which samples it picks, and how it classifies each outcome."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO_ROOT, "scripts", "conformance.py")

from increment_program import INCREMENT_P4  # noqa: E402

_spec = importlib.util.spec_from_file_location("conformance", SCRIPT)
conformance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conformance)



def _write(directory, name, text):
    (directory / name).write_text(text)


@pytest.fixture
def samples(tmp_path):
    """pass / fail / compile-error / stf-error samples, plus files that must be skipped."""
    _write(tmp_path, "good.p4", INCREMENT_P4)
    _write(tmp_path, "good.stf", "packet 0 41\nexpect 0 42\n")
    _write(tmp_path, "wrong.p4", INCREMENT_P4)
    _write(tmp_path, "wrong.stf", "packet 0 41\nexpect 0 41\n")
    _write(tmp_path, "broken.p4", INCREMENT_P4.replace("apply { pk.emit", "apply pk.emit"))
    _write(tmp_path, "broken.stf", "packet 0 41\nexpect 0 42\n")
    _write(tmp_path, "badstf.p4", INCREMENT_P4)
    _write(tmp_path, "badstf.stf", "packet zero 41\n")
    _write(tmp_path, "other_arch.p4", "#include <core.p4>\ncontrol c() { apply {} }\n")
    _write(tmp_path, "other_arch.stf", "packet 0 00\n")
    _write(tmp_path, "no_stf.p4", INCREMENT_P4)
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub", "nested.p4", INCREMENT_P4)
    _write(tmp_path / "sub", "nested.stf", "packet 0 00\nexpect 0 01\n")
    return tmp_path


def test_find_samples_picks_v1model_programs_with_an_stf(samples):
    assert conformance.find_samples(str(samples)) == [
        "badstf", "broken", "good", "sub/nested", "wrong"]
    assert conformance.find_samples(str(samples), "goo") == ["good"]


def test_run_classifies_pass_fail_compile_error_and_stf_error(samples, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "results.json"
    proc = subprocess.run([sys.executable, SCRIPT, str(samples), "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    record = json.loads(out.read_text())
    results = {r["name"]: r for r in record["results"]}
    assert {name: r["outcome"] for name, r in results.items()} == {
        "good": "pass", "wrong": "fail", "broken": "compile-error", "badstf": "stf-error",
        "sub/nested": "pass"}
    # the file is a results file (docs/testing.md): its provenance, and the printed counts
    assert set(record["meta"]) >= {"started", "finished", "cores", "load_average",
                                   "git_commit", "command", "backend"}
    assert record["meta"]["backend"] == "auto" and record["meta"]["cores"] == os.cpu_count()
    assert record["counts"] == {"pass": 2, "fail": 1, "compile-error": 1, "stf-error": 1,
                                "crash": 0, "timeout": 0}
    assert (record["passed"], record["total"]) == (2, 5)
    assert (record["supported_passed"], record["supported_total"]) == (2, 5)
    assert results["wrong"]["detail"].startswith("port 0: expected 1 packet(s), got 1 | #0")
    assert results["broken"]["detail"].endswith("broken.p4:16:44: syntax error: expected '{', found 'pk'")
    assert "pass rate: 2/5 (40.0%)" in proc.stdout
    assert "pass rate over what simple_switch supports: 2/5 (40.0%)" in proc.stdout


def test_explained_failures_get_their_cause_and_unsupported_ones_leave_the_second_rate():
    results = [conformance.SampleResult("a/good", "pass"),
               conformance.SampleResult("a/known", "fail", "port 0: differs"),
               conformance.SampleResult("crashes_simple_switch", "compile-error", "x.p4:1:1: no"),
               conformance.SampleResult("other", "fail", "port 1: differs")]
    explained = {"known": (True, "the STF predates the fix"),
                 "crashes_simple_switch": (False, "simple_switch crashes on it"),
                 "good": (True, "never shown: it passes")}
    conformance.explain(results, explained)
    assert [r.detail for r in results] == [
        "", "port 0: differs -- cause: the STF predates the fix",
        "x.p4:1:1: no -- cause: simple_switch crashes on it", "port 1: differs"]
    table = conformance.summary_table(results, explained=explained)
    assert "pass rate: 1/4 (25.0%)" in table
    assert "pass rate over what simple_switch supports: 1/3 (33.3%)" in table


def test_classify_crash_reports_exception_and_last_frame():
    stderr = ('Traceback (most recent call last):\n'
              f'  File "{REPO_ROOT}/p4switch/runtime/packet.py", line 12, in extract\n'
              '    raise KeyError(name)\nKeyError: \'x\'\n')
    assert conformance.classify(1, "", stderr) == (
        "crash", "KeyError: 'x' @ p4switch/runtime/packet.py:12 in extract")


def test_classify_one_line_errors():
    assert conformance.classify(1, "", "p4switch: error: ValueError: bad width\n") == (
        "crash", "p4switch: error: ValueError: bad width")
    assert conformance.classify(1, "", "prog.p4:3:7: type 'H' is not declared\n") == (
        "compile-error", "prog.p4:3:7: type 'H' is not declared")
    assert conformance.classify(0, "PASS x.stf\n", "") == ("pass", "")


def test_timeout_is_reported(samples):
    result = conformance.run_sample(str(samples), "good", sys.executable, 0.001)
    assert (result.outcome, result.detail) == ("timeout", "no answer in 0.001 s")


def test_bad_usage_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: conformance.py: not a directory")
    assert proc.stderr.count("\n") == 1
    proc = subprocess.run([sys.executable, SCRIPT, str(tmp_path), "--jobs", "3"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2


def test_p4info_mode_compares_entity_by_entity(tmp_path):
    """--p4info: identical with p4c's (hand-written) P4Info, differences named per entity,
    compile errors classified, programs without an expected file left out."""
    programs = os.path.join(REPO_ROOT, "tests", "frontend", "programs")
    source = open(os.path.join(programs, "ipv4_forward.p4")).read()
    expected_text = open(os.path.join(programs, "ipv4_forward.p4.p4info.txtpb")).read()
    samples, expected = tmp_path / "samples", tmp_path / "expected"
    samples.mkdir()
    expected.mkdir()
    for name in ("same", "other", "broken", "unexpected"):
        _write(samples, f"{name}.p4", source)
    _write(samples, "broken.p4", source.replace("apply {", "apply", 1))
    _write(expected, "same.p4.p4info.txtpb", expected_text)
    _write(expected, "broken.p4.p4info.txtpb", expected_text)
    # p4c's file for "other" says the table holds 512 entries and lists no NoAction.
    other = expected_text.replace("size: 1024", "size: 512")
    other = other[:other.index("actions {\n  preamble {\n    id: 21257015")] + \
        other[other.index("actions {\n  preamble {\n    id: 25652968"):]
    _write(expected, "other.p4info.txtpb", other)
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, SCRIPT, str(samples), "--p4info", str(expected),
                           "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = {r["name"]: r for r in json.loads(out.read_text())["results"]}
    assert {n: r["outcome"] for n, r in results.items()} == {
        "same": "identical", "other": "different", "broken": "compile-error"}
    assert results["other"]["output"] == [
        "actions NoAction: not in the expected P4Info",
        "tables MyIngress.ipv4_lpm: size: expected \"512\", got \"1024\""]
    assert "identical rate: 1/3 (33.3%)" in proc.stdout


def test_backend_option_reaches_p4switch_stf():
    assert conformance.stf_args_for(None)("/s", "x")[-2:] == ["-I", "/s"]
    assert conformance.stf_args_for("python")("/s", "x") == [
        "stf", "/s/x.p4", "/s/x.stf", "-I", "/s", "--backend", "python"]
    assert conformance.parse_args(["/", "--backend", "c"]).backend == "c"
