"""ATP's hosts (hosts/atp/) by themselves and through ATP's switch (p4src/atp/atp.p4 in the
in-process p4switch, installed by the controller: tests/hosts/atp_network.py) over a faulty
network in virtual time (agg_network.LossyNetwork): exact sums through loss, duplicates,
late and reordered packets, on one rack and on two levels, with a pool small enough that
fragments collide; the window's ECN rule; the server's coverage rule."""

import numpy as np
import pytest

from agg_network import LossyNetwork, int_inputs
from atp_network import AtpP4Fabric
from contracts.wire import MSG_CONTRIBUTION, MSG_RESULT
from hosts.atp.engine import AtpConfig, AtpEngine
from hosts.atp.protocol import AtpPacket, aggregator_of, unpack
from hosts.atp.server import ParameterServer

K = 8


def run(topology, seed, slots=16, fragments=40, window=8, **faults):
    fabric = AtpP4Fabric(topology, 3, window, k=K, slots=slots)
    inputs = int_inputs(len(fabric.hosts), K * fragments, seed)
    engines = [AtpEngine(data, K, AtpConfig(3, fabric.place(r)[1], fabric.place(r)[0],
                                            fabric.plan.aggregators, window=window,
                                            timeout_s=0.01, max_timeout_s=0.08,
                                            max_retries=40))
               for r, data in enumerate(inputs)]
    LossyNetwork(engines, fabric, seed=seed, **faults).run()
    expected = np.sum(inputs, axis=0, dtype=np.int64).astype(np.int32)
    assert all(np.array_equal(e.result(), expected) for e in engines)
    return fabric.server.stats, engines


@pytest.mark.parametrize("topology", ["star:3", "leafspine:2,1,2"])
def test_a_clean_network_sums_everything_in_the_switches(topology):
    """Every fragment reaches the server whole: summed by the rack switch (and on two
    levels by the one above); the server only acknowledges."""
    stats, engines = run(topology, 1, slots=64)
    assert (stats.whole, stats.single, stats.partial_sums, stats.collisions) == (40, 0, 0, 0)
    assert all(e.stats.retransmissions == 0 for e in engines)


@pytest.mark.parametrize("faults", [{"loss": 0.05}, {"duplicate": 0.1}, {"late": 0.1},
                                    {"reorder": True, "loss": 0.02}],
                         ids=["loss", "duplicates", "late", "reordered"])
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("topology", ["star:3", "leafspine:2,1,2"])
def test_exact_through_faults_with_a_pool_that_collides(topology, seed, faults):
    """Four aggregators for eight fragments in flight: collisions go to the server, and so
    do resends; the server completes every fragment exactly once."""
    stats, _ = run(topology, seed, slots=2, **faults)
    assert stats.collisions > 0 and stats.acks_sent >= 40


def test_the_window_halves_once_per_window_on_marks_and_grows_otherwise():
    engine = AtpEngine(np.zeros(K * 64, dtype=np.int32), K,
                       AtpConfig(3, 0, 0, 32, window=16))
    sent = engine.start(0.0)
    assert len(sent) == 16 and engine.window == 16

    def ack(seq, ecn):
        return AtpPacket(MSG_RESULT, 3, aggregator_of(3, seq * K, 32), 0, seq * K, K,
                         np.full(K, seq, dtype=np.int32), ecn=ecn).pack()

    more = engine.on_packet(ack(0, True), 0.0)           # a mark: 16 -> 8, nothing more
    assert engine.window == 8 and more == []
    engine.on_packet(ack(1, True), 0.0)                   # same window of fragments: no cut
    assert engine.window == 8 and engine.stats.window_cuts == 1
    for seq in range(2, 10):                               # unmarked: +1/window each
        engine.on_packet(ack(seq, False), 0.0)
    assert 8.9 < engine.window < 9.0
    engine.on_packet(ack(10, True), 0.0)                  # a fragment sent before the cut
    assert engine.stats.window_cuts == 1
    late = engine._next                                    # sent after the cut: news
    for seq in range(11, late + 1):
        engine.on_packet(ack(seq, False), 0.0)
    engine.on_packet(ack(late, True), 0.0)                 # already known: ignored
    assert engine.stats.packets_ignored == 1
    assert engine.stats.ecn_marks == 3 and engine.stats.smallest_window == 8
    assert np.array_equal(engine.result()[:K], np.zeros(K))


def test_the_server_adds_what_covers_new_workers_and_answers_again():
    """Racks of 2 and 3 workers: a rack's sum (bitmap1) covers its rack; a worker's packet
    its bit of bitmap0 in its rack; an overlap is not added; a complete fragment is
    acknowledged with the sum, again for a resend, with the ECN mark and overflow."""
    server = ParameterServer(3, (2, 3), K)

    def gradient(values, **fields):
        return AtpPacket(MSG_CONTRIBUTION, 3, 5, 0, 0, K, np.full(K, values, dtype=np.int32),
                         **fields).pack()

    assert server.on_packet(gradient(1, rack=1, bitmap0=0b001, collision=True)) == []
    assert server.on_packet(gradient(10, rack=1, bitmap0=0b111, bitmap1=0b10)) == []
    assert server.stats.overlapping == 1            # covers rack 1's worker 0 again
    assert server.on_packet(gradient(2, rack=1, bitmap0=0b010, ecn=True)) == []
    assert server.on_packet(gradient(2**31 - 1, rack=0, bitmap0=0b11, bitmap1=0b01)) == []
    (ack,) = server.on_packet(gradient(4, rack=1, bitmap0=0b100, resend=True))
    answer = unpack(ack)
    assert (answer.msg_type, answer.offset, answer.aggregator, answer.ecn, answer.overflow) \
        == (MSG_RESULT, 0, 5, True, True)
    assert list(answer.values) == [2**31 - 1] * K    # 2**31 - 1 + 7 clipped: overflow set
    assert server.on_packet(gradient(4, rack=1, bitmap0=0b100, resend=True)) == [ack]
    s = server.stats
    # what came (the overlapping rack sum too): three single workers, two racks' sums
    assert (s.single, s.partial_sums, s.collisions, s.resends, s.answered_again) == \
        (3, 2, 1, 1, 1)


def test_packets_round_trip_and_the_hash_is_the_workers_common_choice():
    packet = AtpPacket(MSG_CONTRIBUTION, 7, 9, 2, 64, K, np.arange(K, dtype=np.int32),
                       level=1, resend=True, collision=True, ecn=True, overflow=True,
                       rack=3, bitmap0=0b100, bitmap1=0b1000)
    again = unpack(packet.pack())
    assert again.pack() == packet.pack() and list(again.values) == list(range(K))
    assert unpack(packet.pack()[:-1]) is None
    assert [aggregator_of(7, q * K, 16) for q in range(6)] == \
        [aggregator_of(7, q * K, 16) for q in range(6)]
    assert len({aggregator_of(7, q * K, 1 << 20) for q in range(64)}) == 64
