"""scripts/time_command.py: the wall-clock time of a command (and until a text first shows in
its output) appended to a results file with the machine's cores, load and the git commit."""

import json
import os
import subprocess
import sys

from doc_commands import REPO

SCRIPT = os.path.join(REPO, "scripts", "time_command.py")


def test_times_a_command_and_appends_its_record(tmp_path):
    out = tmp_path / "results" / "timing.json"
    command = [sys.executable, SCRIPT, "--out", str(out), "--name", "first", "--ready", "now up",
               "--", "sh", "-c", "sleep 0.3; echo now up; sleep 0.3; exit 3"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3                   # the command's own status
    assert "now up" in proc.stdout                # its output passed through
    (run,) = json.loads(out.read_text())["runs"]
    assert (run["name"], run["exit_code"]) == ("first", 3)
    assert 0.3 <= run["ready_s"] <= run["seconds"] and run["seconds"] >= 0.6
    assert run["ready_s"] + 0.3 <= run["seconds"] + 0.01
    proc = subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--name", "second",
                           "--ready", "never", "--", "true"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    document = json.loads(out.read_text())
    assert [r["name"] for r in document["runs"]] == ["first", "second"]
    assert document["runs"][1]["ready_s"] is None
    meta = document["meta"]
    assert meta["cores"] == os.cpu_count() and len(meta["load_average"]) == 3
    assert meta["git_commit"] and meta["started"] == document["runs"][0]["started"]


def test_bad_input_is_one_line(tmp_path):
    for args in (["--out", str(tmp_path / "t.json"), "--name", "x", "--"],
                 ["--out", str(tmp_path / "t.json"), "--name", "x", "--", "no-such-command-x"]):
        proc = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode in (1, 2) and len(proc.stderr.strip().splitlines()) == 1, \
            proc.stderr
    assert not (tmp_path / "t.json").exists()
