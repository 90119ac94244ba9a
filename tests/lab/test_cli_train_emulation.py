"""The lab CLI's `train`: PyTorch DDP on the hosts of a running star:2, in-network and Gloo,
a few steps each; a bad option is one error line and the prompt returns; the training job
is removed afterwards."""

import json
import os
import shutil

import pytest

from test_cli_emulation import run_session

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]


def test_train_in_the_lab(tmp_path):
    script = tmp_path / "session"
    script.write_text("train --modes ina,gloo --max-steps 5 --batch 8\n"
                      "train --modes ina,foo\n"
                      "jobs\n")
    code, stdout, stderr = run_session(tmp_path, "star:2", script=str(script))
    assert code == 0, stderr
    lines = stdout.splitlines()         # a script's commands are not echoed
    table = [line.split() for line in lines if line.startswith(("ina ", "gloo "))]
    assert [(row[0], row[1], row[2]) for row in table] == [("ina", "2", "5"), ("gloo", "2", "5")]
    wrote = next(line for line in lines if line.startswith("train: wrote "))
    results = wrote.split()[2].rstrip(",")
    with open(results) as handle:
        document = json.load(handle)
    assert [(r["mode"], r["steps"], r["error"]) for r in document["runs"]] == [
        ("ina", 5, None), ("gloo", 5, None)]
    # the same weights and data at step 0 (later steps: tests/experiments/test_train_emulation.py)
    assert document["runs"][0]["per_step"]["loss"][0] == document["runs"][1]["per_step"]["loss"][0]
    after = lines[lines.index(wrote) + 1:]
    assert after == ["error: --modes: unknown mode 'foo' (choose from ina, gloo, ring)",
                     "no jobs installed"]
