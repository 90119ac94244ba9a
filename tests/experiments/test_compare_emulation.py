"""End to end: `python -m experiments compare|sweep` on small star and leaf-spine networks:
exact sums, byte counters on the wire, repeats summarized, failures reported."""

import json
import os
import subprocess
import sys

import pytest

from contracts.jobs import default_k

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "topologies"))

from private_netns import interfaces_after, private_network_command  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def run_in_private_network(argv: list, work_dir, timeout: int):
    """Run a command in its own network namespace (so no other network on the machine can
    clash with its interface names or gRPC ports); the namespace is left with only lo."""
    result = subprocess.run(private_network_command(argv, work_dir), cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=timeout)
    assert interfaces_after(work_dir) == ["lo"]
    return result


def test_compare_star2_ina_int32(tmp_path):
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "compare", "--topo", "star:2", "--modes", "ina",
         "--elements", "20000", "--dtype", "int32", "--out", str(out), "--switch", "builtin",
         "--run-timeout", "300"],
        tmp_path, timeout=540)
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads((out / "results.json").read_text())
    (run,) = document["runs"]
    assert (run["mode"], run["topo"], run["workers"], run["elements"], run["dtype"]) == \
        ("ina", "star:2", 2, 20000, "int32")
    assert run["correct"] is True and run["max_abs_err"] == 0
    assert [r["correct"] for r in run["reports"]] == [True, True]
    # no --k: the built-in switch's default K (contracts.jobs.default_k); every worker sent
    # its whole vector, 20000 values in packets of K
    k = run["k"]
    assert k == default_k("builtin") == document["meta"]["k"]
    assert all(r["packets_sent"] >= 20000 // k for r in run["reports"])
    assert "ina" in result.stdout and "yes" in result.stdout
    # what ran, not what was asked for: the switch's C back end and the workers' C engine (CI
    # has gcc: a run that fell back to Python must fail here)
    meta = document["meta"]
    assert (meta["switch_backend_requested"], meta["switch_backends"]) == ("auto", {"s1": "c"})
    assert (run["switch_backend"], run["worker_engines"]) == ("c", {"c": 2})
    # and with how many packet threads (what the switch wrote in its status file; a file
    # without "threads" is from a single-threaded switch), and the kernel's qdiscs on every
    # link: unshaped veths keep their default (noqueue) at the root
    status = json.loads((out / "logs" / "s1.status.json").read_text())
    threads = status.get("threads", 1)
    assert isinstance(threads, int) and threads >= 1
    assert (meta["switch_threads"], run["switch_threads"]) == ({"s1": threads}, str(threads))
    assert sorted(tuple(link["link"]) for link in meta["link_qdiscs"]) == \
        [("h1-eth0", "s1-eth1"), ("h2-eth0", "s1-eth2")]
    assert all(root_qdisc(qdiscs) == "noqueue" for link in meta["link_qdiscs"]
               for qdiscs in link["qdiscs"].values())
    # where and when: the machine's cores and load, the commit
    assert meta["cores"] == os.cpu_count() and len(meta["load_average"]) == 3
    assert meta["git_commit"] and meta["started"]
    # the network is gone: run_in_private_network checked that only lo is left


def root_qdisc(qdiscs: list) -> str:
    """The kind of an interface's root qdisc, from results.json's link_qdiscs."""
    (root,) = [q for q in qdiscs if q.split()[1:2] == ["root"]]
    return root.split()[0]


def test_compare_bad_input_exits_2(tmp_path):
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "compare", "--topo", "star:2", "--modes", "ina",
         "--elements", "100", "--out", str(tmp_path), "--switch", "builtin",
         "--window", "100000"],
        tmp_path, timeout=120)
    assert result.returncode == 2
    # the request's refusal, one line before any network starts (and no traceback)
    assert result.stderr.splitlines() == [
        "error: --window 100000: a job's slots are 1..65535 (the switch counts them in 16 bits)"]


def test_compare_leafspine_ina_and_ring_float32(tmp_path):
    """A two-level reduction tree (leaves and a spine) and the ring baseline over the same
    routes; float32 sums within the workers' own error bounds."""
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "compare", "--topo", "leafspine:2,1,2",
         "--modes", "ina,ring", "--elements", "5000", "--dtype", "float32", "--out", str(out),
         "--switch", "builtin", "--run-timeout", "300"],
        tmp_path, timeout=540)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [(r["mode"], r["workers"], r["correct"]) for r in runs] == \
        [("ina", 4, True), ("ring", 4, True)]
    ina, ring = runs
    assert ina["hosts"] == ["h1", "h2", "h3", "h4"]
    # ina: every packet is a 16-byte header and K values; the vector needs ceil(5000/K)
    # packets (float32 adds the exponent rounds of block floating point on top)
    k = ina["k"]
    assert ina["packets_per_host"] >= -(-5000 // k)
    assert ina["bytes_per_host"] == ina["packets_per_host"] * (16 + k * 4)
    # ring: 2 (N-1)/N of the vector
    assert ring["bytes_per_host"] == 2 * 3 / 4 * 5000 * 4


def test_compare_run_timeout_fails_with_exit_1(tmp_path):
    """Workers still running at --run-timeout are killed; the run is recorded as not correct.
    The links are shaped to 10 Mbit/s so the run cannot finish within the timeout (8 MB: about
    7 s); unshaped, the C worker engine finished it in 1.0 s."""
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "compare", "--topo", "star:2", "--modes", "ina",
         "--elements", "2000000", "--out", str(out), "--switch", "builtin", "--bw", "10",
         "--run-timeout", "1"],
        tmp_path, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert run["correct"] is False and run["seconds"] is None
    assert run["errors"] == ["h1 (rank 0): killed after the run timeout",
                             "h2 (rank 1): killed after the run timeout"]
    assert "NO" in result.stdout
    # the record says how the links were shaped: a tbf at 10 Mbit/s on both ends of each
    for link in json.loads((out / "results.json").read_text())["meta"]["link_qdiscs"]:
        for qdiscs in link["qdiscs"].values():
            assert root_qdisc(qdiscs) == "tbf"
            assert " rate 10Mbit " in next(q for q in qdiscs if q.startswith("tbf root"))


def test_compare_star4_bytes_on_the_wire(tmp_path):
    """ina, ring and gloo on star:4: all correct; the interface
    counters show every host sending about the vector plus headers with ina, and
    2(p-1)/p = 1.5 vectors with the ring, so the ring sends more per host."""
    from jobs import counters
    from jobs.modes import GlooMode
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "compare", "--topo", "star:4",
         "--modes", "ina,ring,gloo", "--elements", "20000", "--dtype", "int32", "--k", "64",
         "--out", str(out), "--switch", "builtin", "--run-timeout", "300"],
        tmp_path, timeout=540)
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads((out / "results.json").read_text())
    runs = {r["mode"]: r for r in document["runs"]}
    # torch is pinned in requirements.txt: gloo must run, never be skipped
    assert GlooMode().unavailable() is None
    assert document["skipped"] == [] and runs["gloo"]["correct"] is True
    ina, ring = runs["ina"], runs["ring"]
    assert ina["correct"] and ring["correct"]
    vector = 20000 * 4
    for run in (ina, ring):
        sent = [run["interface_bytes"]["hosts"][h]["tx_bytes"] for h in run["hosts"]]
        assert run["wire_bytes_per_host"] == sum(sent) / 4
        # a veth's two ends count the same frames: host h<i> is on switch port i; a host's
        # count also has the headers of the segments inside its TCP sends, which the port
        # counts once a send (segmentation offload, jobs/counters.py)
        for i, host in enumerate(run["hosts"], start=1):
            port = run["interface_bytes"]["ports"][f"s1-eth{i}"]
            headers = run["interface_bytes"]["hosts"][host]["tx_bytes"] - port["rx_bytes"]
            assert headers % counters.TCP_SEGMENT_HEADER_BYTES == 0 and headers >= 0
            assert headers == 0 if run is ina else headers > 0
    # ina: ceil(20000/64) packets of 64 values + 58 header bytes, a few retransmissions
    assert 313 * 314 <= ina["wire_bytes_per_host"] < 1.2 * 313 * 314
    # ring: 1.5 vectors of TCP payload in frames, plus the ACKs and a full frame per segment
    # TCP sent again (each report's TCP_INFO count; a busy machine gives a few)
    resent = sum(report["retransmissions"] for report in ring["reports"])
    assert 1.5 * vector * 1514 / 1448 <= ring["wire_bytes_per_host"] < \
        1.2 * 1.5 * vector + resent * 1514 / 4, resent
    assert ring["wire_bytes_per_host"] > ina["wire_bytes_per_host"] > vector
    # ina against the fastest host mode that ran (experiments/baseline.py): baseline.json
    (row,) = json.loads((out / "baseline.json").read_text())["rows"]
    hosts = {mode: runs[mode]["seconds"] for mode in ("ring", "gloo")}
    assert row["best_s"] == min(hosts.values()) and hosts[row["best_mode"]] == row["best_s"]
    assert row["ina_s"] == ina["seconds"]
    assert row["speedup"] == pytest.approx(row["best_s"] / row["ina_s"])


def test_sweep_with_repeats_summarizes(tmp_path):
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "sweep", "--topo", "star:4", "--modes", "ina,ring",
         "--elements", "3000", "--workers", "2,4", "--repeat", "2", "--bw", "20",
         "--out", str(out), "--switch", "builtin", "--run-timeout", "300"],
        tmp_path, timeout=540)
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads((out / "results.json").read_text())
    assert [(r["mode"], r["workers"], r["repeat"], r["correct"]) for r in document["runs"]] == [
        ("ina", 2, 0, True), ("ring", 2, 0, True), ("ina", 2, 1, True), ("ring", 2, 1, True),
        ("ina", 4, 0, True), ("ring", 4, 0, True), ("ina", 4, 1, True), ("ring", 4, 1, True)]
    assert all(r["bw_mbit"] == 20 for r in document["runs"])
    summary = document["summary"]
    assert [(s["mode"], s["workers"], s["runs"]) for s in summary] == \
        [("ina", 2, 2), ("ring", 2, 2), ("ina", 4, 2), ("ring", 4, 2)]
    for s in summary:
        times = sorted(r["seconds"] for r in document["runs"]
                       if (r["mode"], r["workers"]) == (s["mode"], s["workers"]))
        assert (s["min_s"], s["max_s"]) == (times[0], times[1])
        assert s["median_s"] == pytest.approx(sum(times) / 2)
    # the progress bar: one line per run, the last one complete
    bar_lines = [l for l in result.stderr.splitlines() if l.startswith("[")]
    assert len(bar_lines) == 8 and bar_lines[-1].startswith("[" + "#" * 24 + "] 8/8 100%")
