"""SwitchML's switch (p4src/switchml/switchml.p4) on the in-process p4switch, installed by the
controller's AggregationManager with SwitchML's installer (controller/switchml.py): exact
packets in, exact packets out; and the STF of tests/p4src/switchml_stf.py on every back end
(tests/bmv2 runs the committed K = 1 file three ways)."""

import io
import os
import struct
import subprocess
import sys

import pytest
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

import switchml_stf
from controller.planner import PlanError
from controller.switchml import POOL_REGISTERS
from p4src_harness import REPO, contribution, counts, drops, events, fabric

K = 4
JOB = 9


def frames(sw, spec, job, slot, version, values, offset=0):
    """The packet of each host (index i: host h<i+1> on port i+1) in `values` ({index:
    values}; its worker id: its place in that order), in turn; the switch's output for
    each."""
    f = switchml_stf.Frames(K)
    outs = []
    for wid, index in enumerate(values):
        host = spec.host(f"h{index + 1}")
        packet = Ether(f.packet(index + 1, job, slot, version, wid, values[index],
                                offset=offset))
        packet.src, packet["IP"].src = host.mac, host.ip
        outs.append(sw.process_packet(index + 1, bytes(packet)))
    return outs


def sums(out):
    """{port: values} of result frames."""
    return {port: list(struct.unpack(f"!{K}i", bytes(Ether(data)[UDP].payload)[16:]))
            for port, data in out}


@pytest.fixture
def star():
    spec, switches, manager = fabric("star:4", k=K, slots=16)
    return spec, switches["s1"], manager


def test_the_committed_stf_is_what_the_generator_writes():
    text = io.StringIO()
    switchml_stf.write_stf(text, 1)
    with open(os.path.join(REPO, "tests", "p4src", "switchml.stf")) as handle:
        assert handle.read() == text.getvalue()


@pytest.mark.parametrize("backend", ["python", "c", "xdp"])
def test_switchml_stf_passes_on_each_back_end(backend, tmp_path):
    if backend == "xdp":
        from p4switch.backend.xdp import loader
        from skip_or_fail import skip_or_fail
        skip_or_fail(loader.toolchain_missing())
    text = io.StringIO()
    sent = switchml_stf.write_stf(text, K)
    path = tmp_path / "switchml_k4.stf"
    path.write_text(text.getvalue())
    run = subprocess.run([sys.executable, "-m", "p4switch", "stf",
                          os.path.join(REPO, "p4src", "main.p4"), str(path), "-D", f"AGG_K={K}",
                          "--backend", backend], capture_output=True, text=True, cwd=REPO,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"PASS {path}: {sent} packet(s) in, 13 out" in run.stdout


def test_the_installer_gives_each_job_a_clean_pool_of_its_own(star):
    """A job's pool is reset on install (its cells' bitmaps and counts zeroed, as SwitchML's
    controller does), so a copy left complete by an earlier job on the same slots is not
    taken for a retransmission; two jobs' pools do not overlap."""
    spec, sw, manager = star
    seen = sw.register(POOL_REGISTERS[0])
    for cell in range(32):
        seen.write(cell, 0b111)                   # as a finished 3-worker job leaves them
    plan = manager.start_job(JOB, ["h1", "h2", "h3"], 4, design="switchml")
    other = manager.start_job(JOB + 1, ["h4"], 2, design="switchml")
    assert (plan.switches["s1"].slot_base, other.switches["s1"].slot_base) == (0, 4)
    assert [seen.read(cell) for cell in range(8)] == [0] * 8
    assert [seen.read(cell) for cell in range(8, 12)] == [0] * 4
    assert seen.read(12) == 0b111                  # beyond both pools: untouched
    values = {0: [1, 2, 3, 4], 1: [10, 20, 30, 40], 2: [-100, 0, 100, 2**31 - 1 - 34]}
    outs = frames(sw, spec, JOB, 3, 0, values)
    assert outs[:2] == [[], []]
    assert sums(outs[2]) == {p: [-89, 22, 133, 2**31 - 1] for p in (1, 2, 3)}
    alone = frames(sw, spec, JOB + 1, 1, 1, {3: [5, 6, 7, 8]})
    assert sums(alone[0]) == {4: [5, 6, 7, 8]}     # one worker: its packet completes
    assert counts(sw, "switchml_events", 7) == {0: 2, 1: 2}
    assert drops(sw) == {}
    manager.stop_job(JOB + 1)
    assert frames(sw, spec, JOB + 1, 1, 0, {3: [1] * K}) == [[]]
    assert drops(sw) == {5: 1}                     # unknown_job once removed


def test_ours_and_switchml_run_side_by_side_on_the_same_hosts(star):
    """Jobs of the two designs on the same switch and hosts: each in its own tables and
    registers, dispatched by UDP port; a job id is one job, of one design."""
    spec, sw, manager = star
    manager.start_job(JOB, ["h1", "h2"], 2, design="switchml")
    manager.start_job(JOB + 1, ["h1", "h2"], 2)
    with pytest.raises(PlanError, match=f"job {JOB} is already running"):
        manager.start_job(JOB, ["h3"], 2)
    outs = frames(sw, spec, JOB, 0, 0, {0: [1] * K, 1: [2] * K})
    assert sums(outs[1]) == {1: [3] * K, 2: [3] * K}
    assert all(Ether(d)[UDP].sport == 9200 for _, d in outs[1])
    h1, h2 = spec.host("h1"), spec.host("h2")
    assert sw.process_packet(1, contribution(h1, JOB + 1, 0, 0, 0, [7] * K)) == []
    out = sw.process_packet(2, contribution(h2, JOB + 1, 0, 0, 1, [1] * K))
    assert sorted(p for p, _ in out) == [1, 2] and events(sw) == {0: 1, 1: 1}
    assert all(Ether(d)[UDP].sport == 9100 for _, d in out)


def test_a_job_across_racks_is_refused_in_one_line_and_reserves_nothing():
    spec, switches, manager = fabric("leafspine:2,1,2", k=K, slots=16)
    with pytest.raises(PlanError) as refused:
        manager.start_job(JOB, ["h1", "h3"], 4, design="switchml")
    assert str(refused.value) == ("switchml aggregates in one switch (a single rack); "
                                  f"job {JOB}'s hosts need 3")
    assert manager.jobs() == {}
    plan = manager.start_job(JOB, ["h1", "h2"], 16, design="switchml")    # one rack: fine
    assert list(plan.switches) == ["s1"] and plan.switches["s1"].slot_base == 0
