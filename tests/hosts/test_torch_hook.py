"""hosts/torch_hook.py and the engine's continuation across allreduces (EngineConfig's
first_versions and chunk_base): many allreduces back to back on one job, through the real
p4src program in the in-process p4switch (`P4Fabric`, tests/hosts/agg_network.py), with
loss, duplication, reordering and packets delivered late into the *next* allreduce; the
hook's bucket handling (uneven sizes, the exact int32 path, the non-finite and dtype
fallbacks) over loopback UDP; and `python -m hosts train` against Gloo over loopback.
No root needed."""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

from agg_network import (LossyNetwork, P4Fabric, REPO, UdpSwitchBridge, float_inputs,
                         int_inputs)
from contracts.wire import worker_port
from hosts import torch_hook
from hosts.ina import quantize
from hosts.ina.engine import AggregationEngine, EngineConfig, make_schedule

SIZES = [1, 7, 8, 9, 63, 130, 5, 200, 16, 33, 2, 77]       # uneven, some under one block


def continued_engines(fabric, inputs, window, state):
    """One allreduce's engines, continuing `state` (per rank: versions, chunk base)."""
    engines = []
    for rank, data in enumerate(inputs):
        versions, base = state[rank]
        engines.append(AggregationEngine(
            make_schedule(data, fabric.k, len(inputs), window),
            EngineConfig(job_id=fabric.plan.job_id, contributor=fabric.contributor(rank),
                         window=window, timeout_s=0.01, max_timeout_s=0.08,
                         first_versions=versions, chunk_base=base)))
    return engines


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("faults", [{}, dict(seed=3, loss=0.1, duplicate=0.1, late=0.15,
                                             reorder=True)])
def test_many_allreduces_back_to_back_through_the_real_program(dtype, faults):
    fabric = P4Fabric("star:3", job_id=11, window=4)
    window, network = 4, None
    state = [((), 0)] * 3
    for i, size in enumerate(SIZES):
        make = int_inputs if dtype == "int32" else float_inputs
        inputs = make(3, size, seed=100 + i)
        engines = continued_engines(fabric, inputs, window, state)
        if network is None:
            network = LossyNetwork(engines, fabric, **faults)
        network.engines = engines      # packets held back stay in flight into this allreduce
        network.run()
        exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
        for engine in engines:
            if dtype == "int32":
                assert engine.result().tolist() == exact.astype(np.int64).tolist()
            else:
                assert np.all(np.abs(engine.result() - exact) <= engine.schedule.error_bound())
        state = [(e.next_versions(), base + e.plan.offset_span)
                 for e, (_, base) in zip(engines, state)]
    assert len({s[0] for s in state}) == 1          # every rank agrees on the slot versions
    if faults:
        assert network.delivered_late > 0


def test_without_continuation_the_switch_answers_with_the_old_sums():
    """Why the continuation exists: a second allreduce that starts again at version 0 and
    offset 0 hits cells whose round is complete with the same offset, and the switch answers
    it as a retransmission, with the first allreduce's sums."""
    fabric = P4Fabric("star:2", job_id=12, window=4)
    first, second = int_inputs(2, 32, seed=1), int_inputs(2, 32, seed=2)
    LossyNetwork(continued_engines(fabric, first, 4, [((), 0)] * 2), fabric).run()
    engines = continued_engines(fabric, second, 4, [((), 0)] * 2)
    LossyNetwork(engines, fabric).run()
    assert engines[0].result().tolist() == np.sum(first, axis=0).tolist()
    assert engines[0].result().tolist() != np.sum(second, axis=0).tolist()


def test_next_versions_and_chunk_base_are_checked():
    schedule = make_schedule(np.zeros(10, np.float32), 4, 2, 4)
    # 3 blocks, window 4: rounds 0-2 (exponents), 4-6 (values) and 8-10 (closing): slots 0-2
    # flip three times
    engine = AggregationEngine(schedule, EngineConfig(job_id=1, contributor=0, window=4,
                                                      first_versions=(1, 0, 0, 1)))
    assert engine.next_versions() == (0, 1, 1, 1)
    assert engine.plan.offset_span == 4 * 4          # the closing rounds' offsets 4, 8, 12
    int_engine = AggregationEngine(make_schedule(np.zeros(9, np.int32), 4, 2, 4),
                                   EngineConfig(job_id=1, contributor=0, window=4))
    assert int_engine.next_versions() == (0, 0, 0, 0)  # rounds 0-2 and closing rounds 4-6
    assert int_engine.plan.offset_span == 16
    with pytest.raises(ValueError, match="first_versions"):
        EngineConfig(job_id=1, contributor=0, window=2, first_versions=(0, 1, 0)).validate()
    with pytest.raises(ValueError, match="32-bit chunk offset"):
        AggregationEngine(make_schedule(np.zeros(9, np.int32), 4, 2, 4),
                          EngineConfig(job_id=1, contributor=0, window=4,
                                       chunk_base=(1 << 32) - 8))


# ---- the hook over loopback UDP ----------------------------------------------------------
class FakeBucket:
    """TEST DOUBLE of torch.distributed.GradBucket: what the hook reads from it."""

    def __init__(self, index, tensor):
        self._index, self._buffer = index, tensor
        self._params = [torch.nn.Parameter(torch.zeros_like(tensor))]

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def parameters(self):
        return self._params


class RecordingGloo:
    """Stands in for Gloo (no process group in these threads): records what fell back and
    returns world x the bucket, which is the sum when every rank holds the same values."""

    def __init__(self, world):
        self.world, self.calls = world, []

    def __call__(self, buffer):
        self.calls.append(buffer.numel())
        return buffer.detach().numpy() * self.world


def run_ranks(world, job, body):
    """body(rank, InaAllreducer) on `world` threads against the real program on star:world."""
    fabric = P4Fabric(f"star:{world}", job_id=job, window=4)
    bridge = UdpSwitchBridge(fabric, world, worker_port(job), drop_every=9)
    bridge.start()
    results, errors = [None] * world, []

    def rank_main(rank):
        allreducer = torch_hook.InaAllreducer(job, fabric.contributor(rank), world,
                                              bridge.address[0], window=4, k=fabric.k,
                                              timeout_s=0.02, switch_port=bridge.address[1],
                                              bind=f"127.0.0.{10 + rank}")
        try:
            results[rank] = body(rank, allreducer)
        except Exception as exc:       # reported below, with the rank
            errors.append((rank, repr(exc)))
        finally:
            allreducer.close()

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    bridge.stop()
    assert not errors, errors
    return results


def test_allreducer_int32_is_exact_many_times_over_udp():
    job = 6000 + os.getpid() % 20000
    inputs = {r: [int_inputs(3, size, seed=10 * i)[r] for i, size in enumerate(SIZES)]
              for r in range(3)}
    results = run_ranks(3, job, lambda rank, a: [a.allreduce(x) for x in inputs[rank]])
    for i in range(len(SIZES)):
        exact = np.sum([inputs[r][i] for r in range(3)], axis=0)
        assert all(results[r][i].tolist() == exact.tolist() for r in range(3))


def hook_bound(locals_, summed, k):
    """Per element, a bound on |world x the hook's output - the float64 sum| (derived from
    hosts/ina/quantize.py): the block floating point bound N 2**(E-S-1) of each block's agreed
    exponent E (the max over ranks of their exponents), the result's rounding to float32
    (u |sum| / (1 - u)), and the division by N in float32 (u |sum| once more, times N / N)."""
    world = len(locals_)
    exponents = np.max([quantize.block_exponents(torch_hook.flagged_vector(x, k)[0]
                                                 .reshape(-1, k)) for x in locals_], axis=0)
    block = np.repeat(quantize.block_error_bound(exponents, world), k)[:len(locals_[0])]
    u = quantize.FLOAT32_UNIT_ROUNDOFF
    return block + (u / (1 - u) + u) * np.abs(summed.astype(np.float64)) * (1 + u)


def test_hook_buckets_of_uneven_sizes_nonfinite_and_other_dtypes():
    job = 7000 + os.getpid() % 20000
    world = 3
    rng = np.random.default_rng(5)
    buckets = [[(rng.standard_normal(size) * 10.0 ** rng.integers(-6, 3)).astype(np.float32)
                for size in SIZES] for _ in range(world)]
    buckets[1][4][2] = np.nan              # bucket 4: a NaN on rank 1 only
    logs = [[] for _ in range(world)]

    def body(rank, allreducer):
        hook = torch_hook.InaHook(allreducer, say=logs[rank].append)
        gloo = RecordingGloo(world)
        hook.gloo_sum = gloo
        out = []
        for i, values in enumerate(buckets[rank]):
            future = torch_hook.comm_hook(hook, FakeBucket(i, torch.from_numpy(values.copy())))
            out.append(future.value().numpy().copy())
        same = torch.full((5,), 2.0, dtype=torch.float64)       # float64: not for the switch
        out.append(torch_hook.comm_hook(hook, FakeBucket(99, same)).value().numpy().copy())
        return out, hook.stats, gloo.calls

    results = run_ranks(world, job, body)
    for rank, (out, stats, calls) in enumerate(results):
        for i, size in enumerate(SIZES):
            if i == 4:
                continue
            total = np.sum([buckets[r][i].astype(np.float64) for r in range(world)], axis=0)
            bound = hook_bound([buckets[r][i] for r in range(world)], out[i] * world, k=8)
            assert np.all(np.abs(out[i] * world - total) <= bound), (rank, i)
        # the NaN bucket went to Gloo on every rank (the flag block is summed exactly)
        assert calls == [SIZES[4], 5]
        # RecordingGloo gave world x the bucket: two float32 roundings (x 3, / 3) away
        assert np.allclose(out[4], buckets[rank][4], rtol=2 * 2.0 ** -23, atol=0,
                           equal_nan=True)
        assert out[-1].tolist() == [2.0] * 5
        assert stats.allreduces == len(SIZES) + 1
        assert stats.fallbacks == {"nonfinite": 1, "dtype": 1}
        assert len(logs[rank]) == 2 and "NaN or infinite" in logs[rank][0]
        assert "float64" in logs[rank][1]
