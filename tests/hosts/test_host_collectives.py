"""Host collectives other than allreduce (hosts/schedules.py collective_schedule, hosts/
allreduce.py --collective, hosts/bounds.py): ring reduce-scatter (rank r gets segment r of
the sum), ring allgather (every rank gets every owner's segment), binomial broadcast (every
rank gets rank 0's vector), binomial reduce (rank 0 gets the sum, the others nothing), exact for N = 1..9 on awkward lengths; bytes per rank against
the formulas in the simulation, over TCP on loopback and through the command line; the
unsupported pairs are one-line usage errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from hosts import bounds, vectors
from hosts.allreduce import float32_sum_bound, result_of, shard
from hosts.algorithms.base import block_bounds
from hosts.schedules import COLLECTIVES, SUPPORTED, simulate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_hosts_allreduce import REPO, random_int32, run_tcp  # noqa: E402
from test_hosts_ring import free_ports  # noqa: E402

PAIRS = [(c, a) for c in COLLECTIVES if c != "allreduce" for a in SUPPORTED[c]]


def expected_results(collective, inputs):
    """What every rank must hold, computed here from the inputs independently."""
    world, elements = len(inputs), len(inputs[0])
    edges = [elements * j // world for j in range(world + 1)]      # the same near-equal split
    if collective == "reduce-scatter":
        total = np.sum(inputs, axis=0, dtype=np.int64)
        return [total[edges[r]:edges[r + 1]].tolist() for r in range(world)]
    if collective == "allgather":
        gathered = sum((inputs[j][edges[j]:edges[j + 1]].tolist() for j in range(world)), [])
        return [gathered] * world
    if collective == "reduce":              # rank 0 holds the sum, the others nothing
        return [np.sum(inputs, axis=0, dtype=np.int64).tolist()] + [[]] * (world - 1)
    assert collective == "broadcast"
    return [inputs[0].tolist()] * world


@pytest.mark.parametrize("collective,algorithm", PAIRS)
@pytest.mark.parametrize("world", range(1, 10))
def test_exact_and_bytes_match_the_formula(collective, algorithm, world):
    for elements in (1, 7, 1009):
        inputs = random_int32(17 + world, world, elements)
        outcome = simulate(algorithm, inputs, chunk_elements=50, collective=collective)
        wanted = expected_results(collective, inputs)
        for rank in range(world):
            got = result_of(collective, outcome.results[rank], rank, world)
            assert got.tolist() == wanted[rank], (elements, rank)
            assert (outcome.bytes_sent[rank], outcome.bytes_received[rank]) == \
                bounds.traffic(algorithm, rank, world, elements, 4, collective), (elements, rank)


def test_formula_table_for_even_segments():
    """The closed forms of hosts/bounds.py's second table (E divisible by N)."""
    world, elements = 8, 8000
    vector = 4 * elements
    for rank in range(world):
        assert bounds.traffic("ring", rank, world, elements, 4, "reduce-scatter") == \
            (vector * 7 // 8, vector * 7 // 8)
        assert bounds.traffic("ring", rank, world, elements, 4, "allgather") == \
            (vector * 7 // 8, vector * 7 // 8)
    # binomial tree on 8: rank 0 has children 1, 2, 4; rank 4 has 5, 6; rank 6 has 7
    children = {0: 3, 4: 2, 2: 1, 6: 1}
    for rank in range(world):
        assert bounds.traffic("binomial-tree", rank, world, elements, 4, "broadcast") == \
            (children.get(rank, 0) * vector, (rank > 0) * vector)
        assert bounds.traffic("binomial-tree", rank, world, elements, 4, "reduce") == \
            ((rank > 0) * vector, children.get(rank, 0) * vector)
    assert bounds.steps("binomial-tree", 5, "reduce") == 3
    assert bounds.link_share("binomial-tree", 8, "reduce") == 3.0
    assert bounds.formula("binomial-tree", "reduce") == "⌈log2 p⌉·E·4/B"
    assert bounds.steps("ring", 8, "reduce-scatter") == 7
    assert bounds.steps("binomial-tree", 5, "broadcast") == 3
    assert bounds.link_share("ring", 8, "allgather") == 7 / 8
    assert bounds.link_share("binomial-tree", 5, "broadcast") == 3.0
    with pytest.raises(ValueError, match="ps is not supported for the collective allgather"):
        bounds.traffic("ps", 0, 4, 10, 4, "allgather")


def test_float32_reduce_scatter_within_the_bound_and_copies_exact():
    world, elements = 5, 1001
    dtype = np.dtype(np.float32)
    inputs = [vectors.generate(5, rank, world, elements, dtype) for rank in range(world)]
    reference = vectors.Reference.from_seed(5, world, elements, dtype)
    bound = float32_sum_bound(world, reference)
    outcome = simulate("ring", inputs, chunk_elements=100, collective="reduce-scatter")
    for rank in range(world):
        part = shard(rank, world, elements)
        got = result_of("reduce-scatter", outcome.results[rank], rank, world)
        assert np.all(np.abs(got.astype(np.float64) - reference.total[part]) <= bound[part])
    gathered = simulate("ring", inputs, chunk_elements=100, collective="allgather")
    edges = block_bounds(elements, world)
    for result in gathered.results:
        for j in range(world):
            assert np.array_equal(result[edges[j]:edges[j + 1]], inputs[j][edges[j]:edges[j + 1]])


@pytest.mark.parametrize("collective,algorithm", PAIRS)
def test_tcp_loopback_exact_with_the_formula_bytes(collective, algorithm):
    world, elements = 5, 3001
    inputs = random_int32(3, world, elements)
    results, members = run_tcp(algorithm, inputs, 1000, collective)
    wanted = expected_results(collective, inputs)
    for rank, (result, member) in enumerate(zip(results, members)):
        assert result_of(collective, result, rank, world).tolist() == wanted[rank]
        assert (member.stats.bytes_sent, member.stats.bytes_received) == \
            bounds.traffic(algorithm, rank, world, elements, 4, collective)


@pytest.mark.parametrize("collective,algorithm,dtype", [("reduce-scatter", "ring", "float32"),
                                                        ("allgather", "ring", "int32"),
                                                        ("broadcast", "binomial-tree", "int32"),
                                                        ("reduce", "binomial-tree", "float32")])
def test_cli_verifies_every_rank(tmp_path, collective, algorithm, dtype):
    world, elements = 4, 1003
    peers = ",".join(f"127.0.0.1:{port}" for port in free_ports(world))
    processes = [subprocess.Popen([sys.executable, "-m", "hosts", "allreduce", "--algorithm",
                                   algorithm, "--collective", collective, "--rank", str(rank),
                                   "--world", str(world), "--peers", peers, "--elements",
                                   str(elements), "--dtype", dtype, "--seed", "4",
                                   "--json", str(tmp_path / f"{rank}.json"),
                                   "--output", str(tmp_path / f"{rank}.npy")],
                                  cwd=REPO, stderr=subprocess.PIPE, text=True)
                 for rank in range(world)]
    assert [(p.wait(timeout=60), p.stderr.read()) for p in processes] == [(0, "")] * world
    inputs = [vectors.generate(4, rank, world, elements, vectors.DTYPES[dtype])
              for rank in range(world)]
    for rank in range(world):
        report = json.loads((tmp_path / f"{rank}.json").read_text())
        assert report["correct"] is True and report["collective"] == collective
        assert (report["bytes_sent"], report["bytes_received"]) == \
            bounds.traffic(algorithm, rank, world, elements, 4, collective)
        output = np.load(tmp_path / f"{rank}.npy")
        if collective == "reduce-scatter":       # the shard only, within the sum's bound
            assert len(output) == len(range(elements)[shard(rank, world, elements)])
        elif collective == "reduce":             # float32: the root's sum within the bound
            assert len(output) == (elements if rank == 0 else 0)
            reference = vectors.Reference.from_seed(4, world, elements, np.dtype(np.float32))
            total = np.sum([x.astype(np.float64) for x in inputs], axis=0)
            bound = float32_sum_bound(world, reference)
            assert rank > 0 or np.all(np.abs(output.astype(np.float64) - total) <= bound)
        else:
            assert output.tolist() == expected_results(collective, inputs)[rank]


def test_cli_refuses_unsupported_pairs_in_one_line():
    run = subprocess.run([sys.executable, "-m", "hosts", "allreduce", "--algorithm", "ring",
                          "--collective", "broadcast", "--rank", "0", "--world", "2",
                          "--peers", "127.0.0.1:1,127.0.0.1:2", "--elements", "10", "--seed", "1"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "ring is not supported for the collective broadcast (supported: binomial-tree)" \
        in run.stderr and "Traceback" not in run.stderr
