"""The C engine (hosts/engine_native.c) against the reference engine (hosts/engine.py).

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
from hosts import engine_native
from hosts.engine import (AggregationEngine, AggregationStalled, EngineConfig, make_schedule)
from hosts.protocol import AggHeader, AggPacket, ProtocolError
from contracts.wire import MSG_RESULT

pytestmark = pytest.mark.skipif(not engine_native.available(),
                                reason=f"no C engine: {engine_native.unavailable_reason()}")


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
    """The lossy-network parity run and the loopback UDP loop, in a child process with the
    sanitizer runtimes preloaded and the engine built with them (any report aborts it)."""
    cc = nativebuild.compiler()
    libasan = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    assert os.path.isabs(libasan), "gcc has no libasan (install libasan)"
    env = dict(os.environ, LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0",
               PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "tests", "hosts")]))
    script = ("import nativebuild, hosts.engine_native as n\n"
              "n._loaded[()] = n.load(nativebuild.SANITIZER_FLAGS)\n"   # the default: sanitized
              "assert n._loaded[()] is not None, n.unavailable_reason()\n"
              "import test_engine_native as t\n"
              "t.test_same_packets_counters_and_sums_through_a_lossy_network("
              "'float32', 4, 8, dict(loss=0.05, duplicate=0.2, late=0.1, reorder=True))\n"
              "t.test_same_packets_counters_and_sums_through_a_lossy_network('int32', 7, 16, {})\n"
              "t.test_malformed_foreign_and_stale_results_are_ignored_alike()\n"
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
