"""The host-only algorithms as modes of `experiments compare|sweep|plot`: names, worker
commands, link-rate bounds, formula columns and table order."""

import dataclasses
import os
import subprocess
import sys

import pytest

from experiments import aggregate
from contracts.cli import UsageError
from experiments.compare import parse_modes
from jobs.modes import MODES, JobSetup, check_collective
from jobs.results import Run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ("ps", "binomial-tree", "butterfly", "ring", "rabenseifner", "double-binary-tree")


def make_run(mode, seconds, workers):
    return Run(mode=mode, topo="star:5", switch="builtin", job=1, workers=workers,
               elements=40_000, dtype="int32", window=32 if mode == "ina" else None,
               seconds=seconds, melem_per_s=None, gbit_per_s=None, correct=True,
               max_abs_err=0.0, bytes_per_host=None, bytes_received_per_host=None,
               packets_per_host=None, retransmissions=0, bw_mbit=10.0, k=64)


def test_every_algorithm_is_a_mode():
    assert [m.name for m in parse_modes(",".join(NAMES))] == list(NAMES)
    with pytest.raises(UsageError, match="unknown mode 'tree'"):
        parse_modes("ring,tree")


@pytest.mark.parametrize("name", NAMES)
def test_commands_run_hosts_allreduce(name):
    setup = JobSetup(job=3, hosts=("h1", "h2", "h3"),
                     host_ips=("10.0.0.1", "10.0.0.2", "10.0.0.3"), elements=100,
                     dtype="int32", seed=9, window=32, k=64, out_dir="/o", run=1)
    commands = MODES[name].commands(setup, None)
    assert len(commands) == 3
    # the spec's options in its fields' order; defaults (allreduce, int32) left out
    assert commands[2][1:] == ["-m", "hosts", "allreduce", "--algorithm", name,
                               "--rank", "2", "--world", "3", "--peers",
                               "10.0.0.1:21003,10.0.0.2:21003,10.0.0.3:21003",
                               "--elements", "100", "--seed", "9",
                               "--json", f"/o/reports/{name}-run1-job3-rank2.json",
                               "--timeout-s", "33",
                               "--start-barrier", f"/o/barriers/{name}-run1-job3"]
    # the command line parses (the same options the worker processes get)
    from hosts.allreduce import build_parser
    args = build_parser().parse_args(commands[2][4:])
    assert args.algorithm == name and args.world == 3
    assert args.start_barrier == f"/o/barriers/{name}-run1-job3"
    assert args.timeout_s == 33


def test_peers_are_awaited_longer_the_more_ranks_are_launched():
    # 1,024 ranks took 6.5 minutes to launch; the first waits for the last
    from jobs.modes import peer_connect_timeout_s
    assert peer_connect_timeout_s(8) < 40 and peer_connect_timeout_s(1024) > 6.5 * 60 * 2
    # and the launcher waits for them to be ready that much longer than for ina's workers
    from hosts.barrier import GO_WAIT_S
    assert MODES["ina"].ready_within_s(1024) == GO_WAIT_S
    assert MODES["ring"].ready_within_s(1024) == GO_WAIT_S + peer_connect_timeout_s(1024)


def test_link_bounds_of_the_algorithms():
    vector_s = 40_000 * 4 * 8 / 10e6          # one vector at 10 Mbit/s
    expected = {"ps": 2 * 4, "binomial-tree": 2 * 3, "butterfly": 2 + 2, "ring": 2 * 4 / 5,
                "rabenseifner": 2 * 3 / 4 + 2, "double-binary-tree": 2.0}
    for name, vectors in expected.items():     # p = 5: P = 4, one rank folded
        assert aggregate.payload_bound_s(name, 40_000, 5, 10.0) == pytest.approx(
            vectors * vector_s), name
        assert aggregate.wire_bound_s(name, 40_000, 5, 10.0) == pytest.approx(
            vectors * vector_s * 1514 / 1448), name
    assert aggregate.payload_bound_s("gloo", 40_000, 5, 10.0) == \
        aggregate.payload_bound_s("ring", 40_000, 5, 10.0)


def test_summary_rows_carry_the_formula_and_steps_in_mode_order():
    runs = [make_run(mode, 1.0 + i, 5) for i, mode in
            enumerate(("double-binary-tree", "gloo", "ps", "ina", "butterfly"))]
    rows = aggregate.summarize_runs(runs)
    by_mode = {r["mode"]: r for r in rows}
    vector = 40_000 * 4
    assert by_mode["ps"]["formula_bytes_per_host"] == pytest.approx((4 + 1 + 1 + 1 + 1) *
                                                                    vector / 5)
    assert by_mode["ps"]["steps"] == 2 and by_mode["ina"]["steps"] == 1
    assert by_mode["butterfly"]["steps"] == 4          # log2 4 + fold in and out
    assert by_mode["gloo"]["steps"] == 8               # the ring's 2(p-1)
    assert by_mode["ina"]["formula_bytes_per_host"] == vector
    lines = aggregate.markdown_table(rows).splitlines()[2:]
    assert [line.split(" | ")[2] for line in lines] == \
        ["ina", "ps", "butterfly", "double-binary-tree", "gloo"]


def test_plot_with_every_algorithm(tmp_path):
    from jobs import results
    runs = [make_run(mode, 0.5 + i / 10, p) for p in (3, 5) for i, mode in
            enumerate(("ina",) + NAMES)]
    for run in runs:
        run.wire_bytes_per_host = 1.05 * aggregate.formula_bytes_per_host(
            run.mode, run.elements, run.workers)
    results.write_results(str(tmp_path), runs, {})
    result = subprocess.run([sys.executable, "-m", "experiments", "plot", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(os.path.basename(p) for p in result.stdout.split()) == \
        ["bytes_per_host.png", "results.md", "speedup_vs_workers.png", "time_vs_elements.png"]
    table = (tmp_path / "results.md").read_text()
    assert all(f"| {name} |" in table for name in NAMES)


def test_modes_refuse_collectives_they_have_no_version_of():
    """Which modes run which collective, and the one-line reason compare gives otherwise."""
    assert check_collective(MODES["ring"], "reduce-scatter") is None
    assert check_collective(MODES["ring"], "allgather") is None
    assert check_collective(MODES["binomial-tree"], "broadcast") is None
    for collective in ("allreduce", "reduce-scatter", "allgather", "broadcast"):
        assert check_collective(MODES["ina"], collective) is None
    assert check_collective(MODES["ps"], "broadcast") == (
        "ps is not supported for the collective broadcast (modes that run it: ina, "
        "binomial-tree)")
    assert check_collective(MODES["gloo"], "allgather") == (
        "gloo is not supported for the collective allgather (modes that run it: ina, ring)")
    setup = JobSetup(job=1, hosts=("h1", "h2"), host_ips=("10.0.0.1", "10.0.0.2"),
                     elements=10, dtype="int32", seed=1, window=32, k=64, out_dir="/o",
                     collective="reduce-scatter")
    command = MODES["ring"].commands(setup, None)[0]
    assert command[command.index("--collective") + 1] == "reduce-scatter"
    from controller.planner import HostPlan
    plan = type("Plan", (), {"hosts": {h: HostPlan(h, "s1", i + 1, i) for i, h in
                                       enumerate(setup.hosts)}, "window": 32})()
    command = MODES["ina"].commands(setup, plan)[1]
    assert command[command.index("--collective") + 1] == "reduce-scatter"
    assert "--collective" not in MODES["ina"].commands(
        dataclasses.replace(setup, collective="allreduce"), plan)[0]


def test_compare_refuses_an_unsupported_collective_in_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "experiments", "compare", "--topo", "star:2",
                          "--modes", "ring,ps", "--collective", "allgather", "--elements", "10",
                          "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "ps is not supported for the collective allgather (modes that run it: ina, ring)" in \
        run.stderr and "Traceback" not in run.stderr


def test_plot_of_a_collective_names_its_bounds(tmp_path):
    """A reduce-scatter results file (docs/results/collectives) plots with the reduce-scatter
    bound's formula and rows, not the allreduce's."""
    from experiments.plot import bound_label, plot_all
    assert bound_label("ring", "reduce-scatter") == \
        "ring link-rate bound: (p-1)/p·E·4/B + headers"
    assert bound_label("binomial-tree", "broadcast") == \
        "binomial-tree link-rate bound: ⌈log2 p⌉·E·4/B + headers"
    assert bound_label("ring") == "ring link-rate bound: 2(p-1)/p·E·4/B + headers"
    source = os.path.join(REPO, "docs", "results", "collectives", "reduce-scatter")
    written = [os.path.basename(p) for p in plot_all(source, str(tmp_path))]
    assert "time_vs_elements.png" in written and "results.md" in written
    text = (tmp_path / "results.md").read_text()
    assert text.startswith("<!-- measured: ")   # the table names its results file
    table = [line for line in text.splitlines() if line.startswith("|")]
    ina_row, ring_row = table[2:]
    cells = ring_row.split(" | ")
    assert cells[1:3] == ["reduce-scatter", "ring"]
    assert cells[14] == "0.700"          # formula MB sent/host: (p-1)/p of 0.8 MB
    cells = ina_row.split(" | ")
    assert cells[1:3] == ["reduce-scatter", "ina"]
    assert cells[14] == "0.851"          # every chunk with its values, closing rounds header only
