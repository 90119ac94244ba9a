"""scripts/measure_start_skew.py: the spread of the ranks' clock starts at the start barrier,
woken on go against the common instant, in a results file with cores, load and commit."""

import json
import os
import subprocess
import sys

from doc_commands import REPO

SCRIPT = os.path.join(REPO, "scripts", "measure_start_skew.py")


def test_common_instant_starts_every_clock_together_and_waking_does_not(tmp_path):
    out = tmp_path / "skew.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--ranks", "3",
                           "--trials", "2", "--busy", "0", "--after", "sleep"],
                          capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(out.read_text())
    assert document["meta"]["cores"] == os.cpu_count() and "git_commit" in document["meta"]
    by_way = {row["way"]: row for row in document["summary"]}
    assert set(by_way) == {"wake", "common"} and by_way["wake"]["trials"] == 2
    assert by_way["common"]["max_clock_start_spread_ms"] == 0
    # woken on go, each rank's clock starts at its own wake-up: three never at one instant
    assert all(t["clock_start_spread_ms"] == t["wake_spread_ms"] > 0
               for t in document["trials"] if t["way"] == "wake")


def test_bad_counts_are_one_line_usage_errors(tmp_path):
    proc = subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path / "x.json"),
                           "--ranks", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("error: --trials must be at least 1, --ranks at least 2, "
                           "--busy at least 0\n")
