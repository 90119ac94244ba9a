"""p4switch.bmv2.tracker on simple_switch log lines (no bmv2 needed): when the switch is done
with a packet, and how many packets it transmitted."""

import threading

from p4switch.bmv2.tracker import Tracker


def line(text, thread=1, tag="[0.0] [cxt 0] "):
    return f"[18:31:09.989] [bmv2] [D] [thread {thread}] {tag}{text}"


def feed(tracker, *texts):
    for text in texts:
        tracker.feed(text if text.startswith("[") else line(text))


def test_a_dropped_packet_ends_its_unit():
    t = Tracker()
    t.sent()
    assert not t.wait_idle(0.01)
    feed(t, "Processing packet received on port 0", "Egress port is 511",
         "Dropping packet at the end of ingress")
    assert t.wait_idle(0.01)
    assert t.take() == (0, 0)


def test_clones_and_transmissions_are_counted():
    t = Tracker()
    t.sent()
    feed(t, "Cloning packet at ingress", "Cloning packet to egress port 4", "Egress port is 1",
         line("Transmitting packet of size 3 out of port 4", thread=2, tag="[0.1] [cxt 0] "))
    assert not t.wait_idle(0.01)          # the original is still in egress
    feed(t, line("Transmitting packet of size 3 out of port 1", thread=3))
    assert t.wait_idle(0.01)
    assert t.take() == (2, 0)


def test_a_multicast_is_not_over_before_its_copies_are_counted():
    """The egress thread may transmit the first copy before the ingress thread has logged
    the others: the PRE's count comes first, so the count never touches 0 too early."""
    t = Tracker()
    t.sent()
    feed(t, "Multicast requested for packet")
    assert not t.wait_idle(0.01)
    feed(t, line("number of packets replicated : 3 for MGID: 1", tag=""),
         "Replicating packet on port 2",
         line("Transmitting packet of size 5 out of port 2", thread=9, tag="[0.1] [cxt 0] "))
    assert not t.wait_idle(0.01)
    feed(t, "Replicating packet on port 3", "Replicating packet on port 4",
         line("Transmitting packet of size 5 out of port 3", thread=9, tag="[0.2] [cxt 0] "),
         line("Transmitting packet of size 5 out of port 4", thread=9, tag="[0.3] [cxt 0] "))
    assert t.wait_idle(0.01)
    assert t.take() == (3, 0)


def test_a_multicast_to_an_unknown_group_ends_the_packet():
    t = Tracker()
    t.sent()
    feed(t, "Multicast requested for packet",
         "[18:31:32.842] [bmv2] [W] [thread 1] Replication requested for mgid 7, which is not "
         "known to the PRE")
    assert t.wait_idle(0.01)
    assert t.take() == (0, 0)


def test_resubmit_and_recirculate_keep_the_unit():
    t = Tracker()
    t.sent()
    feed(t, "Resubmitting packet", "Processing packet received on port 0", "Egress port is 1",
         "Recirculating packet")
    assert not t.wait_idle(0.01)
    feed(t, "Transmitting packet of size 2 out of port 1")
    assert t.wait_idle(0.01)


def test_wait_idle_wakes_up_when_a_line_comes():
    t = Tracker()
    t.sent()
    threading.Timer(0.05, feed, (t, "Dropping packet at the end of egress")).start()
    assert t.wait_idle(5)           # True: the drop line ended the wait, not the timeout


def test_learning_lines_count_digests():
    t = Tracker()
    feed(t, "Learning sample for list id 1")
    assert not t.wait_learned(0.01)
    feed(t, line("Sending learning notification for list id 1 (buffer id 0)", tag=""))
    assert t.wait_learned(0.01)
    assert t.take() == (0, 1)
