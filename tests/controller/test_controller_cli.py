"""`python -m controller plan`: the printed trees and the one-line errors."""

import os
import shutil
import subprocess
import sys

import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "controller", *args],
                          capture_output=True, text=True, timeout=60)


def test_plan_prints_each_star_job_tree():
    result = run("plan", "--topo", "star:3", "--workers", "2", "--jobs", "2", "--window", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "\n".join([
        "job 0: 2 workers, window 4, root s1, 1 switch",
        "  s1 (root): fan-in 2, slots 0-3, multicast group 1",
        "    h1: port 1, contributor 0",
        "    h2: port 2, contributor 1",
        "job 1: 2 workers, window 4, root s1, 1 switch",
        "  s1 (root): fan-in 2, slots 4-7, multicast group 2",
        "    h1: port 1, contributor 0",
        "    h3: port 3, contributor 1",
    ]) + "\n"


def test_plan_refusal_and_bad_usage_are_one_line_with_exit_2():
    for args, message in [
        (["plan", "--topo", "star:2", "--workers", "2", "--jobs", "2", "--window", "600"],
         "controller: switch s1: job 1 needs 600 slots but only 424 contiguous of 1024 "
         "are free\n"),
        (["plan", "--topo", "star:2", "--workers", "3"],
         "controller: --workers must be between 1 and 2 (hosts in star:2)\n"),
        (["plan", "--topo", "ring:3", "--workers", "3"],
         "controller: bad topology 'ring:3': expected star:N, leafspine:L,S,H, fattree:K, "
         "tree:D,F or a topology.json file\n"),
    ]:
        result = run(*args)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", message)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_status_without_a_switch_fails_with_exit_1():
    """In a network namespace of its own, so no switch of another test answers on 9559."""
    result = subprocess.run(["unshare", "--net", "--map-root-user", sys.executable, "-m",
                             "controller", "status", "--topo", "star:1", "--timeout", "0.5"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "switch s1: no P4Runtime server" in result.stderr


def test_plan_fattree_two_jobs_take_different_cores():
    result = run("plan", "--topo", "fattree:4", "--workers", "16", "--jobs", "2")
    assert result.returncode == 0, result.stderr
    headers = [l for l in result.stdout.splitlines() if l.startswith("job ")]
    assert headers == ["job 0: 16 workers, window 32, root s1, 13 switches",
                       "job 1: 16 workers, window 32, root s3, 13 switches"]
    # cores are s1-s4; below each root, one aggregation switch per pod, disjoint per job
    jobs = result.stdout.split("job 1:")
    aggregation = [{l.split()[0] for l in text.splitlines() if l.startswith("    s")}
                   for text in jobs]
    assert aggregation == [{"s5", "s9", "s13", "s17"}, {"s6", "s10", "s14", "s18"}]


def test_plan_into_a_closed_pipe_is_quiet():
    read_end, write_end = os.pipe()
    os.close(read_end)           # the reader is gone before the first line is written
    try:
        result = subprocess.run([sys.executable, "-m", "controller", "plan", "--topo",
                                 "star:4", "--workers", "4"],
                                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert result.stderr == ""
