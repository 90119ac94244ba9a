"""What bmv2 can run, decided before anything starts: K values p4src is built for (both
targets), bmv2's 512-byte packet growth (in-network allgather and broadcast at K = 256), and
the ina workers' first timeout scaled by bmv2's cost per packet.  No network, no switch: the
toolchain is stood in for where a command needs --switch bmv2 resolved."""

import pytest

from contracts.cli import UsageError
from experiments import compare
from jobs import cpu
from jobs.modes import job_timeout_ms, switch_refusal, switch_window_ms
from contracts.jobs import DEFAULT_TIMEOUT_MS, ina_timeout_ms
from p4switch import p4lang
from contracts.requests import k_refusal
from topologies.program import bmv2_growth_refusal
from topologies.spec import parse_topology
from topologies.switches import BUILTIN_PACKET_CPU_MS, bmv2_packet_ms, builtin_packet_ms

BASE = ["--topo", "star:4", "--modes", "ina", "--elements", "1000", "--out", "/nonexistent"]


@pytest.fixture
def fake_p4lang(monkeypatch):
    toolchain = p4lang.Toolchain("PATH", None, {t: f"/usr/bin/{t}" for t in p4lang.TOOLS})
    monkeypatch.setattr(p4lang, "find", lambda: toolchain)


def test_k_values_p4src_is_built_for():
    assert k_refusal(1) is None and k_refusal(256) is None
    assert k_refusal(3) == ("--k 3: p4src is built for K = 1, 2, 4, 8, 16, 32, 64, 128 or 256 "
                            "values per packet")
    assert k_refusal(512) is not None


def test_bmv2_grows_a_packet_by_512_bytes_at_most():
    assert bmv2_growth_refusal(128, "in-network broadcast") is None     # 512 bytes: fits
    assert bmv2_growth_refusal(256, "in-network broadcast") == (
        "bmv2 cannot run in-network broadcast at K = 256: the switch fills header-only "
        "packets with 1024 bytes of values, and bmv2 grows a packet by at most 512 bytes (it "
        "aborts beyond: PacketBuffer::push); use --k 128 or less, or --switch builtin")


FILLS_HEADER_ONLY = ("allgather", "broadcast")     # a header-only contribution gets values


@pytest.mark.parametrize("collective", ["allreduce", "reduce-scatter", *FILLS_HEADER_ONLY])
def test_which_runs_bmv2_refuses(collective):
    refused = switch_refusal("bmv2", 256, "ina", collective)
    assert (refused is not None) == (collective in FILLS_HEADER_ONLY)
    assert switch_refusal("builtin", 256, "ina", collective) is None
    assert switch_refusal("bmv2", 128, "ina", collective) is None
    assert switch_refusal("bmv2", 256, "ring", collective) is None     # hosts only


def test_compare_refuses_before_starting(fake_p4lang):
    with pytest.raises(UsageError, match="^bmv2 cannot run in-network allgather at K = 256"):
        compare.main(BASE + ["--switch", "bmv2", "--k", "256", "--collective", "allgather"])
    with pytest.raises(UsageError, match="^--k 3: p4src is built for"):
        compare.main(BASE + ["--switch", "builtin", "--k", "3"])


def test_bmv2_timeout_covers_its_window():
    star = parse_topology("star:4")
    assert ina_timeout_ms(None, 32, 64) == DEFAULT_TIMEOUT_MS
    # star:4, K = 64: 4 x 32 packets of ~1.2 ms: ~156 ms a window, timeout 3 windows
    window = switch_window_ms("bmv2", star, 4, 32, 64)
    assert window == pytest.approx(32 * 4 * bmv2_packet_ms(64))
    assert ina_timeout_ms(None, 32, 64, 0.0, window) == round(3 * window)
    # leafspine:2,1,4 (3 switches): 8 workers' packets and 2 x 2 between the switches
    leafspine = parse_topology("leafspine:2,1,4")
    assert switch_window_ms("bmv2", leafspine, 8, 32, 64) == \
        pytest.approx(32 * 12 * bmv2_packet_ms(64))
    # a slow link's window still wins where it is longer
    assert ina_timeout_ms(1, 32, 1, 0.0, 1.0) == ina_timeout_ms(1, 32, 1)


def test_builtin_timeout_grows_only_for_jobs_of_hundreds_of_workers(monkeypatch):
    """The built-in switch keeps up with the links, but the machine runs every worker and
    switch: at fattree:16 (1,024 workers) a window took longer than the first 100 ms timeout,
    and every packet was resent about four times.  A window's packets at the machine's cost
    per packet (topologies.switches.builtin_packet_ms) cover that, and leave small jobs'
    timeouts (the reliability tests', the lab's) as they were."""
    monkeypatch.setattr(cpu, "cores", lambda: 2)
    star, fattree16 = parse_topology("star:4"), parse_topology("fattree:16")
    assert switch_window_ms("builtin", star, 4, 32, 64) == \
        pytest.approx(32 * 4 * builtin_packet_ms(2))
    for topo, workers in (("star:4", 4), ("leafspine:2,1,4", 8), ("fattree:4", 16)):
        assert job_timeout_ms(parse_topology(topo), "builtin", 256, workers, 32) == \
            DEFAULT_TIMEOUT_MS
    packets = 1024 + 2 * (len(fattree16.switches) - 1)       # 1,662 through switches a round
    assert job_timeout_ms(fattree16, "builtin", 256, 1024, 32) == \
        round(3 * 32 * packets * BUILTIN_PACKET_CPU_MS / 2)
    monkeypatch.setattr(cpu, "cores", lambda: 16)        # more cores, shorter
    assert job_timeout_ms(fattree16, "builtin", 256, 1024, 32) < 200
