"""Packet-rate benchmark: replay an STF file's packets through one Switch, unchecked.

The STF's control-plane commands (table entries, defaults, multicast groups, mirroring
sessions, register writes) are applied first; its ``packet`` commands are then sent round
robin until ``count`` packets have been processed.  Expectations are ignored.
"""

import time
from dataclasses import dataclass

from p4switch.stf import CONTROL_COMMANDS, PacketCmd, StfError, StfRunner


@dataclass
class BenchReport:
    packets: int
    packets_out: int
    seconds: float
    backend: str = "python"

    @property
    def pps(self):
        return self.packets / self.seconds if self.seconds > 0 else float("inf")


def run_bench(program, commands, count, filename="<stf>", backend=None):
    """Process ``count`` packets from ``commands``; a BenchReport."""
    from p4switch import Switch

    switch = Switch(program, backend=backend)
    runner = StfRunner(switch, program, filename)
    packets = []
    for cmd in commands:
        if isinstance(cmd, CONTROL_COMMANDS):
            runner.apply_control(cmd)
        elif isinstance(cmd, PacketCmd):
            packets.append((cmd.port, cmd.data))
    if not packets:
        raise StfError(f"{filename}: no packet commands to replay")
    switch.on_digest = lambda name, values: None      # nothing collects digests here
    process = switch.process_packet
    rounds, rest = divmod(count, len(packets))
    schedule = packets * rounds + packets[:rest]
    out = 0
    start = time.perf_counter()
    if hasattr(switch, "replay"):
        # The native back end replays in C: the rate of its pipeline, not of ctypes calls.
        out = switch.replay(packets, count)
    else:
        for port, data in schedule:
            out += len(process(port, data))
    seconds = time.perf_counter() - start
    return BenchReport(count, out, seconds, switch.backend)


def format_report(report):
    """Lines for the bench command; the last is ``pps: N`` (the command adds the back end)."""
    return "\n".join([f"packets: {report.packets}",
                      f"packets out: {report.packets_out}",
                      f"seconds: {report.seconds:.3f}",
                      f"pps: {int(report.pps)}"])
