"""scripts/conformance.py --backend bmv2 --p4c-runner: our bmv2 driver and p4c's own STF
runner (the bundle's run-bmv2-test.py) pass the same samples.  The samples here: a program
that passes, one whose STF is wrong, one p4c refuses, and tests/p4 programs whose STFs use only
p4c's STF commands.  The same command on p4c's corpus is in docs/bmv2.md."""

import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "conformance.py"
sys.path.insert(0, str(REPO / "tests" / "conformance"))
from increment_program import INCREMENT_P4  # noqa: E402
FROM_REPO = ("clone", "header_stack", "const_entries", "checksum_payload")


@pytest.fixture
def samples(tmp_path):
    (tmp_path / "good.p4").write_text(INCREMENT_P4)
    (tmp_path / "good.stf").write_text("packet 0 41\nexpect 0 42\n")
    (tmp_path / "wrong.p4").write_text(INCREMENT_P4)
    (tmp_path / "wrong.stf").write_text("packet 0 41\nexpect 0 41\n")
    (tmp_path / "loop.p4").write_text(INCREMENT_P4.replace(
        "hdr.h.x = hdr.h.x + 1;",
        "for (bit<8> i = 0; i < 2; i = i + 1) { hdr.h.x = hdr.h.x + 1; }"))
    (tmp_path / "loop.stf").write_text("packet 0 41\nexpect 0 43\n")
    for name in FROM_REPO:
        for ext in (".p4", ".stf"):
            shutil.copy(REPO / "tests" / "p4" / (name + ext), tmp_path / (name + ext))
    return tmp_path


@pytest.mark.bmv2
def test_our_bmv2_driver_passes_what_p4cs_runner_passes(p4lang_toolchain, samples, tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(samples), "--backend", "bmv2",
                           "--p4c-runner", "--jobs", "2", "--timeout", "120", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    ours = {r["name"]: r["outcome"] for r in record["results"]}
    theirs = {r["name"]: r["outcome"] for r in record["p4c_runner"]}
    assert ours == {"good": "pass", "wrong": "fail", "loop": "compile-error",
                    **{name: "pass" for name in FROM_REPO}}
    assert {n: o == "pass" for n, o in theirs.items()} == {n: o == "pass" for n, o in ours.items()}
    count = sum(o == "pass" for o in ours.values())
    assert f"p4c's own runner (run-bmv2-test.py on bmv2): pass {count}/{len(ours)}" in proc.stdout
    assert f"p4switch stf --backend bmv2: pass {count}/{len(ours)}" in proc.stdout
    assert "the two runners agree on every sample" in proc.stdout


def test_disagreements_are_listed():
    spec = importlib.util.spec_from_file_location("conformance", SCRIPT)
    conformance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conformance)
    R = conformance.SampleResult
    text = conformance.compare_with_p4c_runner(
        [R("a", "pass"), R("b", "fail", "port 0: ...")],
        [R("a", "pass"), R("b", "pass")], "bmv2")
    assert "p4c's own runner (run-bmv2-test.py on bmv2): pass 2/2" in text
    assert "p4switch stf --backend bmv2: pass 1/2" in text
    assert "disagree: b: ours not pass, p4c's runner pass" in text
