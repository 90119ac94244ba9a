"""Link loss for switches that cannot drop frames themselves (bmv2), without sch_netem.

The built-in switch impairs its own ports (--impair); bmv2 has no such option, and the
kernels here and in CI have no sch_netem, nor tc's gact or matchall (which could also drop at
random).  What they have is tc's bpf classifier, which the hosts' accept program uses already
(topologies/hostaddr.py).  So a lossy link gets, on the egress of each of its two interfaces,
a small eBPF program (sched_cls, direct action) that drops each frame with the link's loss
probability: a random 32-bit number from bpf_get_prandom_u32, halved, compared with
round(p / 100 * 2**31).  Each direction is impaired once, at the end that sends it, as netem
on both ends of a Mininet TCLink would be.

`attach(interfaces, pinned)` puts the programs on (network namespace, interface) pairs; the
frames they drop are counted by the interface's clsact qdisc (`tc -s qdisc show`: "dropped"),
which `dropped(namespace, interface)` reads.  The filters, and the programs with them, go
with the interfaces.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import subprocess
from typing import Optional

from topologies import hostaddr

BPF_FUNC_GET_PRANDOM_U32 = 7
TC_ACT_OK, TC_ACT_SHOT = 0, 2
LOSS_FILTER_PREF = 7          # the egress filter's preference and handle
THRESHOLD_SCALE = 1 << 31


class LinkLossError(RuntimeError):
    """The loss program could not be loaded or attached (one line)."""


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def threshold(loss_pct: float) -> int:
    """The 31-bit threshold under which a frame is dropped."""
    if not 0 <= loss_pct <= 100:
        raise ValueError(f"loss is a percentage (0..100), got {loss_pct:g}")
    return min(THRESHOLD_SCALE - 1, round(loss_pct / 100 * THRESHOLD_SCALE))


def loss_instructions(loss_pct: float) -> bytes:
    """eBPF (sched_cls, direct action): TC_ACT_SHOT with probability loss_pct %, else
    TC_ACT_OK."""
    return b"".join([
        _insn(0x85, imm=BPF_FUNC_GET_PRANDOM_U32),     # r0 = bpf_get_prandom_u32()
        _insn(0x77, dst=0, imm=1),                     # r0 >>= 1 (31 bits: a positive imm)
        _insn(0xa5, dst=0, off=2, imm=threshold(loss_pct)),   # if r0 < T: goto drop
        _insn(0xb7, dst=0, imm=TC_ACT_OK),
        _insn(0x95),
        _insn(0xb7, dst=0, imm=TC_ACT_SHOT),           # drop:
        _insn(0x95),
    ])


def program_name(loss_pct: float) -> str:
    return "loss-" + f"{loss_pct:g}".replace(".", "_")


@contextlib.contextmanager
def loss_programs(rates):
    """{loss percent: pinned path} of one loss program per rate in `rates`, pinned while the
    context lasts (attach them inside it; the filters keep them loaded afterwards)."""
    fds = {}
    try:
        for rate in sorted(set(rates)):
            try:
                fds[rate] = hostaddr.load_program(loss_instructions(rate),
                                                  f"the link loss program ({rate:g}%)")
            except hostaddr.HostAddressingError as e:
                raise LinkLossError(str(e)) from None
        try:
            with hostaddr.pinned_programs({program_name(r): fd for r, fd in fds.items()}) \
                    as paths:
                yield {rate: paths[program_name(rate)] for rate in fds}
        except hostaddr.HostAddressingError as e:
            raise LinkLossError(str(e)) from None
    finally:
        for fd in fds.values():
            os.close(fd)


def tc_batch(interface: str, pinned: str) -> str:
    """`tc -batch` lines putting a pinned loss program on an interface's egress, next to
    whatever clsact filters it has (the hosts' accept program is on their ingress)."""
    return (f"filter replace dev {interface} egress pref {LOSS_FILTER_PREF} "
            f"handle {LOSS_FILTER_PREF} bpf da object-pinned {pinned}\n")


def _in_namespace(namespace: Optional[str], command: list) -> list:
    return command if namespace is None else ["nsenter", f"--net={namespace}"] + command


def attach(ends: list) -> None:
    """Attach (namespace file or None for ours, interface, pinned program path) ends."""
    for namespace, interface, pinned in ends:
        shown = subprocess.run(_in_namespace(namespace, ["tc", "qdisc", "show", "dev",
                                                          interface]),
                               capture_output=True, text=True)
        script = tc_batch(interface, pinned)
        if "qdisc clsact" not in shown.stdout:
            script = f"qdisc add dev {interface} clsact\n" + script
        result = subprocess.run(_in_namespace(namespace, ["tc", "-batch", "-"]), input=script,
                                capture_output=True, text=True)
        if result.returncode != 0:
            detail = " ".join((result.stderr + result.stdout).split())[-200:] or "failed"
            raise LinkLossError(f"{interface}: tc: {detail}")


_DROPPED = re.compile(r"qdisc clsact .*?dropped (\d+)", re.S)


def dropped(namespace: Optional[str], interface: str) -> int:
    """Frames the interface's clsact qdisc dropped (0 if it has none or is gone)."""
    result = subprocess.run(_in_namespace(namespace, ["tc", "-s", "qdisc", "show", "dev",
                                                       interface]),
                            capture_output=True, text=True)
    match = _DROPPED.search(result.stdout)
    return int(match.group(1)) if match else 0
