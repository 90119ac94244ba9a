"""A switch process killed in a lab session (`py s1.process.kill()`, SIGKILL) is restarted by
the network and reprogrammed by the controller: `restarts` shows it and an allreduce on the
same network is then correct; with --no-restart `restarts` says they are off.  Each session
runs in a private network namespace (private_netns.py)."""

import os
import re
import shutil

import pytest

from test_cli_emulation import run_session, section
from private_netns import processes_mentioning

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]


def test_killed_switch_comes_back_programmed(tmp_path):
    out_file = tmp_path / "logs" / "s1.out"
    session = ("restarts\n"
               f"sh echo written-before-the-kill >> {out_file}\n"
               "py s1.process.kill()\n"
               "sh sleep 8\n"
               "restarts\n"
               "allreduce 1 5000 int32\n"
               "exit\n")
    code, stdout, stderr = run_session(tmp_path, "star:4", stdin_text=session)
    assert code == 0, stderr
    # the echoed prompt lines come out in order; the first `restarts` is before the kill
    chunks = [c.splitlines() for c in stdout.split("mininet> ")[1:]]
    restarts = [c[1:] for c in chunks if c and c[0] == "restarts"]
    assert restarts[0] == ["restarts: s1 0"]
    assert restarts[1][0] == "restarts: s1 1"
    assert re.fullmatch(r"switch s1 died \(killed by signal 9\); restarted and reprogrammed "
                        r"in \d+\.\d s", restarts[1][1]), restarts
    assert len(restarts[1]) == 2
    assert any(l.startswith("ina job 1, 5000 x int32 on 4 workers: correct in ")
               for l in section(stdout, "allreduce 1 5000 int32")), stdout
    # the restarted process appends its output to the same file
    assert "written-before-the-kill\n" in out_file.read_text()
    assert processes_mentioning(str(tmp_path)) == []


def test_no_restart_leaves_it_off(tmp_path):
    code, stdout, stderr = run_session(tmp_path, "star:2", stdin_text="restarts\nexit\n",
                                       extra=("--no-restart",))
    assert code == 0, stderr
    assert section(stdout, "restarts") == ["switch restarts are off (--no-restart)"]
