"""Host-only allreduce algorithms (hosts/algorithms/, hosts/schedules.py, hosts/allreduce.py,
hosts/bounds.py): exact int32 sums and bounded float32 sums for N = 1..9 on vectors of awkward lengths, bytes
per rank against the stated formulas, the double binary tree's shape, and the same over
TCP on loopback and through the command line."""

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from hosts import bounds, vectors
from hosts.algorithms import ALGORITHMS
from hosts.algorithms.base import Recv, Send
from hosts.algorithms.double_binary_tree import double_binary_trees
from hosts.allreduce import HostAllreduce, float32_sum_bound
from hosts.schedules import schedule, simulate

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_hosts_ring import free_ports  # noqa: E402

WORLDS = range(1, 10)
LENGTHS = (1, 7, 1009)          # shorter than N, and not divisible by any N > 1 here


def random_int32(seed, world, elements):
    return [vectors.generate(seed, rank, world, elements, np.dtype(np.int32))
            for rank in range(world)]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("world", WORLDS)
def test_int32_sum_is_exact_and_bytes_match_the_formula(algorithm, world):
    for elements in LENGTHS:
        inputs = random_int32(11 + world, world, elements)
        expected = np.sum(inputs, axis=0, dtype=np.int64).tolist()
        outcome = simulate(algorithm, inputs, chunk_elements=64)
        for rank, result in enumerate(outcome.results):
            assert result.dtype == np.int32 and result.tolist() == expected, (elements, rank)
            assert (outcome.bytes_sent[rank], outcome.bytes_received[rank]) == \
                bounds.traffic(algorithm, rank, world, elements), (elements, rank)
        assert not any(outcome.overflow)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("world", WORLDS)
def test_float32_within_the_summation_bound_and_the_same_everywhere(algorithm, world):
    elements = 1001
    dtype = np.dtype(np.float32)
    inputs = [vectors.generate(5, rank, world, elements, dtype) for rank in range(world)]
    outcome = simulate(algorithm, inputs, chunk_elements=100)
    reference = vectors.Reference.from_seed(5, world, elements, dtype)
    bound = float32_sum_bound(world, reference)
    for result in outcome.results:
        assert result.dtype == np.float32
        assert np.all(np.abs(result.astype(np.float64) - reference.total) <= bound)
        assert np.array_equal(result, outcome.results[0])


def test_int32_wraparound_is_reported_as_overflow():
    for algorithm in ALGORITHMS:
        inputs = [np.full(6, 2**30 + 1, np.int32), np.full(6, 2**30, np.int32),
                  np.zeros(6, np.int32)]
        outcome = simulate(algorithm, inputs, chunk_elements=2)
        assert any(outcome.overflow), algorithm
        assert all(r.tolist() == [-2**31 + 1] * 6 for r in outcome.results), algorithm


def table_traffic(algorithm, rank, world, vector):
    """The byte column of hosts/bounds.py's table, for E divisible by every part count."""
    p = 1 << (world.bit_length() - 1)
    log_p = p.bit_length() - 1
    extra = rank + p < world
    if algorithm == "ps":
        return (world - 1) * vector if rank == 0 else vector
    if algorithm == "binomial-tree":
        children = sum(1 for k in range(world.bit_length())
                       if rank % (2 << k) == 0 and rank + (1 << k) < world)
        return (children + (rank > 0)) * vector
    if algorithm == "ring":
        return 2 * (world - 1) * vector // world
    if algorithm in ("butterfly", "rabenseifner", "rabenseifner-nearest") and rank >= p:
        return vector
    if algorithm == "butterfly":
        return (log_p + extra) * vector
    if algorithm in ("rabenseifner", "rabenseifner-nearest"):
        return 2 * (p - 1) * vector // p + extra * vector
    (pa, ca), (pb, cb) = double_binary_trees(world)
    return (len(ca[rank]) + len(cb[rank]) + (pa[rank] is not None) +
            (pb[rank] is not None)) * vector // 2


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_formula_table_for_even_parts(algorithm):
    for world in range(2, 10):
        elements = 2 * 3 * 4 * 5 * 7 * 8 * 9       # divisible by N, P and 2
        for rank in range(world):
            sent, received = bounds.traffic(algorithm, rank, world, elements)
            assert sent == received == table_traffic(algorithm, rank, world, 4 * elements)
        busiest = max(bounds.traffic(algorithm, r, world, elements)[0] for r in range(world))
        # the link bound is at least the busiest host's bytes; the pipelined ones are exactly it
        assert bounds.link_share(algorithm, world) * 4 * elements >= busiest
        if algorithm in ("ring", "double-binary-tree"):
            assert bounds.link_share(algorithm, world) * 4 * elements == busiest


def _interval(ops):
    """The one range [start, stop) that `ops` cover together, each element once."""
    covered = sorted((op.start, op.stop) for op in ops)
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:])), covered
    return covered[0][0], covered[-1][1]


def rabenseifner_exchanges(algorithm, rank):
    """([partner of each halving step, in the order first sent to], {partner: (halving
    sent, halving received, doubling sent, doubling received)}) of 8 ranks, 8 blocks of
    10 elements, one piece a block."""
    ops = schedule(algorithm, rank, 8, 80, 80)
    order, exchanges = [], {}
    for peer in {op.peer for op in ops}:
        sends = [op for op in ops if isinstance(op, Send) and op.peer == peer]
        reduced = [op for op in ops if isinstance(op, Recv) and op.peer == peer and op.reduce]
        stored = [op for op in ops if isinstance(op, Recv) and op.peer == peer and not op.reduce]
        halving = len(sends) // 2          # the same blocks go out, and the kept come back
        exchanges[peer] = (_interval(sends[:halving]), _interval(reduced),
                           _interval(sends[halving:]), _interval(stored))
    for op in ops:
        if isinstance(op, Send) and op.peer not in order:
            order.append(op.peer)
    return order, exchanges


def test_rabenseifner_partner_orders():
    """rabenseifner halves with the rank P/2 away first; rabenseifner-nearest (MPICH's
    order) with the neighbour first, so its largest messages stay between neighbours; the
    all-gather goes back in the reverse order.  The steps overlap (pipelined), so each
    partner's messages are checked as the ranges they cover."""
    assert rabenseifner_exchanges("rabenseifner", 0) == ([4, 2, 1], {
        4: ((40, 80), (0, 40), (0, 40), (40, 80)),
        2: ((20, 40), (0, 20), (0, 20), (20, 40)),
        1: ((10, 20), (0, 10), (0, 10), (10, 20))})
    # rank 3 = 0b011: upper half with 2, upper quarter of that with 1, lower with 4; it
    # ends owning block 6 (0b110, 3 bit-reversed)
    assert rabenseifner_exchanges("rabenseifner-nearest", 3) == ([2, 1, 7], {
        2: ((0, 40), (40, 80), (40, 80), (0, 40)),
        1: ((40, 60), (60, 80), (60, 80), (40, 60)),
        7: ((70, 80), (60, 70), (60, 70), (70, 80))})
    # the largest messages of every rank go to its neighbour r XOR 1 nearest first
    for rank in range(8):
        _, exchanges = rabenseifner_exchanges("rabenseifner-nearest", rank)
        widest = max(exchanges, key=lambda peer: exchanges[peer][0][1] - exchanges[peer][0][0])
        assert widest == rank ^ 1


def test_rabenseifner_sends_on_before_a_step_is_done():
    """Pipelined: rank 0 sends its first piece to its second partner before the last piece
    from its first partner has arrived."""
    ops = schedule("rabenseifner", 0, 8, 8000, 1000)
    first_to_second = next(i for i, op in enumerate(ops) if isinstance(op, Send) and op.peer == 2)
    last_from_first = max(i for i, op in enumerate(ops)
                          if isinstance(op, Recv) and op.peer == 4 and op.reduce)
    assert first_to_second < last_from_first


def test_steps():
    assert [bounds.steps("ps", n) for n in (1, 2, 9)] == [0, 2, 2]
    assert [bounds.steps("binomial-tree", n) for n in (2, 3, 4, 5, 8, 9)] == [2, 4, 4, 6, 6, 8]
    assert [bounds.steps("butterfly", n) for n in (2, 3, 4, 8, 9)] == [1, 3, 2, 3, 5]
    assert [bounds.steps("ring", n) for n in (2, 5)] == [2, 8]
    assert [bounds.steps("rabenseifner", n) for n in (2, 3, 4, 8, 9)] == [2, 4, 4, 6, 8]
    assert [bounds.steps("rabenseifner-nearest", n) for n in (2, 3, 4, 8, 9)] == [2, 4, 4, 6, 8]
    # every step of a step-by-step schedule is one blocking receive on the longest path
    for world in range(2, 10):
        recvs = [sum(isinstance(op, Recv) for op in schedule("butterfly", r, world, 64, 64))
                 for r in range(world)]
        assert max(recvs) == bounds.steps("butterfly", world) - (world & (world - 1) != 0)


@pytest.mark.parametrize("world", range(1, 12))
def test_double_binary_trees(world):
    trees = double_binary_trees(world)
    for parents, children in trees:
        (root,) = [r for r, parent in parents.items() if parent is None]
        assert sorted(c for cs in children.values() for c in cs) == \
            sorted(set(range(world)) - {root})
        assert all(len(cs) <= 2 for cs in children.values())
        for rank, parent in parents.items():      # every rank reaches the root
            seen = 0
            while parent is not None:
                parent, seen = parents[parent], seen + 1
                assert seen < world
    (_, inner_a), (_, inner_b) = trees
    assert not [r for r in range(world) if inner_a[r] and inner_b[r]]
    leaves_in_both = [r for r in range(world) if not inner_a[r] and not inner_b[r]]
    assert len(leaves_in_both) == world % 2


def test_schedules_send_and_receive_matching_amounts():
    """What rank a sends to b equals what b receives from a (so no stream is left with
    bytes, and none waits forever), for every algorithm and N."""
    for algorithm in ALGORITHMS:
        for world in WORLDS:
            ops = [schedule(algorithm, r, world, 37, 5) for r in range(world)]
            for a in range(world):
                for b in range(world):
                    sent = [op.stop - op.start for op in ops[a]
                            if isinstance(op, Send) and op.peer == b]
                    got = [op.stop - op.start for op in ops[b]
                           if isinstance(op, Recv) and op.peer == a]
                    assert sum(sent) == sum(got), (algorithm, world, a, b)


def run_tcp(algorithm, inputs, chunk_bytes, collective="allreduce", copy=True):
    world = len(inputs)
    peers = [("127.0.0.1", port) for port in free_ports(world)]
    members = [HostAllreduce(algorithm, rank, world, peers, chunk_bytes, timeout_s=20,
                             collective=collective)
               for rank in range(world)]
    results, errors = [None] * world, []

    def member(rank):
        try:
            members[rank].connect()
            results[rank] = members[rank].allreduce(inputs[rank], copy=copy)
        except BaseException as exc:   # reported by the assertion below
            errors.append(exc)
        finally:
            members[rank].close()

    threads = [threading.Thread(target=member, args=(rank,)) for rank in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and not any(thread.is_alive() for thread in threads)
    return results, members


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("world", [3, 6])
def test_tcp_loopback_is_exact_and_counts_the_formula(algorithm, world):
    elements = 3001
    inputs = random_int32(3, world, elements)
    results, members = run_tcp(algorithm, inputs, chunk_bytes=1000)
    expected = np.sum(inputs, axis=0, dtype=np.int64).tolist()
    for rank, (result, member) in enumerate(zip(results, members)):
        assert result.tolist() == expected
        assert (member.stats.bytes_sent, member.stats.bytes_received) == \
            bounds.traffic(algorithm, rank, world, elements)


def test_without_a_copy_the_sum_is_made_in_the_caller_s_buffer():
    """The command copies its vector before the clock starts (as Gloo's worker does) and
    sums in that copy: allreduce(copy=False) leaves its result in the array it was given."""
    inputs = random_int32(5, 4, 2000)
    given = [array.copy() for array in inputs]
    results, _ = run_tcp("ring", given, chunk_bytes=512, copy=False)
    expected = np.sum(inputs, axis=0, dtype=np.int64).tolist()
    assert all(result is array and array.tolist() == expected
               for result, array in zip(results, given))
    results, _ = run_tcp("ring", inputs, chunk_bytes=512)        # copy: inputs stay
    assert all(result is not array and np.array_equal(array, fresh)
               for result, array, fresh in zip(results, inputs, random_int32(5, 4, 2000)))
    assert all(result.tolist() == expected for result in results)


def test_allreduce_cli_reports(tmp_path):
    world = 5
    peers = ",".join(f"127.0.0.1:{port}" for port in free_ports(world))
    processes = [subprocess.Popen([sys.executable, "-m", "hosts", "allreduce", "--algorithm",
                                   "rabenseifner", "--rank", str(rank), "--world", str(world),
                                   "--peers", peers, "--elements", "2001", "--dtype", "float32",
                                   "--seed", "4", "--json", str(tmp_path / f"{rank}.json"),
                                   "--output", str(tmp_path / f"{rank}.npy")],
                                  cwd=REPO, stderr=subprocess.PIPE, text=True)
                 for rank in range(world)]
    assert [(p.wait(timeout=60), p.stderr.read()) for p in processes] == [(0, "")] * world
    for rank in range(world):
        report = json.loads((tmp_path / f"{rank}.json").read_text())
        assert report["correct"] is True and report["algorithm"] == "rabenseifner"
        assert (report["bytes_sent"], report["bytes_received"]) == \
            bounds.traffic("rabenseifner", rank, world, 2001)
        assert np.array_equal(np.load(tmp_path / f"{rank}.npy"), np.load(tmp_path / "0.npy"))


def test_allreduce_cli_errors():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "hosts", "allreduce", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
    common = ["--rank", "0", "--world", "2", "--elements", "10", "--seed", "1"]
    bad = run("--algorithm", "tree", *common, "--peers", "a:1,b:2")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "argument --algorithm: invalid choice: 'tree'" in bad.stderr
    missing = run(*common, "--peers", "a:1,b:2")
    assert missing.returncode == 2 and "--algorithm" in missing.stderr
    assert missing.stderr.count("\n") == 1
    silent = run("--algorithm", "butterfly", *common, "--peers", "127.0.0.1:1,127.0.0.1:2",
                 "--timeout-s", "0.3")
    assert silent.returncode == 1 and silent.stderr.count("\n") == 1
    assert "butterfly rank 0: could not connect to rank 1 at 127.0.0.1:2 within 0.3s" in \
        silent.stderr
    assert "Traceback" not in bad.stderr + missing.stderr + silent.stderr


def test_a_rank_ready_early_waits_for_go_as_long_as_its_peers_may_still_connect(
        tmp_path, monkeypatch):
    """At 1,024 ranks the first ones ready waited for go 120 s and gave up while the last
    ones launched were still connecting (each may take --timeout-s): a rank's wait for go
    is the barrier's default plus its peer timeout.  Here the default is 0.3 s and go comes
    1.5 s after both ranks are ready, within 0.3 + 3 s."""
    from hosts import allreduce, barrier
    monkeypatch.setattr(barrier, "GO_WAIT_S", 0.3)
    folder = tmp_path / "barrier"
    folder.mkdir()
    ports = free_ports(2)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    codes, errors = {}, {}

    def rank(r):
        try:
            codes[r] = allreduce.main(
                ["--algorithm", "ring", "--rank", str(r), "--world", "2", "--peers", peers,
                 "--elements", "10", "--dtype", "int32", "--seed", "4", "--timeout-s", "3",
                 "--start-barrier", str(folder), "--json", str(tmp_path / f"r{r}.json")])
        except Exception as exc:      # the one-line RunFailed of a timed-out rank
            errors[r] = str(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while not all((folder / f"ready-{r}").exists() for r in range(2)):
        assert time.monotonic() < deadline and not errors, errors
        time.sleep(0.01)
    time.sleep(1.5)
    (folder / "go").touch()
    for thread in threads:
        thread.join(timeout=20)
    assert errors == {} and codes == {0: 0, 1: 0}
    for r in range(2):
        report = json.loads((tmp_path / f"r{r}.json").read_text())
        assert report["correct"] is True


def test_in_time_order_puts_a_receive_after_the_sends_of_its_time():
    from hosts.algorithms.base import RECEIVE_LAG, in_time_order
    timed = [(0, 1, Recv(1, 0, 4, True)), (RECEIVE_LAG, 0, Send(1, 4, 8)),
             (0, 0, Send(2, 0, 4)), (RECEIVE_LAG, 2, Recv(2, 4, 8, False))]
    # the receives of messages sent at time 0 come at time RECEIVE_LAG, after its sends
    assert in_time_order(timed) == [Send(2, 0, 4), Send(1, 4, 8), Recv(1, 0, 4, True),
                                    Recv(2, 4, 8, False)]


def test_the_double_binary_tree_broadcasts_while_it_still_reduces():
    """Every inner rank receives its first broadcast chunk before its children's last
    chunks: the two halves of the schedule overlap (they used to follow each other)."""
    world, elements = 8, 500_000
    for rank in range(world):
        ops = schedule("double-binary-tree", rank, world, elements, 16384)
        down = [i for i, op in enumerate(ops) if isinstance(op, Recv) and not op.reduce]
        up = [i for i, op in enumerate(ops) if isinstance(op, Recv) and op.reduce]
        if up and down:
            assert down[0] < up[-1], rank


def test_accumulate_wraps_int32_and_says_so_exactly_when_it_does():
    from hosts.schedules import accumulate
    big, small = 2**31 - 1, -2**31
    cases = [([big], [0], False), ([big], [1], True), ([small], [-1], True),
             ([small], [big], False), ([big, 5], [-big, -7], False), ([1, small], [2, small], True)]
    for left, right, wrapped in cases:
        destination = np.array(left, np.int32)
        assert accumulate(destination, np.array(right, np.int32)) is wrapped, (left, right)
        expected = ((np.array(left, np.int64) + right + 2**31) % 2**32 - 2**31).astype(np.int32)
        assert destination.tolist() == expected.tolist()
