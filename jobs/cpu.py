"""Where the emulator's CPU goes during a run: the workers' own CPU seconds (from their
reports) and the switch processes' (read from /proc before and after), against the cores
the machine has.

An emulated network is only as fast as the machine that runs it: when the workers and the
switches together keep nearly every core busy, a run's time measures the machine, not the
links or the algorithm.  compare records these numbers in results.json and says so in one
line when it happens, so that no one reads a CPU-bound time as a network result.  Kernel
work done outside these processes (softirqs in ksoftirqd, say) is not in their sum, which is
a lower bound; the machine's busy time over the run (/proc/stat) less that sum is recorded
too ("other_cpu_seconds": the kernel outside the processes, and anything else running), so
that `paced_by` can name what set the pace of a run that was not at its link bound.
"""

from __future__ import annotations

import os
from typing import Optional

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Busy cores / cores at or above which a run counts as bound by the machine's CPU.
CPU_BOUND_SHARE = 0.8


def cores() -> int:
    return len(os.sched_getaffinity(0))


def process_cpu_seconds(pid: int) -> Optional[float]:
    """User plus system CPU seconds of a process (all its threads); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return stat_cpu_seconds(handle.read())
    except OSError:
        return None


def stat_cpu_seconds(text: str) -> Optional[float]:
    """User plus system CPU seconds from the text of a /proc/<pid>/stat; None if it is not one."""
    try:
        fields = text.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (IndexError, ValueError):
        return None


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent not idle since boot (/proc/stat: user,
    nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as handle:
        fields = handle.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def paced_by(worker_seconds: Optional[float], switch_seconds: Optional[float],
             other_seconds: Optional[float], busy: Optional[float], available: int,
             retransmissions: float = 0) -> str:
    """What set a run's pace when not its links: "cpu: hosts" (the workers' processes),
    "cpu: switches" or "cpu: kernel" (the machine's busy time outside both), whichever used
    most, when the machine was CPU-bound (CPU_BOUND_SHARE of its busy cores from go to the
    last exit, the kernel counted); else "losses" when segments or packets were resent (a queue
    overflowed: the links idled while senders waited to resend), else "latency" (neither the
    cores nor, the caller says, the links were full)."""
    shares = {"hosts": worker_seconds or 0.0, "switches": switch_seconds or 0.0,
              "kernel": other_seconds or 0.0}
    if busy is not None and busy >= CPU_BOUND_SHARE * available:
        return "cpu: " + max(shares, key=shares.get)
    return "losses" if retransmissions else "latency"


def switch_cpu_seconds(switches) -> dict:
    """{switch name: CPU seconds} of the switches' processes (those with a running one).  A
    process several switches share (topologies.switches.SwitchGroup) counts once, under the
    first of them."""
    seconds = {}
    counted = set()
    for switch in switches:
        process = getattr(switch, "process", None)
        if process is not None and process.poll() is None:
            if id(process) in counted:
                continue
            counted.add(id(process))
            if getattr(switch, "isRemote", False):    # on another server (topologies.cluster)
                value = stat_cpu_seconds(switch.remote_stat())
            else:
                value = process_cpu_seconds(process.pid)
            if value is not None:
                seconds[switch.name] = value
    return seconds


def switch_cpu_difference(after: dict, before: dict) -> Optional[float]:
    """CPU seconds the switches used between two readings (a switch that restarted in
    between counts from its new start), None without readings."""
    if not after:
        return None
    return sum(value - before.get(name, 0.0) if value >= before.get(name, 0.0) else value
               for name, value in after.items())


def busy_cores(worker_seconds: Optional[float], switch_seconds: Optional[float],
               seconds: Optional[float]) -> Optional[float]:
    """Cores kept busy on average over a run of `seconds` wall time."""
    if not seconds or worker_seconds is None:
        return None
    return (worker_seconds + (switch_seconds or 0.0)) / seconds


def cpu_bound_note(mode: str, busy: Optional[float], available: int) -> Optional[str]:
    """The one-line warning for a run that kept (nearly) every core busy, else None."""
    if busy is None or busy < CPU_BOUND_SHARE * available:
        return None
    return (f"{mode}: workers and switches kept {busy:.1f} of {available} cores busy: this "
            f"time measures the machine running the emulation, not the links")
