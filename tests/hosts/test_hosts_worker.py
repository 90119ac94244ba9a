"""The worker's protocol engine (hosts/ina/engine.py) and its UDP transport (hosts/ina/worker.py).

The switch here is `ReferenceSwitch`, a TEST DOUBLE: a plain-Python model of the switch
side of docs/design.md's protocol (tests/hosts/agg_network.py).  It is not the real p4src
program; the last tests of this file drive the engines through the real p4src program in
the in-process p4switch (`P4Fabric`), with the same fault injection (`LossyNetwork`: loss,
duplication, reordering, arbitrarily late delivery), at P4_K and at the largest AGG_K.
"""

import json
import os

import numpy as np
import pytest

from agg_network import (INT32_MAX, LossyNetwork, P4Fabric, P4_K, ReferenceSwitch,
                         UdpSwitchBridge, assert_within_float_bound, float_inputs, int_inputs,
                         make_engines, p4_engines, run_job, run_workers, worker_command)
from hosts.ina import quantize
from hosts.ina.engine import (AggregationEngine, AggregationStalled, BlockFloatSchedule,
                          EngineConfig, Int32Schedule, make_schedule)
from contracts.wire import MSG_CONTRIBUTION, MSG_RESULT, SWITCH_K_VALUES, worker_port
from hosts.ina.protocol import AggHeader, AggPacket, ProtocolError


# ---- the engine ---------------------------------------------------------------------------
def test_first_packets_and_slot_reuse_follow_the_design():
    data = np.arange(20, dtype=np.int32)
    engine = make_engines([data, data], k=4, window=2)[0]
    first = [AggPacket.unpack(p) for p in engine.start(0.0)]
    assert [(p.header.slot, p.header.version, p.header.chunk_offset) for p in first] == [(0, 0, 0), (1, 0, 4)]
    assert all(p.header.msg_type == MSG_CONTRIBUTION and p.header.job_id == 3 and
               p.header.contributor == 0 and p.header.num_elements == 4 for p in first)
    assert first[1].values.tolist() == [4, 5, 6, 7]
    result = AggHeader(msg_type=MSG_RESULT, version=0, job_id=3, slot=0, contributor=1,
                       chunk_offset=0, num_elements=4)
    follow_up = engine.on_packet(AggPacket(result, np.array([0, 2, 4, 6], np.int32)).pack(), 0.001)
    (next_packet,) = [AggPacket.unpack(p) for p in follow_up]
    # chunk 2 reuses slot 0 with the other version
    assert (next_packet.header.slot, next_packet.header.version, next_packet.header.chunk_offset) == (0, 1, 8)
    assert next_packet.values.tolist() == [8, 9, 10, 11]


def test_stale_and_foreign_results_are_ignored():
    data = np.arange(8, dtype=np.int32)
    engine = make_engines([data, data], k=4, window=1)[0]
    engine.start(0.0)
    base = dict(msg_type=MSG_RESULT, version=0, job_id=3, slot=0, contributor=0,
                chunk_offset=0, num_elements=4)
    values = np.full(4, 99, np.int32)
    for wrong in ({"version": 1}, {"job_id": 4}, {"chunk_offset": 4}, {"msg_type": MSG_CONTRIBUTION},
                  {"slot": 1}):
        assert engine.on_packet(AggPacket(AggHeader(**{**base, **wrong}), values).pack(), 0.0) == []
    assert engine.on_packet(b"short", 0.0) == []
    assert engine.stats.packets_ignored == 6 and engine.progress == (0, 3)   # 2 + closing
    engine.on_packet(AggPacket(AggHeader(**base), values).pack(), 0.0)
    assert engine.progress == (1, 3)


@pytest.mark.parametrize("elements,window", [(1, 4), (37, 4), (64, 16), (200, 3)])
def test_int32_sum_is_exact_without_faults(elements, window):
    inputs = int_inputs(3, elements)
    engines = run_job(inputs, window=window)
    expected = np.sum(inputs, axis=0, dtype=np.int64)
    chunks = -(-elements // 8)
    for engine in engines:
        assert engine.result().tolist() == expected.tolist()
        # one closing round per slot that is used
        assert engine.stats.packets_sent == chunks + min(chunks, window)
        assert engine.stats.retransmissions == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_int32_sum_is_exact_with_loss_duplication_reordering_and_late_packets(seed):
    inputs = int_inputs(4, 300, seed)
    engines = run_job(inputs, window=5, seed=seed, loss=0.2, duplicate=0.1, late=0.1, reorder=True)
    expected = np.sum(inputs, axis=0, dtype=np.int64)
    for engine in engines:
        assert engine.result().tolist() == expected.tolist()
    assert sum(engine.stats.retransmissions for engine in engines) > 0
    assert sum(engine.stats.packets_ignored for engine in engines) > 0


@pytest.mark.parametrize("elements,window", [(5, 4), (100, 4), (96, 12), (300, 7)])
def test_float32_block_sum_within_bound_and_packet_count(elements, window):
    inputs = float_inputs(3, elements)
    engines = run_job(inputs, window=window)
    blocks = -(-elements // 8)
    results = [engine.result() for engine in engines]
    for engine, result in zip(engines, results):
        assert_within_float_bound(engine, inputs)
        assert np.array_equal(result, results[0])        # every worker has the same bits
        # piggy-backed exponents: one exponent-only round per slot that is used, and one
        # closing round
        assert engine.stats.packets_sent == blocks + 2 * min(blocks, window)


@pytest.mark.parametrize("seed", [4, 5])
def test_float32_with_faults(seed):
    inputs = float_inputs(5, 250, seed)
    engines = run_job(inputs, window=3, seed=seed, loss=0.15, duplicate=0.1, late=0.1, reorder=True)
    for engine in engines:
        assert_within_float_bound(engine, inputs)
    assert sum(engine.stats.retransmissions for engine in engines) > 0


def test_float32_agreed_exponents_are_the_max_over_workers():
    inputs = float_inputs(3, 64, seed=9)
    engines = run_job(inputs, window=2)
    blocks = [quantize.block_exponents(x.reshape(-1, 8)) for x in inputs]
    expected = np.max(blocks, axis=0)
    for engine in engines:
        assert engine.schedule._agreed.tolist() == expected.tolist()


def test_saturating_switch_sets_overflow():
    inputs = [np.full(8, 2**30 + 5, np.int32), np.full(8, 2**30, np.int32)]
    engines = run_job(inputs)
    for engine in engines:
        assert engine.stats.overflow
        assert engine.result().tolist() == [INT32_MAX] * 8


def test_switch_that_never_answers_stalls_with_a_message():
    engine = make_engines(int_inputs(2, 16), window=2, max_retries=3)[0]
    now = 0.0
    engine.start(now)
    with pytest.raises(AggregationStalled, match=r"job 3: no result from the switch for slot 0 "
                                                 r"\(chunk 0, chunk offset 0, version 0\) after 3 "
                                                 r"retransmissions over 0.2s; a worker of the job "
                                                 r"may have died or never started"):
        for _ in range(100):
            now = engine.next_deadline()
            engine.on_timer(now)
    # backoff 0.01, 0.02, 0.04, then 0.08 before giving up
    assert now == pytest.approx(0.15)
    assert engine.stats.retransmissions == 6


def test_timeout_follows_the_measured_round_trip():
    data = np.arange(32, dtype=np.int32)
    engine = make_engines([data, data], k=8, window=1)[0]
    engine.start(0.0)
    assert engine.next_deadline() == pytest.approx(0.01)      # the configured minimum

    def answer(offset, now):
        header = AggHeader(msg_type=MSG_RESULT, version=(offset // 8) % 2, job_id=3, slot=0,
                           contributor=1, chunk_offset=offset, num_elements=8)
        return engine.on_packet(AggPacket(header, np.zeros(8, np.int32)).pack(), now)

    answer(0, 0.005)                    # rtt 5 ms: srtt 5 ms, rttvar 2.5 ms -> 15 ms
    assert engine.next_deadline() == pytest.approx(0.005 + 0.015)
    engine.on_timer(0.020)              # retransmitted: this round is not sampled
    assert engine.next_deadline() == pytest.approx(0.020 + 0.030)
    answer(8, 0.040)
    assert engine.next_deadline() == pytest.approx(0.040 + 0.015)
    answer(16, 0.041)                   # rtt 1 ms: srtt 4.5 ms, rttvar 2.875 ms -> 16 ms
    assert engine.next_deadline() == pytest.approx(0.041 + 0.0045 + 4 * 0.002875)
    assert engine.timer.timeout <= 0.08                        # capped by max_timeout_s


def test_exponent_below_own_is_a_protocol_error():
    data = np.full(8, 100.0, np.float32)
    engine = make_engines([data, data], window=1)[0]
    (packet,) = [AggPacket.unpack(p) for p in engine.start(0.0)]
    assert packet.header.exponent == 127 + 7    # 100 < 2**7
    result = AggHeader(msg_type=MSG_RESULT, version=0, job_id=3, slot=0, contributor=0,
                       chunk_offset=0, num_elements=8, exponent=127)
    with pytest.raises(ProtocolError, match="below this worker's 134"):
        engine.on_packet(AggPacket(result, np.zeros(8, np.int32)).pack(), 0.0)


def test_bad_configuration_is_rejected():
    schedule = Int32Schedule(np.zeros(4, np.int32), 4)
    with pytest.raises(ValueError, match="contributor must be in 0..63"):
        AggregationEngine(schedule, EngineConfig(job_id=0, contributor=64))
    with pytest.raises(ValueError, match="--window 0: a job's slots are 1..65535"):
        AggregationEngine(schedule, EngineConfig(job_id=0, contributor=0, window=0))
    with pytest.raises(ValueError, match=r"--window 65536: a job's slots are 1\.\.65535"):
        AggregationEngine(schedule, EngineConfig(job_id=0, contributor=0, window=65536))
    with pytest.raises(ValueError, match="unsupported dtype"):
        make_schedule(np.zeros(4, np.float64), 4, 2, 2)
    assert isinstance(make_schedule(np.zeros(4, np.float32), 4, 2, 2), BlockFloatSchedule)


# ---- worker processes over loopback UDP ---------------------------------------------------
def assert_succeeded(outcomes, world):
    """Every worker exited 0; stderr holds at most progress lines (slow machines)."""
    assert [status for status, _ in outcomes] == [0] * world, outcomes
    for _, stderr in outcomes:
        assert all(" rounds (" in line for line in stderr.splitlines()), stderr


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_workers_over_loopback_udp(tmp_path, dtype):
    job, world = 5000 + os.getpid() % 20000, 3
    switch = UdpSwitchBridge(ReferenceSwitch(job_id=job, fan_in=world, window=4, k=16), world,
                             worker_port(job), drop_every=7)
    switch.start()
    try:
        outcomes = run_workers([worker_command(job, rank, world, switch.address,
                                               "--elements", "1000", "--dtype", dtype,
                                               "--seed", "11",
                                               "--json", str(tmp_path / f"r{rank}.json"),
                                               "--output", str(tmp_path / f"r{rank}.npy"))
                                for rank in range(world)])
    finally:
        switch.stop()
    assert_succeeded(outcomes, world)
    from hosts.vectors import Reference
    reference = Reference.from_seed(11, world, 1000, np.dtype(dtype))
    for rank in range(world):
        report = json.loads((tmp_path / f"r{rank}.json").read_text())
        assert report["correct"] is True and report["overflow"] is False
        assert (report["job"], report["rank"], report["world"], report["dtype"]) == (job, rank, world, dtype)
        assert report["packets_sent"] == (report["retransmissions"] + report["redone_rounds"]
                                          + (63 if dtype == "int32" else 67) + 4)   # closing
        assert report["bytes_sent"] == report["packets_sent"] * (16 + 4 * 16)
        assert report["packets_received"] >= 63
        result = np.load(tmp_path / f"r{rank}.npy")
        if dtype == "int32":
            assert result.tolist() == reference.total.tolist()
        else:
            assert np.abs(result - reference.total).max() == report["max_abs_err"]
            assert 0 < report["max_abs_err"] <= report["error_bound"]
    assert sum(json.loads((tmp_path / f"r{r}.json").read_text())["retransmissions"]
               for r in range(world)) > 0


# ---- the real p4src program in the in-process p4switch ------------------------------------
@pytest.mark.parametrize("topology", ["star:3", "leafspine:2,1,2"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_workers_through_the_real_p4_program(topology, dtype):
    fabric = P4Fabric(topology, job_id=7, window=4)
    world = len(fabric.hosts)
    make = int_inputs if dtype == "int32" else float_inputs
    inputs = make(world, 90, seed=21)
    engines = p4_engines(fabric, inputs, window=4)
    LossyNetwork(engines, fabric).run()
    for engine in engines:
        assert engine.stats.retransmissions == 0
        if dtype == "int32":
            assert engine.result().tolist() == np.sum(inputs, axis=0, dtype=np.int64).tolist()
        else:
            assert_within_float_bound(engine, inputs)


@pytest.mark.parametrize("topology", ["star:4", "leafspine:2,1,2"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_real_p4_program_with_loss_duplication_and_reordering(topology, dtype):
    fabric = P4Fabric(topology, job_id=9, window=3)
    make = int_inputs if dtype == "int32" else float_inputs
    inputs = make(len(fabric.hosts), 120, seed=22)
    engines = p4_engines(fabric, inputs, window=3)
    LossyNetwork(engines, fabric, seed=5, loss=0.15, duplicate=0.1, late=0.1, reorder=True).run()
    for engine in engines:
        if dtype == "int32":
            assert engine.result().tolist() == np.sum(inputs, axis=0, dtype=np.int64).tolist()
        else:
            assert_within_float_bound(engine, inputs)
    assert sum(engine.stats.retransmissions for engine in engines) > 0
    assert sum(engine.stats.packets_ignored for engine in engines) > 0


@pytest.mark.parametrize("topology", ["star:2", "leafspine:2,1,1"])
def test_real_p4_program_reports_saturation(topology):
    fabric = P4Fabric(topology, job_id=4, window=2)
    inputs = [np.full(10, 2**30 + 5, np.int32), np.full(10, 2**30, np.int32)]
    engines = p4_engines(fabric, inputs, window=2)
    LossyNetwork(engines, fabric).run()
    for engine in engines:
        assert engine.stats.overflow
        assert engine.result().tolist() == [INT32_MAX] * 10


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_worker_processes_over_udp_through_the_real_p4_program(tmp_path, dtype):
    job = 5000 + os.getpid() % 20000
    fabric = P4Fabric("star:3", job_id=job, window=4)
    bridge = UdpSwitchBridge(fabric, 3, worker_port(job), drop_every=5)
    bridge.start()
    try:
        outcomes = run_workers([worker_command(job, rank, 3, bridge.address, "--elements", "500",
                                               "--dtype", dtype, "--seed", "3", "--contributor",
                                               str(fabric.contributor(rank)),
                                               "--json", str(tmp_path / f"r{rank}.json"), k=P4_K)
                                for rank in range(3)])
    finally:
        bridge.stop()
    assert_succeeded(outcomes, 3)
    reports = [json.loads((tmp_path / f"r{rank}.json").read_text()) for rank in range(3)]
    assert all(r["correct"] is True and r["overflow"] is False for r in reports)
    assert sum(r["retransmissions"] for r in reports) > 0


@pytest.mark.parametrize("collective", ["reduce-scatter", "allgather", "broadcast"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_worker_processes_run_the_other_collectives_through_the_real_p4_program(
        tmp_path, collective, dtype):
    """`hosts worker --collective`: four processes over UDP through p4src on a leaf-spine
    (with loss); every rank's result checked against vectors.collective_reference."""
    job = 5000 + (os.getpid() + 7) % 20000
    fabric = P4Fabric("leafspine:2,1,2", job_id=job, window=4)
    bridge = UdpSwitchBridge(fabric, 4, worker_port(job), drop_every=7)
    bridge.start()
    try:
        outcomes = run_workers([worker_command(job, rank, 4, bridge.address, "--elements", "301",
                                               "--dtype", dtype, "--seed", "5", "--contributor",
                                               str(fabric.contributor(rank)), "--collective",
                                               collective, "--output",
                                               str(tmp_path / f"r{rank}.npy"),
                                               "--json", str(tmp_path / f"r{rank}.json"), k=P4_K)
                                for rank in range(4)])
    finally:
        bridge.stop()
    assert_succeeded(outcomes, 4)
    reports = [json.loads((tmp_path / f"r{rank}.json").read_text()) for rank in range(4)]
    assert all(r["correct"] is True and r["collective"] == collective for r in reports)
    from hosts import vectors
    for rank in range(4):
        reference = vectors.collective_reference(collective, 5, rank, 4, 301, np.dtype(dtype))
        saved = np.load(tmp_path / f"r{rank}.npy")
        assert len(saved) == len(reference.total) == (301 if collective != "reduce-scatter"
                                                      else len(range(*vectors.shard_bounds(
                                                          rank, 4, 301))))
        if dtype == "int32" or collective != "reduce-scatter":
            assert saved.astype(np.float64).tolist() == reference.total.astype(
                np.float64).tolist()


# ---- the real p4src program at its largest AGG_K ------------------------------------------
LARGE_K = max(SWITCH_K_VALUES)     # 256: a 1082-byte frame


@pytest.mark.parametrize("topology", ["star:3", "leafspine:2,1,2"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_engines_through_the_real_p4_program_at_the_largest_k(topology, dtype):
    fabric = P4Fabric(topology, job_id=6, window=3, k=LARGE_K)
    world = len(fabric.hosts)
    make = int_inputs if dtype == "int32" else float_inputs
    inputs = make(world, 5 * LARGE_K + 17, seed=23)    # a short last chunk, zero-padded
    engines = p4_engines(fabric, inputs, window=3)
    LossyNetwork(engines, fabric, seed=8, loss=0.1, duplicate=0.1, late=0.1,
                 reorder=True).run()
    for engine in engines:
        if dtype == "int32":
            assert engine.result().tolist() == np.sum(inputs, axis=0, dtype=np.int64).tolist()
        else:
            assert_within_float_bound(engine, inputs)
    assert sum(engine.stats.retransmissions for engine in engines) > 0


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_worker_processes_with_k_256_through_the_real_p4_program(tmp_path, dtype):
    job = 5000 + (os.getpid() + 1) % 20000
    fabric = P4Fabric("star:3", job_id=job, window=4, k=LARGE_K)
    bridge = UdpSwitchBridge(fabric, 3, worker_port(job), drop_every=5)
    bridge.start()
    try:
        outcomes = run_workers([worker_command(job, rank, 3, bridge.address, "--elements", "3000",
                                               "--dtype", dtype, "--seed", "4", "--contributor",
                                               str(fabric.contributor(rank)),
                                               "--json", str(tmp_path / f"r{rank}.json"),
                                               k=LARGE_K)
                                for rank in range(3)])
    finally:
        bridge.stop()
    assert_succeeded(outcomes, 3)
    reports = [json.loads((tmp_path / f"r{rank}.json").read_text()) for rank in range(3)]
    assert all(r["correct"] is True and r["overflow"] is False for r in reports)
    assert all(r["k"] == LARGE_K for r in reports)
    assert all(r["bytes_sent"] == r["packets_sent"] * (16 + 4 * LARGE_K) for r in reports)
    assert sum(r["retransmissions"] for r in reports) > 0
