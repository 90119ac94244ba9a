"""`python -m lab` refuses bad requests with one line before touching the network,
and the lab CLI's argument parsing."""

import os
import subprocess
import sys

import pytest

from lab.cli import CommandError, dtype, parse_arguments, positive_int, shown_path
from lab.command import build_parser
from topologies.switches import REPO


# PATH without bmv2, and $P4LANG_HOME (looked at first: p4switch/p4lang.py) a directory
# without the tools, so that the bundle beside the repository is not found either
NO_P4LANG_HOME = "/nonexistent-p4lang"


def run_command(*args, path="/nonexistent"):
    env = dict(os.environ, PATH=path, P4LANG_HOME=NO_P4LANG_HOME)
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)


def test_bmv2_absent_is_one_clear_line():
    result = run_command("--topo", "star:4", "--switch", "bmv2", "--cli")
    assert result.returncode == 2
    assert result.stderr == (f"error: --switch bmv2: P4LANG_HOME={NO_P4LANG_HOME} holds none "
                             "of p4c-bm2-ss, simple_switch, simple_switch_grpc, "
                             "simple_switch_CLI in bin/ (use --switch builtin)\n")
    assert result.stdout == ""


def test_script_needs_cli(tmp_path):
    script = tmp_path / "session"
    script.write_text("jobs\n")
    result = run_command("--topo", "star:4", "--switch", "builtin", "--script", str(script))
    assert (result.returncode, result.stderr) == (2, "error: --script needs --cli\n")


def test_parse_arguments():
    kinds = (positive_int, positive_int, dtype)
    usage = "allreduce [JOB] [ELEMENTS] [DTYPE]"
    assert parse_arguments("", usage, kinds) == [None, None, None]
    assert parse_arguments("2 100000 float32", usage, kinds) == [2, 100000, "float32"]
    assert parse_arguments(" 3 ", usage, kinds) == [3, None, None]
    with pytest.raises(CommandError, match=r"usage: allreduce .* \('0' is not valid\)"):
        parse_arguments("0", usage, kinds)
    with pytest.raises(CommandError, match=r"\('int8' is not valid\)"):
        parse_arguments("1 10 int8", usage, kinds)
    with pytest.raises(CommandError, match=r"^usage: allreduce \[JOB\] \[ELEMENTS\] \[DTYPE\]$"):
        parse_arguments("1 2 int32 4", usage, kinds)


def test_paths_shown_relative_to_the_repository():
    assert shown_path(os.path.join(REPO, "logs", "workers", "h1.log")) == "logs/workers/h1.log"
    assert shown_path("/tmp/x/h1.log") == "/tmp/x/h1.log"


def test_logs_and_pcaps_default_to_logs_and_pcaps():
    args = build_parser().parse_args(["--topo", "star:4"])
    assert (args.logs, args.pcap, args.switch, args.cli) == ("logs", "pcaps", "auto", False)
    args = build_parser().parse_args(["--topo", "star:4", "--no-pcap"])
    assert args.pcap is None


def run_old_name(*args):
    return subprocess.run([sys.executable, "-m", "topologies", *args], cwd=REPO,
                          env=dict(os.environ, PATH="/nonexistent", P4LANG_HOME=NO_P4LANG_HOME),
                          capture_output=True,
                          text=True, timeout=60)


def test_old_name_topologies_run_still_works_with_a_one_line_notice():
    result = run_old_name("run", "--topo", "star:4", "--switch", "bmv2", "--cli")
    notice, error = result.stderr.splitlines()
    assert notice.startswith("notice: `python -m topologies run` is now `python -m lab`")
    assert error.startswith(f"error: --switch bmv2: P4LANG_HOME={NO_P4LANG_HOME} holds none")
    assert result.returncode == 2


def test_old_name_without_run_points_to_the_lab():
    result = run_old_name("--topo", "star:4")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "python -m lab --topo T" in result.stderr
