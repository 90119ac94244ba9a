"""The impairment model (p4switch/device/impair.py) without sockets: exact decisions for 0 and
100 percent, reordering as swaps with the next frame, delays through the timer heap, the
in-flight limit, seeded streams, the stats file, and --impair parsing."""
import json
import random
import time

import pytest

from p4switch.device.impair import (Impairment, ImpairmentError, Impairments, LinkImpairment,
                                    TimerHeap, parse_impairment, parse_impairments)


class Link:
    """A LinkImpairment on port 1 rx whose delivered frames are collected."""

    def __init__(self, **settings):
        self.timers = TimerHeap()
        self.delivered = []
        seed = settings.pop("seed", 1)
        device_id = settings.pop("device_id", 0)
        self.link = LinkImpairment(1, "rx", Impairment(**settings), seed, self.timers,
                                   self.delivered.append, device_id=device_id)

    def offer(self, *frames):
        for frame in frames:
            self.link.offer(frame)

    def run_timers(self, after_s=60.0):
        self.timers.run_due(time.monotonic() + after_s)

    @property
    def counters(self):
        return self.link.counters


def frames(count):
    return [bytes([n]) * 4 for n in range(count)]


def test_no_impairment_passes_frames_at_once_in_order():
    link = Link()
    link.offer(*frames(5))
    assert link.delivered == frames(5)
    assert link.counters["frames"] == 5 and link.counters["dropped"] == 0


def test_full_loss_drops_everything():
    link = Link(loss=100)
    link.offer(*frames(5))
    link.run_timers()
    assert link.delivered == []
    assert link.counters["dropped"] == 5


def test_full_duplication_sends_each_frame_twice_back_to_back():
    link = Link(dup=100)
    link.offer(*frames(3))
    a, b, c = frames(3)
    assert link.delivered == [a, a, b, b, c, c]
    assert link.counters["duplicated"] == 3


def test_reordered_frame_leaves_right_after_the_next_one():
    link = Link(reorder=100)
    link.offer(*frames(7))
    f = frames(7)
    # 0 is held, 1 overtakes it; 2 is held, 3 overtakes; ...; 6 is held with nobody behind
    assert link.delivered == [f[1], f[0], f[3], f[2], f[5], f[4]]
    assert link.counters["reordered"] == 3
    link.run_timers()                       # its hold time ends: it leaves, not reordered
    assert link.delivered[-1] == f[6]
    assert link.counters["reordered"] == 3


def test_duplicate_copy_overtakes_a_held_original():
    link = Link(reorder=100, dup=100)
    link.offer(b"a")
    assert link.delivered == [b"a", b"a"]
    assert link.counters["reordered"] == 1 and link.counters["duplicated"] == 1


def test_delayed_frames_wait_on_the_timer_heap_in_order():
    link = Link(delay=50)
    start = time.monotonic()
    link.offer(*frames(3))
    assert link.delivered == []
    assert link.timers.timeout_ms(start, 200) >= 50      # rounded up: nothing leaves early
    assert link.timers.timeout_ms(start + 60, 200) == 0
    link.timers.run_due(start + 0.049)
    assert link.delivered == []
    link.run_timers()
    assert link.delivered == frames(3)
    assert link.counters["delayed"] == 3


def test_reordering_with_delay_keeps_the_swap():
    link = Link(delay=5, reorder=100)
    link.offer(*frames(2))
    link.run_timers()
    a, b = frames(2)
    assert link.delivered == [b, a]


def test_jitter_never_makes_a_delay_negative():
    link = Link(jitter=5)
    link.offer(*frames(50))
    link.run_timers()
    assert sorted(link.delivered) == sorted(frames(50))


def test_frames_beyond_the_limit_are_dropped_and_in_flight_ones_discarded():
    link = Link(delay=1000, limit=3)
    link.offer(*frames(5))
    assert link.counters["overflowed"] == 2
    assert link.link.discard_in_flight() == 3
    assert link.counters["discarded"] == 3


def dropped_indices(seed, **settings):
    link = Link(loss=30, seed=seed, **settings)
    sent = frames(200)
    link.offer(*sent)
    link.run_timers()
    return {n for n, frame in enumerate(sent) if frame not in link.delivered}


def test_loss_decisions_follow_the_documented_seeded_stream():
    stream = random.Random("7/0/1/rx/loss")      # seed/device/port/direction/decision
    expected = {n for n in range(200) if stream.random() < 0.30}
    assert dropped_indices(7) == expected
    # the other decisions draw from their own streams: they do not move the losses
    assert dropped_indices(7, dup=50, reorder=20) == expected
    assert dropped_indices(8) != expected
    assert dropped_indices(7, device_id=1) != expected     # another switch, same seed


def test_device_id_enters_the_streams():
    stream = random.Random("7/3/1/rx/loss")
    assert dropped_indices(7, device_id=3) == {n for n in range(200) if stream.random() < 0.30}


def test_stats_file_and_summary_lines(tmp_path):
    path = tmp_path / "stats.json"
    delivered = []
    impairments = Impairments({(2, "tx"): Impairment(loss=100, seed=3),
                               (2, "rx"): Impairment(delay=1000)},
                              lambda port, direction: delivered.append, stats_path=str(path))
    impairments.link(2, "tx").offer(b"x")
    impairments.link(2, "rx").offer(b"y")
    impairments.service()
    stats = json.loads(path.read_text())
    assert stats["final"] is False
    assert stats["ports"]["2"]["tx"]["dropped"] == 1
    assert stats["ports"]["2"]["tx"]["config"]["seed"] == 3
    assert stats["ports"]["2"]["rx"]["delayed"] == 1
    lines = impairments.stop()
    stats = json.loads(path.read_text())
    assert stats["final"] is True and stats["ports"]["2"]["rx"]["discarded"] == 1
    assert lines == ["impairment port 2: rx: 1 frames, 0 dropped, 0 duplicated, 0 reordered, "
                     "1 delayed, 0 overflowed, 1 discarded; tx: 1 frames, 1 dropped, "
                     "0 duplicated, 0 reordered, 0 delayed, 0 overflowed, 0 discarded"]
    assert delivered == []


def test_parse_full_spec_and_units():
    port, directions, impairment = parse_impairment(
        "3:both:loss=2%,dup=1,reorder=5,delay=10ms,jitter=2,limit=50,seed=7")
    assert (port, directions) == (3, ("rx", "tx"))
    assert impairment == Impairment(loss=2, dup=1, reorder=5, delay=10, jitter=2, limit=50,
                                    seed=7)


@pytest.mark.parametrize("spec, message", [
    ("1:rx", "is not PORT:rx|tx|both"),
    ("a:rx:loss=1", "port 'a' is not a number"),
    ("1:in:loss=1", "direction 'in'"),
    ("1:rx:", "'' is not KEY=VALUE"),
    ("1:rx:loss", "'loss' is not KEY=VALUE"),
    ("1:rx:loss=150", "percentage"),
    ("1:rx:delay=-1", ">= 0"),
    ("1:rx:delay=x", "not a number"),
    ("1:rx:corrupt=1", "unknown key 'corrupt'"),
    ("1:rx:loss=1,loss=1", "given twice"),
    ("1:rx:seed=1.5", "integer"),
    ("1:rx:limit=0", "integer >= 1"),
])
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(ImpairmentError, match=message.replace("|", r"\|")):
        parse_impairment(spec)


def test_unknown_port_and_double_impairment_are_refused():
    with pytest.raises(ImpairmentError, match="port 9 is not given with -i"):
        parse_impairments(["9:rx:loss=1"], {1: "a"})
    with pytest.raises(ImpairmentError, match="port 1 rx is already impaired"):
        parse_impairments(["1:rx:loss=1", "1:both:dup=1"], {1: "a"})
