"""The job contract: what one collective run on the fabric is, as every layer agrees on it.

A job is one collective (allreduce, reduce-scatter, ...) run by a set of ranks in one mode
(ina, or a host-only algorithm). This module is the one home of the values the modes, the
hosts' command lines, the lab and the simulator share; it imports nothing but contracts.
"""

from __future__ import annotations

from typing import Optional

from contracts.wire import INA_FRAME_OVERHEAD, VALUE_BYTES

DEFAULT_TIMEOUT_MS = 100.0
TIMEOUT_WINDOWS = 4          # a timeout covers this many windows' worth of link time
SWITCH_TIMEOUT_WINDOWS = 3   # ... and this many windows' worth of a slow switch's work


def ina_timeout_ms(bw_mbit: Optional[float], window: int, k: int,
                   round_trip_ms: float = 0.0, switch_ms: float = 0.0) -> float:
    """The INA worker's first retransmission timeout, scaled to the link: on a slow link one
    window of packets takes long to serialize, and a timeout shorter than the queueing
    delay only adds retransmissions to a link that is already full.  round_trip_ms: the
    links' delays there and back (topologies.impairment.longest_round_trip_ms), added on
    top, so delayed links do not time out answers that are merely on their way.
    switch_ms: the switches' time for one window (jobs.modes.switch_window_ms; bmv2
    takes about a millisecond per packet at K = 64, so a window of 4 x 32 packets is 150 ms
    of work and the 100 ms default resent nearly every round: 11.3 s instead of 7.4 s at
    star:4, 100,000 elements)."""
    if not bw_mbit:
        link_ms = DEFAULT_TIMEOUT_MS
    else:
        window_ms = window * (VALUE_BYTES * k + INA_FRAME_OVERHEAD) * 8 / (bw_mbit * 1e3)
        link_ms = max(DEFAULT_TIMEOUT_MS, round(TIMEOUT_WINDOWS * window_ms))
    return max(link_ms, round(SWITCH_TIMEOUT_WINDOWS * switch_ms)) + round_trip_ms
