"""How a link's bandwidth is shaped: a token bucket filter (tc tbf) on the egress of each of
its two interfaces, so each direction is shaped once, at the rate of `bw`.

Mininet's TCLink shapes with htb by default.  On the 2-core machine the emulator runs on,
htb made each packet markedly dearer than tbf at the same rate and burst (leafspine:2,1,4,
8 workers, 500,000 int32, K = 256, 100 Mbit/s, the two alternated within 75 s: the workers
and switches used 0.95-1.20 CPU-s per in-network run with htb against 0.51-0.69 with tbf,
and the run took 0.73-0.91 s against 0.41-0.53 s; README, "Link rates").  Mininet gives htb
no cburst, so its ceil bucket holds one packet and the class is throttled for every packet.
A link has one class of traffic, so htb's class tree brings nothing here.

The bucket and the queue are those Mininet's htb had, so results stay comparable: a burst of
15 KiB (`burst 15k`, the htb command's) and room for QUEUE_FRAMES full-size frames (htb's
default leaf queue holds txqueuelen = 1000 packets).  tbf counts its queue in bytes; with
the aggregation packets (1,082 bytes at K = 256) that is a little more than 1000 of them.
"""

from __future__ import annotations

from mininet.link import TCIntf

BURST = "15k"
BURST_BYTES = 15 * 1024
QUEUE_FRAMES = 1000
FULL_FRAME_BYTES = 1514           # Ethernet header + a 1,500-byte MTU
QUEUE_LIMIT_BYTES = QUEUE_FRAMES * FULL_FRAME_BYTES
QDISC = "tbf"                     # what Network checks each shaped interface for
# With segmentation offload (topologies/net.py) a host's TCP send leaves as one frame of up to
# this many segments: as many full-size frames as the bucket holds, so tbf passes a send whole
# and paces its bytes (tbf counts each segment's headers), instead of cutting it first.
SEGMENTS_PER_SEND = BURST_BYTES // FULL_FRAME_BYTES


def tbf_command(bw_mbit: float) -> str:
    """The tc command (Mininet's '%s qdisc ... dev %s' form) that shapes one interface.
    Its class is 5:1, where Mininet puts a netem child (bmv2's delay and loss)."""
    return (f"%s qdisc add dev %s root handle 5: tbf rate {bw_mbit:g}mbit burst {BURST} "
            f"limit {QUEUE_LIMIT_BYTES}")


def qdiscs_by_interface(tc_output: str) -> dict:
    """{interface: ["tbf root refcnt 2 rate 10Mbit burst 15Kb lat 9.1s", ...]} from the
    lines of `tc qdisc show` (every interface of a namespace): each qdisc as tc describes it,
    its handle and device left out, in tc's order (an unshaped veth shows "noqueue root")."""
    qdiscs: dict = {}
    for line in tc_output.splitlines():
        words = line.split()
        if len(words) < 5 or words[0] != "qdisc" or words[3] != "dev":
            continue
        kind, device, rest = words[1], words[4], words[5:]
        qdiscs.setdefault(device, []).append(" ".join([kind] + rest))
    return qdiscs


class ShapedIntf(TCIntf):
    """A TCIntf whose `bw` is a tbf (see the module docstring); delay, jitter and loss still
    go to Mininet's netem below it."""

    def bwCmds(self, bw=None, **ignored):          # noqa: N802 (Mininet's name)
        # No upper limit (Mininet's htb path refuses more than 1000 Mbit/s); a rate tc
        # refuses leaves no tbf, which Network's check reports.
        if bw is None or bw <= 0:
            return [], " root "
        return [tbf_command(bw)], " parent 5:1 "
