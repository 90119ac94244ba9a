"""Where the switch's CPU goes per forwarded frame, from a `perf record -g` of the switch
process (bench_veth.py --perf): perf's inclusive ("children") share of a few kernel and C
functions, turned into disjoint parts of the frame's cost.

    parts = breakdown("/tmp/veth.perf.c")     # [(part, percent of the samples), ...]

The parts (each a difference of inclusive shares, so they do not overlap):
- receiving host's input run inside the switch's send: the softirq that veth's transmit
  leaves pending and the kernel runs before the send returns (do_softirq under
  __dev_queue_xmit): the peer's packet sockets, IP stack, waking its readers;
- veth transmit (dev_hard_start_xmit: veth_xmit, handing the frame to the peer);
- qdisc layer and transmit checks (the rest of __dev_queue_xmit);
- AF_PACKET send (the rest of packet_sendmsg: skb allocation, copy from user, header parse);
- sendmmsg per message (the rest of __sys_sendmmsg: message and iovec import, entry);
- waiting (ppoll: naps and sleeps, with the context switches they cost);
- the pipeline in C (p4n_* and tm_* functions, clock reads);
- user-space copies (memmove/memcpy: the transmit batch);
- the rest (the loop itself, receive-ring reads, timer interrupts, ...).
"""
from __future__ import annotations

import re
import subprocess

_LINE = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+\[([.k])\]\s+(\S+)")


def shares(path: str) -> tuple[dict, dict]:
    """{symbol: inclusive percent}, {symbol: self percent} of a perf.data file."""
    out = subprocess.run(["perf", "report", "-i", path, "--children", "--sort", "sym",
                          "--stdio", "-g", "none"], capture_output=True, text=True,
                         check=True).stdout
    children, own = {}, {}
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            children.setdefault(m.group(4), float(m.group(1)))
            own.setdefault(m.group(4), float(m.group(2)))
    return children, own


def breakdown(path: str) -> list[tuple[str, float]]:
    """The parts of the module docstring, as percent of the switch's samples."""
    children, own = shares(path)
    c = children.get
    softirq = c("__local_bh_enable_ip", 0.0)
    xmit = c("dev_hard_start_xmit", 0.0)
    queue = c("__dev_queue_xmit", 0.0)
    packet = c("packet_sendmsg", 0.0)
    sendmmsg = c("__sys_sendmmsg", 0.0)
    pipeline = sum(v for k, v in own.items() if k.startswith(("p4n_", "tm_")) or
                   k.startswith("__vdso_clock_gettime"))
    copies = sum(v for k, v in own.items() if k.startswith(("__memmove", "__memcpy")))
    parts = [
        ("receiving host's input, run in the switch's send", softirq),
        ("veth transmit", xmit),
        ("qdisc layer and transmit checks", queue - softirq - xmit),
        ("AF_PACKET send (skb, copy, parse)", packet - queue),
        ("sendmmsg per message (msghdr, iovec, entry)", sendmmsg - packet),
        ("waiting (ppoll naps, context switches)", c("__x64_sys_ppoll", 0.0)
         + c("__x64_sys_poll", 0.0)),
        ("the pipeline in C", pipeline),
        ("user-space copies", copies),
    ]
    parts.append(("the rest (loop, ring reads, interrupts)", 100.0 - sum(v for _, v in parts)))
    return [(name, round(value, 1)) for name, value in parts]
