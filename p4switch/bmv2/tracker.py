"""When simple_switch has finished with the packets sent to it, read from its log.

simple_switch says nothing on its packet socket about a packet it drops, so "no more output"
cannot be told from silence.  Its debug log can: every packet it works on is a unit of work,
and the log names each step that creates or ends one (the messages are simple_switch's own,
``targets/simple_switch/simple_switch.cpp``):

    created   "Replicating packet on port N"      one multicast copy
              "Cloning packet to egress port N"   one clone (ingress or egress)
    ended     "Dropping packet at the end of ingress" / "... of egress"
              "Transmitting packet of size S out of port N"   (then sent on the socket)
              "Multicast requested for packet"    the original is discarded after its copies
              "Priority out of range, dropping packet"
    neither   "Resubmitting packet", "Recirculating packet" (the work goes round again)

Each packet we send is one unit.  The switch has finished when the units in flight are 0; the
packets it transmitted are then exactly the "Transmitting" lines, which precede the socket
send, so the caller knows how many to read.  The copies of a multicast follow the
"Multicast requested" line from the same thread within microseconds; when that line brought
the count to 0, the tracker waits for a short quiet period before calling the switch idle.

With trace logging the learn engine's "Learning sample" and "Sending learning notification"
lines count digests the same way.
"""

import re
import threading
import time

_MESSAGE = re.compile(r"^\[[^\]]*\] \[[^\]]*\] \[(\w)\] \[thread (\d+)\] (?:\[\d+\.\d+\] \[cxt \d+\] )?(.*)$")

_CREATED = ("Replicating packet on port", "Cloning packet to egress port")
_ENDED = ("Dropping packet at the end of ingress", "Dropping packet at the end of egress",
          "Transmitting packet of size", "Priority out of range, dropping packet")
_MULTICAST = "Multicast requested for packet"
_TRANSMIT = "Transmitting packet of size"
_LEARN = "Learning sample for list id"
_LEARN_SENT = "Sending learning notification for list id"
MULTICAST_GRACE_S = 0.005


class Tracker:
    """Counts simple_switch's units of work from its log lines (fed by a reader thread)."""

    def __init__(self):
        self.cond = threading.Condition()
        self.in_flight = 0
        self.transmitted = 0          # "Transmitting" lines since the last take()
        self.learned = 0
        self.learn_sent = 0
        self.last_line_at = 0.0
        self.after_multicast = False  # the last change was a multicast's original ending
        self.errors = []              # simple_switch's own error lines ([E] / [C])
        self.closed = False

    def feed(self, line):
        """One log line."""
        m = _MESSAGE.match(line)
        if not m:
            return
        level, _, text = m.groups()
        with self.cond:
            self.last_line_at = time.monotonic()
            if text.startswith(_CREATED):
                self.in_flight += 1
                self.after_multicast = False
            elif text.startswith(_MULTICAST):
                self.in_flight -= 1
                self.after_multicast = True
            elif text.startswith(_ENDED):
                self.in_flight -= 1
                self.after_multicast = False
                if text.startswith(_TRANSMIT):
                    self.transmitted += 1
            elif text.startswith(_LEARN):
                self.learned += 1
            elif text.startswith(_LEARN_SENT):
                self.learn_sent += 1
            if level in ("E", "C") and not text.startswith(_ENDED):
                self.errors.append(text)
            self.cond.notify_all()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def sent(self, count=1):
        """``count`` packets were handed to the switch."""
        with self.cond:
            self.in_flight += count

    def _idle(self):
        if self.in_flight > 0:
            return False
        if self.after_multicast and time.monotonic() - self.last_line_at < MULTICAST_GRACE_S:
            return False
        return True

    def wait_idle(self, timeout_s):
        """Block until the switch has finished every unit of work; True if it did in time."""
        return self._wait(self._idle, timeout_s)

    def wait_learned(self, timeout_s):
        """Block until every sample learned has been sent; False after ``timeout_s`` (the
        learn engine drops a sample equal to one not yet acknowledged, and says nothing)."""
        return self._wait(lambda: self.learn_sent >= self.learned, timeout_s)

    def _wait(self, done, timeout_s):
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while not done():
                if self.closed:
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                wait = min(left, MULTICAST_GRACE_S) if self.after_multicast else left
                self.cond.wait(wait)
            return True

    def take(self):
        """(transmitted, digests sent) since the last take, and clear them."""
        with self.cond:
            counts = (self.transmitted, self.learn_sent)
            self.transmitted = self.learned = self.learn_sent = 0
            return counts
