"""p4src/main.p4 (AGG_K=1) through `python -m p4switch stf` with star_k1.stf."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def test_star_job_stf_passes():
    result = subprocess.run(
        [sys.executable, "-m", "p4switch", "stf", os.path.join(REPO, "p4src", "main.p4"),
         os.path.join(HERE, "star_k1.stf"), "-D", "AGG_K=1"],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS" in result.stdout and "4 packet(s) in, 3 out" in result.stdout
