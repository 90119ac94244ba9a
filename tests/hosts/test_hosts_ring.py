"""Ring allreduce over TCP on loopback (hosts/ring.py): schedule, sums, CLI reports."""

import json
import os
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

from hosts import vectors
from hosts.ring import RingAllreduce, float32_ring_bound, parse_peers, ring_plan

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_ports(count):
    """Ports the kernel picked as free just now (bound, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def run_ring(inputs, chunk_bytes):
    world = len(inputs)
    peers = [("127.0.0.1", port) for port in free_ports(world)]
    members = [RingAllreduce(rank, world, peers, chunk_bytes=chunk_bytes, timeout_s=20)
               for rank in range(world)]
    results, errors = [None] * world, []

    def member(rank):
        try:
            members[rank].connect()
            results[rank] = members[rank].allreduce(inputs[rank])
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


def test_plan_sends_each_segment_after_receiving_it():
    plan = ring_plan(rank=1, world=3, elements=10, chunk_elements=2)
    # segments [0,3) [3,6) [6,10); reduce-scatter step 0 sends segment 1, receives segment 0
    assert [(s.start, s.stop, dep) for s, dep in plan.sends] == [
        (3, 5, -1), (5, 6, -1),            # step 0: own segment 1, right away
        (0, 2, 0), (2, 3, 1),              # step 1: segment 0, after receiving it in step 0
        (6, 8, 2), (8, 10, 3),             # all-gather step 0: segment 2, now fully reduced
        (3, 5, 4), (5, 6, 5)]              # all-gather step 1: segment 1 as received
    assert [(s.start, s.stop, reduce) for s, reduce in plan.receives] == [
        (0, 2, True), (2, 3, True), (6, 8, True), (8, 10, True),
        (3, 5, False), (5, 6, False), (0, 2, False), (2, 3, False)]


@pytest.mark.parametrize("world", [2, 3, 5, 8])
def test_int32_ring_is_exact(world):
    elements = 1001
    inputs = [vectors.generate(7, rank, world, elements, np.dtype(np.int32)) for rank in range(world)]
    results, members = run_ring(inputs, chunk_bytes=64)
    expected = np.sum(inputs, axis=0, dtype=np.int64)
    for result, member in zip(results, members):
        assert result.dtype == np.int32 and result.tolist() == expected.tolist()
        assert not member.stats.overflow
        # each rank sends and receives 2 (N-1) segments: about 2 (N-1)/N of the vector
        assert member.stats.bytes_sent == sum(4 * (s.stop - s.start) for s, _ in
                                              ring_plan(member.rank, world, elements, 16).sends)
    assert sum(m.stats.bytes_received for m in members) == 2 * (world - 1) * elements * 4


@pytest.mark.parametrize("world", [2, 3, 5, 8])
def test_float32_ring_within_summation_bound(world):
    elements = 777
    dtype = np.dtype(np.float32)
    inputs = [vectors.generate(3, rank, world, elements, dtype) for rank in range(world)]
    results, _ = run_ring(inputs, chunk_bytes=100)
    reference = vectors.Reference.from_seed(3, world, elements, dtype)
    bound = float32_ring_bound(world, reference)
    for result in results:
        assert result.dtype == np.float32
        assert np.all(np.abs(result - reference.total) <= bound)
        assert np.array_equal(result, results[0])      # all-gather copies the same bits


def test_int32_wraparound_is_reported_as_overflow():
    inputs = [np.full(6, 2**30 + 1, np.int32), np.full(6, 2**30, np.int32)]
    results, members = run_ring(inputs, chunk_bytes=8)
    assert all(m.stats.overflow for m in members)
    assert results[0].tolist() == [-2**31 + 1] * 6


def test_single_rank_needs_no_peers():
    member = RingAllreduce(0, 1, [("127.0.0.1", 1)])
    member.connect()
    assert member.allreduce(np.arange(5, dtype=np.int32)).tolist() == [0, 1, 2, 3, 4]


def test_peers_from_file_and_list(tmp_path):
    path = tmp_path / "peers.txt"
    path.write_text("# ring\n10.0.0.1:7000\n\n10.0.0.2:7001  # second\n")
    assert parse_peers(str(path), 2) == [("10.0.0.1", 7000), ("10.0.0.2", 7001)]
    assert parse_peers("a:1,b:2,c:3", 3) == [("a", 1), ("b", 2), ("c", 3)]


def test_ring_cli_reports(tmp_path):
    world = 3
    peers = ",".join(f"127.0.0.1:{port}" for port in free_ports(world))
    processes = [subprocess.Popen([sys.executable, "-m", "hosts", "ring", "--rank", str(rank),
                                   "--world", str(world), "--peers", peers, "--elements", "5000",
                                   "--dtype", "float32", "--seed", "2", "--chunk-bytes", "1024",
                                   "--json", str(tmp_path / f"{rank}.json")],
                                  cwd=REPO, stderr=subprocess.PIPE, text=True)
                 for rank in range(world)]
    assert [(p.wait(timeout=60), p.stderr.read()) for p in processes] == [(0, "")] * world
    reports = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(world)]
    for rank, report in enumerate(reports):
        assert report["correct"] is True and report["rank"] == rank
        assert 0 <= report["max_abs_err"] < 1e-5
        # kernel TCP_INFO count (loopback can retransmit under load, so no exact value)
        assert isinstance(report["retransmissions"], int) and report["retransmissions"] >= 0
        # 2 (N-1) segments of 1666 or 1667 float32 values each
        assert abs(report["bytes_sent"] - 2 * 2 * 5000 * 4 / 3) <= 16
    # every segment travels N-1 hops in each phase
    assert sum(r["bytes_sent"] for r in reports) == 2 * (world - 1) * 5000 * 4
    assert sum(r["bytes_received"] for r in reports) == 2 * (world - 1) * 5000 * 4


def test_a_refused_connect_is_retried_with_growing_pauses(monkeypatch):
    """Ranks connect to peers that may not be listening yet; at 1,024 ranks, retries every
    50 ms flooded the emulated switches with SYNs and resets.  The pauses double (with
    jitter) up to 1 s: over 3 s about 7 attempts instead of 60, then a one-line error."""
    import time

    from hosts import cli, transport
    attempts = []

    def refuse(address, timeout=None):
        attempts.append(time.monotonic())
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(transport.socket, "create_connection", refuse)
    link = transport.Transport(0, [("127.0.0.1", 1), ("127.0.0.1", 2)], [1], "ring rank 0",
                               timeout_s=3.0)
    with pytest.raises(cli.RunFailed, match=r"^ring rank 0: could not connect to rank 1 at "
                                            r"127.0.0.1:2 within 3s$"):
        link.connect()
    assert 5 <= len(attempts) <= 12, len(attempts)
    pauses = [b - a for a, b in zip(attempts, attempts[1:])]
    assert max(pauses) <= transport.CONNECT_RETRY_MAX_S + 0.5
    assert pauses[-1] > 4 * transport.CONNECT_RETRY_FIRST_S
