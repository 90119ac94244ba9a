"""The lab CLI end to end: `python -m lab --topo T --cli` fed a session, on the
builtin switch, and on bmv2 (`--switch bmv2`) where simple_switch_grpc is installed.

Each run happens in a private network namespace (private_netns.py), so its veths, switch
interfaces and gRPC ports never meet another network on this machine.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from hosts.vectors import generate
from private_netns import (command_pid, interfaces_after, private_network_command,
                           processes_mentioning)
from topologies.switches import REPO

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]

SESSION_TIMEOUT_S = 300


# The bmv2 session is in the bmv2 tier: it runs wherever the p4lang toolchain is (CI, the lab
# VM); elsewhere it skips with one line, and under CI=true a missing toolchain fails it.
SWITCHES = ["builtin", pytest.param("bmv2", marks=pytest.mark.bmv2)]


def run_session(tmp_path, topo, stdin_text=None, script=None, extra=(), switch="builtin"):
    """Run the CLI in a fresh network namespace; (exit code, stdout, stderr)."""
    command = [sys.executable, "-m", "lab", "--topo", topo, "--switch",
               switch, "--cli", "--logs", str(tmp_path / "logs"),
               "--pcap", str(tmp_path / "pcaps"), *extra]
    if script is not None:
        command += ["--script", script]
    result = subprocess.run(private_network_command(command, tmp_path), cwd=REPO,
                            input=stdin_text if stdin_text is not None else "",
                            capture_output=True, text=True, timeout=SESSION_TIMEOUT_S)
    assert interfaces_after(tmp_path) == ["lo"]
    return result.returncode, result.stdout, result.stderr


def section(stdout: str, command: str) -> list:
    """The output lines of one command: after its echoed prompt line, up to the next prompt."""
    chunks = stdout.split("mininet> ")
    for chunk in chunks[1:]:
        lines = chunk.splitlines()
        if lines and lines[0] == command:
            return lines[1:]
    raise AssertionError(f"no output for {command!r} in:\n{stdout}")


@pytest.mark.parametrize("switch", SWITCHES)
def test_star_session_allreduce_tree_slots(tmp_path, switch, request):
    """The issue's session; on bmv2 the slot registers come through bmv2's Thrift API
    (controller/bmv2_registers.py) and the counters through its P4Runtime server."""
    if switch == "bmv2":
        request.getfixturevalue("p4lang_toolchain")
    session = "allreduce 1 100000 int32\ntree 1\nslots s1 1\ncounters\njobs\nexit\n"
    # K = 64, the program's own (the lab's default on the built-in switch is 256)
    code, stdout, stderr = run_session(tmp_path, "star:4", stdin_text=session, switch=switch,
                                       extra=("--k", "64"))
    assert code == 0, stderr
    assert "error:" not in stdout

    allreduce = section(stdout, "allreduce 1 100000 int32")
    assert allreduce[0] == ("allreduce job 1: 4 workers (h1, h2, h3, h4), root s1, window 32, "
                            "K 64")
    for rank in range(4):
        assert any(line.startswith(f"  h{rank + 1} rank {rank}: correct in ")
                   for line in allreduce), allreduce
    assert allreduce[-1].startswith("ina job 1, 100000 x int32 on 4 workers: correct in ")

    tree = section(stdout, "tree 1")
    assert tree[0] == "job 1: 4 workers, window 32, root s1, 1 switch"
    assert tree[1].startswith("  s1 (root): fan-in 4, slots 0-31,")
    assert tree[2:6] == [f"    h{i}: port {i}, contributor {i - 1}" for i in range(1, 5)]
    assert tree[6] == "(installed, generation 1)"

    slots = section(stdout, "slots s1 1")
    assert slots[0] == "s1 job 1 (generation 1, fan-in 4): 32 slots x 2 versions"
    # 100000 values in 1563 chunks of 64, then one closing round per slot: every slot version
    # held rounds; the last ones are complete at the root, so each cell holds a result seen
    # from all four contributors
    rows = [line.split() for line in slots[2:-1]]
    assert len(rows) == 64
    assert all(row[3] == "result" and row[5] == "1111" and row[6] == "0" for row in rows)
    assert slots[-1] == "cells: 64 result"
    # Per slot, the version with the larger offset holds the closing round (zeros, one chunk
    # above the slot's last real round); value[0] of the other is the sum of the workers'
    # value at its offset (allreduce seeds job J's workers with J)
    inputs = [generate(1, rank, 4, 100000, np.int32) for rank in range(4)]
    by_slot = {}
    for row in rows:
        by_slot.setdefault(row[0], []).append((int(row[4]), int(row[10]), row))
    assert len(by_slot) == 32
    for cells in by_slot.values():
        (last, value, row), (closing, zero, _) = sorted(cells)
        assert closing == last + 64 and zero == 0, cells
        assert value == sum(int(vector[last]) for vector in inputs), row

    counters = section(stdout, "counters")
    assert len(counters) == 1 and counters[0].startswith("s1: events: added ")
    assert re.search(r"\bcompleted 1595\b", counters[0]), counters    # 1563 + 32 closing

    assert section(stdout, "jobs") == [
        "job 1: generation 1, window 32, root s1, switches s1, UDP port 20001; workers "
        "h1(c0@s1) h2(c1@s1) h3(c2@s1) h4(c3@s1)"]

    # per-switch output in logs/, per-port pcaps in pcaps/, worker reports under logs/workers
    assert (tmp_path / "logs" / "s1.out").exists()
    pcaps = sorted(os.listdir(tmp_path / "pcaps"))
    assert pcaps == sorted(f"s1-eth{p}_{d}.pcap" for p in range(1, 5) for d in ("in", "out"))
    assert all((tmp_path / "pcaps" / name).stat().st_size > 24 for name in pcaps)
    reports = os.listdir(tmp_path / "logs" / "workers" / "reports")
    assert len(reports) == 4
    assert processes_mentioning(str(tmp_path)) == []


def test_two_level_script_session(tmp_path):
    """--script on a leaf-spine: ring baseline, float32 in-network job on three hosts through
    the spine, slots on a leaf, per-switch counters, uninstall, and one-line errors."""
    script = tmp_path / "session"
    script.write_text("ring 5000 int32\n"
                      "install 2 h1 h2 h3\n"
                      "allreduce 2 5000 float32\n"
                      "slots s2 2\n"
                      "counters s3\n"
                      "uninstall 2\n"
                      "jobs\n"
                      "slots s2 2\n"
                      "tree 2\n"
                      "allreduce 1 10 int64\n")
    code, stdout, stderr = run_session(tmp_path, "leafspine:2,1,2", script=str(script),
                                       extra=("--window", "8"))
    assert code == 0, stderr
    lines = stdout.splitlines()

    assert "ring job 1, 5000 x int32 on 4 workers: correct" in "\n".join(lines)
    install_worker_lines = [l.strip() for l in lines if "-m hosts worker --job 2" in l]
    assert [l.split()[0] for l in install_worker_lines] == ["h1", "h2", "h3"]
    assert install_worker_lines[0].endswith(" > " + str(tmp_path / "logs" / "workers" /
                                                         "hand-h1.log") + " 2>&1 &")
    # by hand: the report on stdout, no start barrier
    assert all(" --json - " in l and "--start-barrier" not in l for l in install_worker_lines)
    assert "--contributor 0" in install_worker_lines[2]      # h3 alone below leaf s2
    assert any(l.startswith("ina job 2, 5000 x float32 on 3 workers: correct in ")
               for l in lines), stdout

    # s2 holds h3 only: fan-in 1, bitmap "1"; float32 rounds carry block exponents
    header = lines.index("s2 job 2 (generation 2, fan-in 1): 8 slots x 2 versions")
    rows = [l.split() for l in lines[header + 2:header + 18]]
    assert all(row[3] == "result" and row[5] == "1" for row in rows), rows
    assert lines[header + 18] == "cells: 16 result"

    counters = [l for l in lines if l.startswith("s3: events: ")]
    assert len(counters) == 1 and "completed" in counters[0]
    assert "job 2 uninstalled" in lines
    assert "no jobs installed" in lines
    assert ("error: job 2 is not installed (see `jobs`; `allreduce 2` or `install 2` "
            "installs it)") in lines
    assert ("(not installed: the tree the controller plans over all hosts; `allreduce` or "
            "`install` installs it)") in lines
    assert ("error: usage: allreduce [JOB] [ELEMENTS] [DTYPE] ('int64' is not valid)") in lines
    assert processes_mentioning(str(tmp_path)) == []


def test_sigterm_at_the_prompt_tears_down(tmp_path):
    """Mininet's CLI swallows KeyboardInterrupt, so SIGTERM must end the session by itself."""
    command = [sys.executable, "-m", "lab", "--topo", "star:2", "--switch",
               "builtin", "--cli", "--logs", str(tmp_path / "logs"),
               "--pcap", str(tmp_path / "pcaps")]
    stdout_path = tmp_path / "stdout"
    with open(stdout_path, "w") as stdout:
        process = subprocess.Popen(private_network_command(command, tmp_path), cwd=REPO,
                                   stdin=subprocess.PIPE, stdout=stdout,
                                   stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while "mininet> " not in stdout_path.read_text():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        os.kill(command_pid(tmp_path), signal.SIGTERM)
        assert process.wait(timeout=60) == 143
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
    assert interfaces_after(tmp_path) == ["lo"]
    assert processes_mentioning(str(tmp_path)) == []
