"""ATP's switch (p4src/atp/atp.p4): the STF of tests/p4src/atp_stf.py on every back end
(tests/bmv2 runs the committed K = 1 file three ways), and jobs installed by the controller's
AggregationManager with ATP's installer (controller/atp.py) on the in-process p4switch."""

import io
import os
import subprocess
import sys

import pytest

import atp_stf
from p4src_harness import REPO

K = 4


def test_the_committed_stf_is_what_the_generator_writes():
    text = io.StringIO()
    atp_stf.write_stf(text, 1)
    with open(os.path.join(REPO, "tests", "p4src", "atp.stf")) as handle:
        assert handle.read() == text.getvalue()


@pytest.mark.parametrize("backend", ["python", "c", "xdp"])
def test_atp_stf_passes_on_each_back_end(backend, tmp_path):
    if backend == "xdp":
        from p4switch.backend.xdp import loader
        from skip_or_fail import skip_or_fail
        skip_or_fail(loader.toolchain_missing())
    text = io.StringIO()
    sent = atp_stf.write_stf(text, K)
    path = tmp_path / "atp_k4.stf"
    path.write_text(text.getvalue())
    run = subprocess.run([sys.executable, "-m", "p4switch", "stf",
                          os.path.join(REPO, "p4src", "main.p4"), str(path), "-D", f"AGG_K={K}",
                          "--backend", backend], capture_output=True, text=True, cwd=REPO,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"PASS {path}: {sent} packet(s) in, 16 out" in run.stdout
