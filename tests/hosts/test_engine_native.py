"""The C engine (hosts/ina/engine_native.c) against the reference engine (hosts/ina/engine.py).

`Twin` drives both with the same packets at the same virtual times and asserts after every
call that they sent the same bytes, in the same order, and agree on every counter, the next
deadline and the retransmission timer.  The runs go through `LossyNetwork` and the
`ReferenceSwitch` TEST DOUBLE (tests/hosts/agg_network.py): loss, duplicates, late and
reordered packets, stale results, retransmissions, redone rounds, stalls.  The sums come
out exact, and the same in both.  Then the C data loop itself (`run_socket`) runs real
workers over loopback UDP, and the engine runs under AddressSanitizer and UBSan.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import nativebuild
from agg_network import REPO, LossyNetwork, ReferenceSwitch, float_inputs, int_inputs
from hosts.ina import engine_native
from hosts.ina.engine import (AggregationEngine, AggregationStalled, EngineConfig, make_schedule)
from hosts.ina.protocol import AggHeader, AggPacket, ProtocolError
from contracts.wire import MSG_RESULT

pytestmark = pytest.mark.requires(missing=engine_native.unavailable_reason() and
                                 f"no C engine: {engine_native.unavailable_reason()}")


def timer_state(engine):
    timer = engine.timer
    return timer.srtt, timer.rttvar, timer.timeout


class Twin:
    """The reference and the C engine side by side: every call goes to both, and what they
    return and report afterwards must be identical."""

    def __init__(self, data, k, world, window, config):
        self.reference = AggregationEngine(make_schedule(data, k, world, window), config)
        self.native = engine_native.NativeEngine(make_schedule(data, k, world, window), config)
        self.calls = 0

    def _both(self, name, *args):
        self.calls += 1
        outcomes = []
        for engine in (self.reference, self.native):
            try:
                outcomes.append(("ok", getattr(engine, name)(*args)))
            except (AggregationStalled, ProtocolError, ValueError) as exc:
                outcomes.append((type(exc).__name__, str(exc)))
        assert outcomes[0] == outcomes[1], f"call {self.calls}: {name} differs"
        assert self.reference.stats == self.native.stats, f"call {self.calls}: {name} stats"
        assert self.reference.progress == self.native.progress
        assert timer_state(self.reference) == timer_state(self.native)
        kind, value = outcomes[0]
        if kind != "ok":
            raise {"AggregationStalled": AggregationStalled, "ProtocolError": ProtocolError,
                   "ValueError": ValueError}[kind](value)
        return value

    def start(self, now):
        return self._both("start", now)

    def on_packet(self, data, now):
        return self._both("on_packet", data, now)

    def on_timer(self, now):
        return self._both("on_timer", now)

    def next_deadline(self):
        return self._both("next_deadline")

    @property
    def done(self):
        assert self.reference.done == self.native.done
        return self.reference.done

    def result(self):
        expected = self.reference.result()
        assert np.array_equal(expected, self.native.result(), equal_nan=True)
        return expected


def twins(inputs, k, window, job=3, max_retries=12, **config):
    return [Twin(data, k, len(inputs), window,
                 EngineConfig(job_id=job, contributor=rank, window=window, timeout_s=0.01,
                              max_timeout_s=0.08, max_retries=max_retries, **config))
            for rank, data in enumerate(inputs)]


FAULTS = [dict(), dict(loss=0.1), dict(loss=0.05, duplicate=0.2, late=0.1, reorder=True),
          dict(loss=0.3, reorder=True)]


@pytest.mark.parametrize("faults", FAULTS, ids=["clean", "loss", "mixed", "heavy"])
@pytest.mark.parametrize("dtype,window,k", [("int32", 1, 8), ("int32", 4, 8), ("int32", 7, 16),
                                            ("float32", 1, 8), ("float32", 4, 8),
                                            ("float32", 9, 4)])
def test_same_packets_counters_and_sums_through_a_lossy_network(dtype, window, k, faults):
    world, elements = 3, 203
    inputs = (int_inputs if dtype == "int32" else float_inputs)(world, elements, seed=window)
    engines = twins(inputs, k, window, max_retries=40)
    switch = ReferenceSwitch(job_id=3, fan_in=world, window=window, k=k)
    LossyNetwork(engines, switch, seed=11 * window + k, **faults).run()
    for engine in engines:
        result = engine.result()
        if dtype == "int32":
            assert result.tolist() == np.sum(inputs, axis=0, dtype=np.int64).tolist()
    assert sum(e.calls for e in engines) > 3 * elements // k


def test_float_values_round_half_to_even_as_numpy_rint_does():
    """The C quantizer rounds without libm (engine_native.c, round_half_even): exact ties, odd
    and even, both signs, the fractions beside them and the largest magnitudes must come out
    as np.rint's, which the reference engine uses.  Every block's largest value is 0.75, so
    with 3 workers (S = 29, E = 0) each value is scaled by 2**29 exactly."""
    world, k, window = 3, 8, 2
    scaled = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5, 0.25, 0.75, 1.25, -2.75,
                       4194302.5, 4194303.5, -4194302.5, -4194303.5, 2.0 ** -10, -2.0 ** -10,
                       0.0, -0.0, 3 * 2 ** 27 - 32, -(3 * 2 ** 27 - 32), 12345.5, -12346.5,
                       5.5, -5.5, 6.5, -7.5])
    values = np.ldexp(scaled, -29).astype(np.float32)
    assert np.array_equal(np.ldexp(values.astype(np.float64), 29), scaled)     # ties kept
    blocks = values.reshape(-1, k - 1)
    data = np.concatenate([np.full((len(blocks), 1), 0.75, np.float32), blocks], axis=1)
    inputs = [np.roll(data, rank, axis=0).ravel() for rank in range(world)]
    engines = twins(inputs, k, window)
    LossyNetwork(engines, ReferenceSwitch(job_id=3, fan_in=world, window=window, k=k),
                 seed=5).run()
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    for twin in engines:
        assert np.all(np.abs(twin.result() - exact) <= twin.reference.schedule.error_bound())


@pytest.mark.parametrize("world", [1, 3, 8])
def test_float_values_of_every_magnitude_quantize_alike(world):
    """Largest and subnormal floats, zeros and blocks whose agreed exponent is above the
    worker's own (the other workers' values are larger): the C quantizer's clamp and
    rounding give np.rint's integers, packet for packet."""
    k, window = 8, 3
    inputs = []
    for rank in range(world):
        rng = np.random.default_rng(rank)
        magnitudes = 2.0 ** rng.integers(-150, 127, size=96)
        data = np.clip(rng.standard_normal(96) * magnitudes, -3.4e38, 3.4e38)
        data[rank::7], data[rank::11], data[::13] = 3.4e38 / world, 1e-45, 0
        inputs.append(data.astype(np.float32))
    engines = twins(inputs, k, window)
    LossyNetwork(engines, ReferenceSwitch(job_id=3, fan_in=world, window=window, k=k),
                 seed=world, loss=0.05).run()
    for twin in engines:
        twin.result()


@pytest.mark.parametrize("shape", [(1, 3), (5000, 7), (3, 8193)])
def test_touching_the_sums_pages_leaves_their_values(shape):
    """NativeEngine faults the sums' pages in before the loop by writing one byte of each
    page back unchanged (engine_native._touch_pages)."""
    values = np.random.default_rng(1).integers(0, 256, size=shape, dtype=np.uint8)
    before = values.copy()
    engine_native._touch_pages(values)
    assert np.array_equal(values, before)


def test_continued_versions_and_chunk_base_as_the_torch_hook_uses_them():
    inputs = int_inputs(2, 50, seed=4)
    engines = twins(inputs, 8, 4, first_versions=(1, 0, 1), chunk_base=4096)
    LossyNetwork(engines, ReferenceSwitch(job_id=3, fan_in=2, window=4, k=8), seed=3,
                 loss=0.1).run()
    for twin in engines:
        twin.result()
        assert twin.reference.next_versions() == twin.native.next_versions()


def test_a_stalled_slot_raises_the_same_line():
    (twin,) = twins(int_inputs(1, 24, seed=1), 8, 2, max_retries=3)
    twin.start(0.0)
    now = 0.0
    with pytest.raises(AggregationStalled, match="no result from the switch for slot 0") as caught:
        while True:
            now = twin.next_deadline()
            twin.on_timer(now)
    assert "after 3 retransmissions" in str(caught.value)


def result_for(packet, exponent=0, **changes):
    h = AggPacket.unpack(packet).header
    fields = dict(msg_type=MSG_RESULT, version=h.version, job_id=h.job_id, slot=h.slot,
                  contributor=h.contributor, chunk_offset=h.chunk_offset,
                  num_elements=h.num_elements, exponent=exponent)
    fields.update(changes)
    return AggPacket(AggHeader(**fields), AggPacket.unpack(packet).values * 2).pack()


def test_malformed_foreign_and_stale_results_are_ignored_alike():
    (twin,) = twins(int_inputs(1, 40, seed=2), 8, 2)
    first, second = twin.start(0.0)
    good = result_for(first)
    for bad in (good[:15], good[:16], good[:-4], good + b"\0" * 4, result_for(first, job_id=4),
                result_for(first, version=1), result_for(first, chunk_offset=8),
                good[:12] + b"\0\4" + good[14:], result_for(first, slot=9),
                result_for(first, msg_type=1), result_for(first, slot=65535)):
        assert twin.on_packet(bad, 0.001) == []
    (third,) = twin.on_packet(good, 0.002)
    assert twin.on_packet(good, 0.003) == []                   # a duplicate of an old round
    assert twin.native.stats.packets_ignored == 12
    overflowed = result_for(second, overflow=1)
    twin.on_packet(overflowed, 0.004)
    assert twin.native.stats.overflow


def test_a_result_exponent_below_ours_is_refused_alike():
    inputs = [np.full(16, 1000.0, np.float32)]
    (twin,) = twins(inputs, 8, 2)
    first, _ = twin.start(0.0)
    with pytest.raises(ProtocolError, match="below this worker's"):
        twin.on_packet(result_for(first, exponent=1), 0.001)


def test_the_timer_state_carries_over_both_ways():
    (twin,) = twins(int_inputs(1, 16, seed=3), 8, 2)
    reference = twin.reference.timer
    reference.sample(0.004)
    reference.sample(0.006)
    twin.native.timer = reference
    assert timer_state(twin.native) == (reference.srtt, reference.rttvar, reference.timeout)


# ---- the C data loop over loopback UDP, and the sanitizers -----------------------------------
def test_the_c_loop_under_address_sanitizer_and_ubsan():
    """The lossy-network parity runs, the quantizer tests and the loopback UDP loop (ne_run and
    fastio.c's receiver, float32 and int32), in a child process with the sanitizer runtimes
    preloaded and the engine built with them (any report aborts it)."""
    cc = nativebuild.compiler()
    libasan = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    assert os.path.isabs(libasan), "gcc has no libasan (install libasan)"
    env = dict(os.environ, LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0",
               PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "tests", "hosts")]))
    script = ("import nativebuild, hosts.ina.engine_native as n\n"
              "n._loaded[()] = n.load(nativebuild.SANITIZER_FLAGS)\n"   # the default: sanitized
              "assert n._loaded[()] is not None, n.unavailable_reason()\n"
              "import test_engine_native as t\n"
              "t.test_same_packets_counters_and_sums_through_a_lossy_network("
              "'float32', 4, 8, dict(loss=0.05, duplicate=0.2, late=0.1, reorder=True))\n"
              "t.test_same_packets_counters_and_sums_through_a_lossy_network('int32', 7, 16, {})\n"
              "t.test_malformed_foreign_and_stale_results_are_ignored_alike()\n"
              "t.test_a_header_only_result_is_ignored_where_the_values_are_kept()\n"
              "t.test_float_values_round_half_to_even_as_numpy_rint_does()\n"
              "t.test_float_values_of_every_magnitude_quantize_alike(8)\n"
              "import pytest, test_hosts_worker_fastpath as f\n"      # ne_run and fastio.c
              "patch = pytest.MonkeyPatch()\n"
              "for batch, dtype in ((3, 'float32'), (256, 'int32')):\n"
              "    f.test_udp_loop_exact_with_drops_foreign_datagrams_and_any_drain_batch(\n"
              "        patch, batch, dtype, 'c')\n"
              "patch.undo()\n"
              "print('sanitized ok')\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and "sanitized ok" in done.stdout, done.stderr[-3000:]


def test_an_unanswered_closing_round_is_given_up_alike_with_every_sum_in():
    data = int_inputs(1, 24, seed=5)
    (twin,) = twins(data, 8, 2, max_retries=2)
    pending = twin.start(0.0)
    closing = []
    while pending:                       # every real round answered, no closing round
        packet = pending.pop(0)
        for answer in twin.on_packet(result_for(packet), 0.001):
            slot = AggPacket.unpack(answer).header.slot
            in_flight = twin.reference._slots[slot].round
            (closing if twin.reference.plan.closing(in_flight) else pending).append(answer)
    assert len(closing) == 2 and not twin.done
    while not twin.done:
        twin.on_timer(twin.next_deadline())
    assert twin.native.stats.closings_unanswered == 2
    assert twin.result().tolist() == (data[0] * 2).tolist()


# ---- collectives (hosts/ina/ina_collectives.py) through the real p4src fabric --------------------
def collective_twins(fabric, collective, inputs, window, root=0, max_retries=40):
    """Per rank a Twin on the collective's engine input (shards padded to whole chunks)."""
    from hosts.ina.ina_collectives import engine_input
    world, k = len(inputs), fabric.k
    engines = []
    for rank, data in enumerate(inputs):
        vector, bounds = engine_input(collective, data, world, k)
        engines.append(Twin(vector, k, world, window, EngineConfig(
            job_id=fabric.plan.job_id, contributor=fabric.contributor(rank), window=window,
            timeout_s=0.01, max_timeout_s=0.08, max_retries=max_retries,
            collective=collective, rank=rank, root=root, shard_chunks=bounds)))
    return engines


def expected_collective(collective, inputs, rank, root):
    from hosts.allreduce import shard
    world, elements = len(inputs), len(inputs[0])
    if collective == "reduce-scatter":
        total = np.sum([x.astype(np.float64 if x.dtype == np.float32 else np.int64)
                        for x in inputs], axis=0)
        return total[shard(rank, world, elements)]
    if collective == "reduce":          # the root holds the sum, the others nothing
        total = np.sum([x.astype(np.float64 if x.dtype == np.float32 else np.int64)
                        for x in inputs], axis=0)
        return total if rank == root else total[:0]
    if collective == "broadcast":
        return inputs[root]
    return np.concatenate([inputs[j][shard(j, world, elements)] for j in range(world)])


@pytest.mark.parametrize("faults", [dict(), dict(loss=0.05, duplicate=0.2, late=0.1,
                                                 reorder=True)], ids=["clean", "mixed"])
@pytest.mark.parametrize("collective", ["reduce-scatter", "allgather", "broadcast", "reduce"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_collectives_same_packets_and_exact_results_on_the_p4src_leaf_spine(collective, dtype,
                                                                             faults):
    """leafspine:2,1,2 running p4src: header-only packets and owner-only results, the two
    engines packet for packet, every rank's result exact (float32 sums: within the block
    floating point bound)."""
    from agg_network import P4Fabric
    from hosts.ina.ina_collectives import collective_result
    world, elements, window, root = 4, 203, 3, 2
    fabric = P4Fabric("leafspine:2,1,2", job_id=5, window=window)
    inputs = (int_inputs if dtype == "int32" else float_inputs)(world, elements, seed=7)
    engines = collective_twins(fabric, collective, inputs, window, root=root)
    received = [0] * world                       # values (in chunks) delivered to each rank
    received_bytes = [0] * world
    deliver = fabric.receive

    def counting(rank, payload):
        out = deliver(rank, payload)
        for target, result in out:
            received[target] += (len(result) - 16) // (4 * fabric.k)
            received_bytes[target] += len(result)
        return out

    fabric.receive = counting
    LossyNetwork(engines, fabric, seed=5, **faults).run()
    for rank, twin in enumerate(engines):
        got = collective_result(collective, twin.result(), rank, world, elements, fabric.k,
                                np.dtype(dtype), root)
        expected = expected_collective(collective, inputs, rank, root)
        if dtype == "float32" and collective in ("reduce-scatter", "reduce"):
            from hosts.ina.ina_collectives import collective_part
            bound = collective_part(collective, twin.reference.schedule.error_bound(), rank,
                                    world, elements, fabric.k, root)
            assert len(got) == len(expected) == len(bound)
            assert np.all(np.abs(got.astype(np.float64) - expected) <= bound)
        else:
            assert got.tobytes() == np.asarray(expected, dtype=dtype).tobytes()
    if not faults:                       # no retransmission: values sent = values owed
        from hosts.ina.ina_collectives import ShardLayout
        layout = ShardLayout(elements, world, fabric.k)
        stats = engines[0].reference.stats   # rank 0, not the broadcast root
        own_chunks = int(layout.chunk_bounds[1] - layout.chunk_bounds[0])
        values_sent = (stats.bytes_sent - 16 * stats.packets_sent) // (4 * fabric.k)
        chunks, whole = int(layout.chunk_bounds[-1]), -(-elements // fabric.k)
        assert values_sent == {"reduce-scatter": chunks, "allgather": own_chunks,
                               "broadcast": 0, "reduce": whole}[collective]
        # reduce-scatter: values come back for the rank's own chunks only; reduce: to the
        # root only (broadcast's and reduce's vectors are not laid out in shards: no padding)
        assert received[0] == {"reduce-scatter": own_chunks, "allgather": chunks,
                               "broadcast": whole, "reduce": 0}[collective]
        assert received[root] == {"reduce-scatter": int(layout.chunk_bounds[root + 1]
                                                        - layout.chunk_bounds[root]),
                                  "allgather": chunks, "broadcast": whole,
                                  "reduce": whole}[collective]
        # hosts/bounds.py's count, every rank
        from hosts.bounds import ina_traffic
        for rank, twin in enumerate(engines):
            assert (twin.reference.stats.bytes_sent, received_bytes[rank]) == ina_traffic(
                collective, rank, world, elements, fabric.k, window, dtype, root=root), rank


def test_a_header_only_result_is_ignored_where_the_values_are_kept():
    """reduce-scatter: an owner must get its chunk's values; a header-only result for it is
    not a result (ignored, retransmitted), while a non-owner's header-only result is."""
    from contracts.wire import FLAG_NO_VALUES
    from hosts.ina.ina_collectives import engine_input
    data = int_inputs(2, 16, seed=9)[0]
    vector, bounds = engine_input("reduce-scatter", data, 2, 8)
    (twin,) = [Twin(vector, 8, 2, 2, EngineConfig(job_id=3, contributor=0, window=2,
                                                  timeout_s=0.01, collective="reduce-scatter",
                                                  rank=0, shard_chunks=bounds))]
    first, second = twin.start(0.0)          # chunk 0: rank 0's shard, chunk 1: rank 1's
    assert len(first) == len(second) == 16 + 32
    assert AggPacket.unpack(first).header.owner == 0
    assert AggPacket.unpack(second).header.owner == 1

    def header_only(packet):
        h = AggPacket.unpack(packet).header
        return AggPacket(AggHeader(**{**h.__dict__, "msg_type": MSG_RESULT,
                                      "flags": h.flags | FLAG_NO_VALUES}),
                         np.zeros(0, np.int32)).pack()

    assert twin.on_packet(header_only(first), 0.001) == []          # owner: needs values
    assert twin.native.stats.packets_ignored == 1
    closing_1 = twin.on_packet(header_only(second), 0.002)           # non-owner: done
    assert [len(p) for p in closing_1] == [16]                       # closing: header only
    closing_0 = twin.on_packet(result_for(first), 0.003)
    assert [len(p) for p in closing_0] == [16]
    for packet in closing_0 + closing_1:
        assert twin.on_packet(header_only(packet), 0.004) == []
    assert twin.done
    assert twin.result()[:8].tolist() == (data[:8] * 2).tolist()
