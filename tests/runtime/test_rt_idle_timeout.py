"""Tables with `support_timeout = true`: entries with an idle timeout, hits restarting their
timer (packets through the compiled pipeline), and idle_entries() giving each aged entry once."""

import pytest

from p4switch import Switch
from p4switch.runtime.errors import InvalidArgument
from p4switch.runtime.tables import Exact

from rt_helpers import build

TYPES = """
header h_t { bit<8> key; bit<8> seen; }
struct headers { h_t h; }
struct metadata { }
"""
PARSER = "state start { packet.extract(hdr.h); transition accept; }"
INGRESS = """
    action fwd(bit<9> port) { standard_metadata.egress_spec = port; hdr.h.seen = 1; }
    action miss() { mark_to_drop(standard_metadata); }
    table cache {
        key = { hdr.h.key: exact; }
        actions = { fwd; miss; }
        default_action = miss();
        support_timeout = true;
    }
    table plain {
        key = { hdr.h.key: exact; }
        actions = { fwd; NoAction; }
    }
    apply { if (hdr.h.key < 100) { cache.apply(); } else { plain.apply(); } }
"""


class FakeClock:
    """Microseconds, as Switch's clock; moved by the test."""

    def __init__(self):
        self.now_us = 1000

    def __call__(self):
        return self.now_us


@pytest.fixture
def switch_and_clock():
    clock = FakeClock()
    return Switch(build(TYPES, PARSER, INGRESS), clock=clock), clock


def test_hits_restart_the_idle_timer(switch_and_clock):
    sw, clock = switch_and_clock
    cache = sw.table("cache")
    cache.insert({"hdr.h.key": Exact(5)}, "fwd", {"port": 2}, idle_timeout_ns=10_000_000)
    cache.insert({"hdr.h.key": Exact(6)}, "fwd", {"port": 3}, idle_timeout_ns=10_000_000)
    cache.insert({"hdr.h.key": Exact(7)}, "fwd", {"port": 4})       # never ages out
    clock.now_us += 6000
    assert sw.process_packet(1, bytes([5, 0])) == [(2, bytes([5, 1]))]
    clock.now_us += 6000            # 12 ms after insertion, 6 ms after key 5's hit
    assert [e.match for e in cache.idle_entries()] == [(Exact(6),)]
    assert cache.idle_entries() == []                 # reported once
    clock.now_us += 4000
    assert [e.match for e in cache.idle_entries()] == [(Exact(5),)]
    # A hit after the report makes the entry live again, and reportable later.
    assert sw.process_packet(1, bytes([6, 0])) == [(3, bytes([6, 1]))]
    assert cache.idle_entries() == []
    clock.now_us += 10_000
    assert [e.match for e in cache.idle_entries()] == [(Exact(6),)]


def test_modify_with_a_timeout_restarts_the_timer(switch_and_clock):
    sw, clock = switch_and_clock
    cache = sw.table("cache")
    cache.insert({"hdr.h.key": Exact(5)}, "fwd", {"port": 2}, idle_timeout_ns=1_000_000)
    clock.now_us += 900
    cache.modify({"hdr.h.key": Exact(5)}, "fwd", {"port": 3}, idle_timeout_ns=1_000_000)
    clock.now_us += 900
    assert cache.idle_entries() == []
    clock.now_us += 100
    assert [e.params for e in cache.idle_entries()] == [{"port": 3}]


def test_timeout_on_a_table_without_support_timeout_is_rejected(switch_and_clock):
    sw, _ = switch_and_clock
    with pytest.raises(InvalidArgument, match="does not support idle timeouts"):
        sw.table("plain").insert({"hdr.h.key": Exact(200)}, "fwd", {"port": 1},
                                 idle_timeout_ns=5)
    assert sw.table("plain").entries() == []
    with pytest.raises(InvalidArgument, match="negative idle timeout"):
        sw.table("cache").insert({"hdr.h.key": Exact(5)}, "fwd", {"port": 1},
                                 idle_timeout_ns=-1)


def test_p4info_marks_the_table_for_idle_notifications(switch_and_clock):
    sw, _ = switch_and_clock
    by_name = {t.preamble.name: t for t in sw.program.p4info.tables}
    assert by_name["I.cache"].idle_timeout_behavior == by_name["I.cache"].NOTIFY_CONTROL
    assert by_name["I.plain"].idle_timeout_behavior == by_name["I.plain"].NO_TIMEOUT
