"""When simple_switch has finished with the packets sent to it, read from its log.

simple_switch says nothing on its packet socket about a packet it drops, so "no more output"
cannot be told from silence.  Its debug log can: every packet it works on is a unit of work,
and the log names each step that creates or ends one (the messages are simple_switch's and
its packet replication engine's own, targets/simple_switch/simple_switch.cpp,
src/bm_sim/simple_pre*.cpp):

    created   "number of packets replicated : N"  N multicast copies (the PRE, on the thread
                                                  that asked, before it enqueues them)
              "Cloning packet to egress port N"   one clone (ingress or egress)
    ended     "Dropping packet at the end of ingress" / "... of egress"
              "Transmitting packet of size S out of port N"   (then sent on the socket)
              "Priority out of range, dropping packet"
    neither   "Resubmitting packet", "Recirculating packet" (the work goes round again)

A multicast's original ("Multicast requested for packet") ends when the PRE has counted its
copies, on the same thread: ending it earlier would let the count touch 0 while the copies
are still being enqueued.  A group the PRE does not know gives no copies ("... not known to
the PRE"); should a multicast line come with neither, the original ends after a short quiet
period.

Each packet we send is one unit.  The switch has finished when the units in flight are 0; the
packets it transmitted are then exactly the "Transmitting" lines, which precede the socket
send, so the caller knows how many to read.

With trace logging the learn engine's "Learning sample" and "Sending learning notification"
lines count digests the same way.
"""

import re
import threading
import time

_MESSAGE = re.compile(r"^\[[^\]]*\] \[[^\]]*\] \[(\w)\] \[thread (\d+)\] "     # time, bmv2, level
                      r"(?:\[\d+\.\d+\] \[cxt \d+\] )?(.*)$")          # [packet.copy] [cxt]

_CLONED = "Cloning packet to egress port"
_ENDED = ("Dropping packet at the end of ingress", "Dropping packet at the end of egress",
          "Transmitting packet of size", "Priority out of range, dropping packet")
_MULTICAST = "Multicast requested for packet"
_CLONE_TO_GROUP = "Cloning packet to MGID"
_REPLICATED = re.compile(r"^number of packets replicated : (\d+)")
_UNKNOWN_GROUP = "which is not known to the PRE"
_TRANSMIT = "Transmitting packet of size"
_LEARN = "Learning sample for list id"
_LEARN_SENT = "Sending learning notification for list id"
MULTICAST_GRACE_S = 0.05


class Tracker:
    """Counts simple_switch's units of work from its log lines (fed by a reader thread)."""

    def __init__(self):
        self.cond = threading.Condition()
        self.in_flight = 0
        self.transmitted = 0          # "Transmitting" lines since the last take()
        self.learned = 0
        self.learn_sent = 0
        self.last_line_at = 0.0
        self.multicasts = {}          # thread -> multicast/clone line awaiting the PRE's count
        self.closed = False

    def feed(self, line):
        """One log line."""
        m = _MESSAGE.match(line)
        if not m:
            return
        _, thread, text = m.groups()
        with self.cond:
            self.last_line_at = time.monotonic()
            replicated = _REPLICATED.match(text)
            if replicated or _UNKNOWN_GROUP in text:
                copies = int(replicated.group(1)) if replicated else 0
                if self.multicasts.pop(thread, None) == _MULTICAST:
                    copies -= 1               # the original ends with its copies counted
                self.in_flight += copies
            elif text.startswith(_CLONED):
                self.in_flight += 1
            elif text.startswith((_MULTICAST, _CLONE_TO_GROUP)):
                self.multicasts[thread] = _MULTICAST if text.startswith(_MULTICAST) \
                    else _CLONE_TO_GROUP
            elif text.startswith(_ENDED):
                self.in_flight -= 1
                if text.startswith(_TRANSMIT):
                    self.transmitted += 1
            elif text.startswith(_LEARN):
                self.learned += 1
            elif text.startswith(_LEARN_SENT):
                self.learn_sent += 1
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
        if self.multicasts:
            # a multicast line with no count from the PRE (not expected): wait for quiet
            if time.monotonic() - self.last_line_at < MULTICAST_GRACE_S:
                return False
            for kind in self.multicasts.values():
                if kind == _MULTICAST:
                    self.in_flight -= 1
            self.multicasts.clear()
        return self.in_flight <= 0

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
                self.cond.wait(min(left, MULTICAST_GRACE_S) if self.multicasts else left)
            return True

    def take(self):
        """(transmitted, digests sent) since the last take, and clear them."""
        with self.cond:
            counts = (self.transmitted, self.learn_sent)
            self.transmitted = self.learned = self.learn_sent = 0
            return counts
