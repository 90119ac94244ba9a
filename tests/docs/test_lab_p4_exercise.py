"""The lab's P4 exercise (docs/lab-guide.md, exercise 6): a per-job counter of the
contributions each switch absorbs into a slot's sum.  Its solution,
docs/lab/solution-absorbed-counter.patch, is applied to a temporary copy of p4src, compiled,
and driven in the in-process p4switch (both back ends) with the controller's own job
installation (tests/p4src/p4src_harness.py); the counter must hold exact values.

A student checks an edited tree instead of the solution with
`LAB_P4SRC=p4src .venv/bin/python -m pytest -q tests/docs/test_lab_p4_exercise.py`
(the tree is copied and not patched)."""

import os
import shutil
import subprocess
import sys

import pytest

from topologies.switches import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "p4src"))
import p4src_harness  # noqa: E402
from p4src_harness import contribution, events, fabric  # noqa: E402

PATCH = os.path.join(REPO, "docs", "lab", "solution-absorbed-counter.patch")
COUNTER = "absorbed_per_job"


def absorbed(switch) -> dict:
    """{job id: packets} of the non-zero cells of the exercise's counter."""
    counter = switch.counter(COUNTER)
    return {job: counter.read(job)[0] for job in range(1024) if counter.read(job)[0]}


@pytest.fixture(scope="module")
def exercise_p4src(tmp_path_factory):
    """main.p4 of a copy of p4src with the solution applied (or of $LAB_P4SRC as it is)."""
    root = tmp_path_factory.mktemp("lab-exercise")
    student = os.environ.get("LAB_P4SRC")
    shutil.copytree(os.path.join(REPO, student) if student else os.path.join(REPO, "p4src"),
                    root / "p4src")
    # main.p4 includes ../p4switch/include/{core,v1model}.p4: the same beside the copy
    (root / "p4switch").mkdir()
    (root / "p4switch" / "include").symlink_to(os.path.join(REPO, "p4switch", "include"))
    if not student:
        applied = subprocess.run(["git", "apply", "--verbose", PATCH], cwd=root,
                                 capture_output=True, text=True)
        assert applied.returncode == 0, applied.stderr
    return str(root / "p4src" / "main.p4")


@pytest.fixture(params=["c", "python"])
def patched(request, exercise_p4src, monkeypatch):
    """fabric() of p4src_harness on the patched program, with the given back end."""
    monkeypatch.setattr(p4src_harness, "MAIN_P4", exercise_p4src)
    monkeypatch.setattr(p4src_harness, "_programs", {})
    return lambda topo: fabric(topo, backend=request.param)


def deliver(spec, switches, host, frame) -> list:
    """Send `frame` from `host` and carry every frame the switches emit across the links
    until none is left; returns [(host, frame)] of what reached hosts."""
    ends = {}
    for link in spec.links:
        ends[(link.node1, link.port1)] = (link.node2, link.port2)
        ends[(link.node2, link.port2)] = (link.node1, link.port1)
    queue, reached = [ends[(host, None)] + (frame,)], []
    while queue:
        switch, port, data = queue.pop(0)
        for out_port, out in switches[switch].process_packet(port, data):
            peer, peer_port = ends[(switch, out_port)]
            if peer in switches:
                queue.append((peer, peer_port, out))
            else:
                reached.append((peer, out))
    return reached


def contribute(spec, switches, host, job, slot, contributor, values) -> list:
    return deliver(spec, switches, host,
                   contribution(spec.host(host), job, slot, 0, contributor, values))


STUDENT = pytest.mark.skipif(bool(os.environ.get("LAB_P4SRC")),
                             reason="LAB_P4SRC: checking a student's tree, not the solution")


@STUDENT
def test_the_solution_patch_applies_to_p4src_and_changes_only_agg_result():
    check = subprocess.run(["git", "apply", "--check", "--numstat", PATCH], cwd=REPO,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert [line.split()[2] for line in check.stdout.splitlines()] == ["p4src/agg_result.p4"]


@STUDENT
def test_p4src_itself_has_no_such_counter():
    # the exercise adds it: the unpatched program must not pass this test's checks
    program = p4src_harness.program()
    assert COUNTER not in str(program.p4info)


def test_star_counts_every_absorbed_contribution_per_job_and_nothing_else(patched):
    spec, switches, manager = patched("star:4")
    manager.start_job(3, ["h1", "h2"], window=4)      # contributors 0, 1
    manager.start_job(4, ["h3", "h4"], window=4)      # contributors 0, 1
    for slot in range(2):                              # job 3: two rounds of two
        assert contribute(spec, switches, "h1", 3, slot, 0, [1, 2, 3, 4]) == []
        contribute(spec, switches, "h1", 3, slot, 0, [1, 2, 3, 4])   # duplicate: not absorbed
        results = contribute(spec, switches, "h2", 3, slot, 1, [5, 6, 7, 8])
        assert sorted(host for host, _ in results) == ["h1", "h2"]
    resent = contribute(spec, switches, "h2", 3, 0, 1, [5, 6, 7, 8])  # from the stored result
    assert [host for host, _ in resent] == ["h2"]
    for slot in range(3):                              # job 4: three rounds of two
        contribute(spec, switches, "h3", 4, slot, 0, [1, 1, 1, 1])
        contribute(spec, switches, "h4", 4, slot, 1, [2, 2, 2, 2])
    contribute(spec, switches, "h1", 9, 0, 0, [1, 1, 1, 1])          # unknown job: dropped
    assert absorbed(switches["s1"]) == {3: 4, 4: 6}
    # agg_events: added 5, completed 5, duplicate 2, result_resent 1 (p4src/headers.p4)
    assert events(switches["s1"]) == {0: 5, 1: 5, 3: 2, 4: 1}


def test_leaf_spine_counts_hosts_at_the_leaves_and_partials_at_the_spine(patched):
    spec, switches, manager = patched("leafspine:2,1,2")     # s1, s2 leaves; s3 the spine
    manager.start_job(7, ["h1", "h2", "h3", "h4"], window=4)
    contributors = {"h1": 0, "h2": 1, "h3": 0, "h4": 1}       # index at the host's leaf
    for slot in range(2):
        reached = []
        for host, index in contributors.items():
            reached += contribute(spec, switches, host, 7, slot, index, [slot + 1] * 4)
        assert sorted(host for host, _ in reached) == ["h1", "h2", "h3", "h4"]
    assert absorbed(switches["s1"]) == {7: 4}          # h1 and h2, two rounds
    assert absorbed(switches["s2"]) == {7: 4}          # h3 and h4, two rounds
    assert absorbed(switches["s3"]) == {7: 4}          # the two leaves' partials, two rounds
    assert events(switches["s3"]) == {0: 2, 1: 2}      # the spine: added, completed


@pytest.mark.bmv2
def test_real_p4c_compiles_the_solution(p4lang_toolchain, exercise_p4src, tmp_path):
    from p4switch.p4lang import P4C
    result = subprocess.run(
        [p4lang_toolchain.path(P4C), "--std", "p4-16", "--arch", "v1model", "-DAGG_K=64",
         "-o", str(tmp_path / "main.json"), "--p4runtime-files",
         str(tmp_path / "main.p4info.txtpb"), exercise_p4src],
        capture_output=True, text=True, env=p4lang_toolchain.environment())
    assert (result.returncode, result.stderr + result.stdout) == (0, "")
    assert 'alias: "absorbed_per_job"' in (tmp_path / "main.p4info.txtpb").read_text()
