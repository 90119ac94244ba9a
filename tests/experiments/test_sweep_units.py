"""Sweep arguments and points, the progress bar, interface counter parsing, and the gloo
mode's skip path (no network needed)."""

import json
import os

import pytest

from jobs import counters
from experiments import progress, sweep
from contracts.cli import UsageError
from experiments.compare import Point
from jobs.modes import GlooMode, JobSetup

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
h1-eth0: 2457678    7840    0    0    0     0          0         0  2453282    7813    0    0    0     0       0          0
"""


def test_sweep_points_and_lists():
    args = sweep.build_parser().parse_args(
        ["--topo", "star:4", "--out", "x", "--elements", "100,200,100", "--workers", "4,2",
         "--repeat", "3", "--modes", "ina,ring"])
    assert args.elements == [100, 200] and args.workers == [4, 2] and args.repeat == 3
    assert sweep.sweep_points(args.workers, args.elements) == \
        [Point(4, 100), Point(4, 200), Point(2, 100), Point(2, 200)]
    assert sweep.sweep_points(None, [5]) == [Point(None, 5)]
    for bad in ("1,x", "0,2", ""):
        with pytest.raises(UsageError, match="--elements"):
            sweep.build_parser().parse_args(["--topo", "star:4", "--out", "x",
                                             "--elements", bad])


def test_sweep_checks_every_point_before_starting(monkeypatch, tmp_path):
    monkeypatch.setattr("os.geteuid", lambda: 0)
    with pytest.raises(UsageError, match="1 job\\(s\\) x 5 workers do not fit on 4 hosts"):
        sweep.main(["--topo", "star:4", "--out", str(tmp_path), "--elements", "10",
                    "--workers", "2,5"])
    assert list(tmp_path.iterdir()) == []


def test_progress_lines():
    assert progress.render(0, 4, 0.0) == \
        "[------------------------] 0/4   0%  elapsed 0:00  left ?"
    assert progress.render(3, 12, 80.0, "ina p=4") == \
        "[######------------------] 3/12  25%  elapsed 1:20  left ~4:00  ina p=4"
    assert progress.render(12, 12, 3725.0) == \
        "[########################] 12/12 100%  elapsed 1:02:05  left ~0:00"
    lines, now = [], iter([10.0, 15.0, 30.0])
    bar = progress.ProgressBar(2, write=lines.append, clock=lambda: next(now))
    bar.advance("a")
    bar.advance("b")
    assert lines == ["[############------------] 1/2  50%  elapsed 0:05  left ~0:05  a",
                     "[########################] 2/2 100%  elapsed 0:20  left ~0:00  b"]


def test_net_dev_and_snapshot_difference(tmp_path):
    table = counters.parse_net_dev(NET_DEV)
    assert table == {"lo": counters.Traffic(100, 100),
                     "h1-eth0": counters.Traffic(tx_bytes=2453282, rx_bytes=2457678)}
    stats = tmp_path / "s1-eth1" / "statistics"
    stats.mkdir(parents=True)
    (stats / "tx_bytes").write_text("5000\n")
    (stats / "rx_bytes").write_text("7000\n")
    assert counters.sysfs_traffic("s1-eth1", root=str(tmp_path)) == counters.Traffic(5000, 7000)
    before = counters.Snapshot({"h1": counters.Traffic(10, 20)}, {"s1-eth1": counters.Traffic(1, 2)})
    after = counters.Snapshot({"h1": counters.Traffic(110, 25)},
                              {"s1-eth1": counters.Traffic(31, 2)})
    assert (after - before).to_dict() == {
        "hosts": {"h1": {"tx_bytes": 100, "rx_bytes": 5}},
        "ports": {"s1-eth1": {"tx_bytes": 30, "rx_bytes": 0}}}


SNMP = ("Ip: Forwarding DefaultTTL\nIp: 1 64\n"
        "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails "
        "EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
        "Tcp: 1 200 120000 -1 56356 24268 30046 9597 0 1581093 1571690 1405 0 38536 0\n"
        "Udp: InDatagrams NoPorts\nUdp: 5 0\n")


def test_tcp_retransmitted_segments_from_snmp(tmp_path):
    assert counters.parse_tcp_retransmitted_segments(SNMP) == 1405
    with pytest.raises(ValueError, match="RetransSegs"):
        counters.parse_tcp_retransmitted_segments("Udp: InDatagrams\nUdp: 5\n")
    # this process's own namespace: a counter that never goes down
    first = counters.namespace_tcp_retransmitted_segments(os.getpid())
    assert 0 <= first <= counters.namespace_tcp_retransmitted_segments(os.getpid())


def test_gloo_unavailable_without_torch(monkeypatch, tmp_path):
    # a Python that cannot import torch: the system interpreter with an empty path
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexec python3 -S -I -c \"import torch\"\n")
    fake.chmod(0o755)
    monkeypatch.setattr("jobs.modes.python_executable", lambda: str(fake))
    reason = GlooMode().unavailable()
    assert reason == f"torch is not installed for {fake} (pip install torch)"


def test_compare_records_skipped_mode(monkeypatch, tmp_path, capsys):
    from experiments.compare import main
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr(GlooMode, "unavailable", lambda self: "torch is not installed")
    with pytest.raises(UsageError, match="no requested mode can run here: "
                                         "gloo: torch is not installed"):
        main(["--topo", "star:2", "--modes", "gloo", "--elements", "10", "--out",
              str(tmp_path)])
    assert capsys.readouterr().err == "compare: gloo skipped: torch is not installed\n"
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["skipped"] == [{"mode": "gloo", "reason": "torch is not installed"}]
    assert document["runs"] == []


def test_gloo_commands():
    setup = JobSetup(job=2, hosts=("h1", "h2"), host_ips=("10.0.0.1", "10.0.0.2"),
                     elements=100, dtype="float32", seed=7, window=32, k=64, out_dir="/o",
                     run=3)
    commands = GlooMode().commands(setup, None)
    assert [c[1:4] for c in commands] == [["-m", "hosts", "gloo"]] * 2
    assert commands[1][4:] == ["--rank", "1", "--world", "2", "--master", "10.0.0.1:23302",
                               "--ifname", "h2-eth0", "--elements", "100", "--dtype", "float32",
                               "--seed", "7", "--json", "/o/reports/gloo-run3-job2-rank1.json"]


def test_tcp_congestion_control_option(monkeypatch, tmp_path):
    from experiments import compare
    allowed = tmp_path / "allowed"
    allowed.write_text("reno bbr\n")
    monkeypatch.setattr(compare, "ALLOWED_TCP_CC", str(allowed))
    compare.check_tcp_cc("bbr")
    compare.check_tcp_cc("system")
    with pytest.raises(UsageError, match="--tcp-cc cubic: network namespaces may use reno, bbr "
                                         "\\(net.ipv4.tcp_allowed_congestion_control\\)"):
        compare.check_tcp_cc("cubic")
    args = compare.build_parser().parse_args(["--topo", "star:2", "--elements", "1",
                                               "--out", "x"])
    assert args.tcp_cc == "reno"


def test_ina_timeout_scales_with_the_link():
    from jobs.modes import InaMode
    from contracts.jobs import ina_timeout_ms
    assert ina_timeout_ms(None, 32, 64) == 100.0
    assert ina_timeout_ms(5.0, 32, 64) == 100.0
    # 32 packets of 314 bytes at 1 Mbit/s: 80.4 ms a window, four windows
    assert ina_timeout_ms(1.0, 32, 64) == 322
    # delayed links: their round trip comes on top
    assert ina_timeout_ms(None, 32, 64, round_trip_ms=88) == 188
    assert ina_timeout_ms(1.0, 32, 64, round_trip_ms=88) == 410
    setup = JobSetup(job=1, hosts=("h1",), host_ips=("10.0.0.1",), elements=10, dtype="int32",
                     seed=1, window=32, k=64, out_dir="/o", timeout_ms=322)

    class Member:
        switch_ip, contributor = "10.0.255.254", 0

    class Plan:
        hosts = {"h1": Member()}
        window = 8                  # the slots the manager installed, not the set-up's 32
    (command,) = InaMode().commands(setup, Plan())
    assert command[command.index("--timeout-ms") + 1] == "322"
    assert command[command.index("--window") + 1] == "8"


def test_compare_without_out_writes_under_results():
    from experiments.compare import build_parser, default_out
    assert build_parser().parse_args(["--topo", "star:4", "--elements", "10"]).out is None
    assert default_out("star:4", "builtin") == "results/star4-builtin"
    assert default_out("leafspine:2,1,4", "bmv2") == "results/leafspine2_1_4-bmv2"
