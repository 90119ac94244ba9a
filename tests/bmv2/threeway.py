"""Three back ends, one program: the same STF commands through our Python switch (the
reference of our own), our C back end and real bmv2 (p4c-bm2-ss + simple_switch), packet by
packet, then registers, counters and digests.

Per packet, bmv2 may interleave the packets of different ports (its egress threads run in
parallel), so the packets of one input are compared port by port, in order; Python and C
are compared as tests/native does (the whole list, in order).  Registers and counters to
compare are taken from p4c's P4Info: every register cell (bmv2's Thrift API reads at most
64 bits, saturated at 2**63-1), every indexed counter cell, and each direct counter's
entries (in total, and one by one for those the STF named with ``= NAME``).
"""

import collections
import pathlib
import sys
from dataclasses import dataclass, field

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
for extra in (REPO / "tests" / "native", REPO / "tests" / "tools" / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from parity import Clock, make_pair  # noqa: E402

import p4switch  # noqa: E402
from p4switch import stf  # noqa: E402
from p4switch.bmv2.process import SimpleSwitch  # noqa: E402
from p4switch.bmv2.runner import Bmv2StfRunner, needs_trace  # noqa: E402

I64_MAX = (1 << 63) - 1


@dataclass
class Report:
    problems: list = field(default_factory=list)
    packets_in: int = 0
    packets_out: int = 0            # what bmv2 sent, all ports
    digests: int = 0
    cells: int = 0                  # register and counter cells compared

    def __str__(self):
        return "\n".join(self.problems[:20]) + (
            f"\n... {len(self.problems) - 20} more" if len(self.problems) > 20 else "")


def by_port(packets):
    ports = collections.defaultdict(list)
    for port, data in packets:
        ports[port].append(bytes(data))
    return dict(ports)


def _outcome(function, *args):
    try:
        return function(*args)
    except Exception as exc:  # noqa: BLE001 - every back end must fail the same way
        return (type(exc).__name__, str(exc).split(":")[-1].strip())


def run_three(toolchain, compiled, program, commands, filename="<stf>"):
    """A Report of every difference between Python, C and bmv2 on ``commands``."""
    report = Report()
    python, native, _ = make_pair(program)
    runners = {"python": stf.StfRunner(python, program, filename),
               "c": stf.StfRunner(native, program, filename)}
    with SimpleSwitch(toolchain, compiled.json_path, trace=needs_trace(compiled)) as switch:
        runners["bmv2"] = Bmv2StfRunner(switch, compiled, filename)
        for cmd in commands:
            if isinstance(cmd, stf.CONTROL_COMMANDS):
                results = {name: _outcome(r.apply_control, cmd) for name, r in runners.items()}
                if len({repr(type(v)) for v in results.values()}) != 1:
                    report.problems.append(f"{filename}:{cmd.line}: control command: {results}")
            elif isinstance(cmd, stf.PacketCmd):
                report.packets_in += 1
                out = {name: _outcome(r.send_packet, cmd.port, cmd.data)
                       for name, r in runners.items()}
                where = (f"{filename}: packet {report.packets_in} (line {cmd.line}) on port "
                         f"{cmd.port}")
                if out["python"] != out["c"]:
                    report.problems.append(f"{where}: python {out['python']!r} != c {out['c']!r}")
                if isinstance(out["bmv2"], tuple) or isinstance(out["python"], tuple):
                    report.problems.append(f"{where}: python {out['python']!r}, "
                                           f"bmv2 {out['bmv2']!r}")
                    continue
                report.packets_out += len(out["bmv2"])
                if by_port(out["python"]) != by_port(out["bmv2"]):
                    report.problems.append(f"{where}: python {by_port(out['python'])} != "
                                           f"bmv2 {by_port(out['bmv2'])}")
        compare_state(report, runners, compiled, filename)
        digests = {name: [(n, list(v)) for n, v in r.digests] for name, r in runners.items()}
        report.digests = len(digests["bmv2"])
        if not digests["python"] == digests["c"] == digests["bmv2"]:
            report.problems.append(f"{filename}: digests {digests}")
    return report


def compare_state(report, runners, compiled, filename):
    """Registers and counters named in p4c's P4Info, ours against bmv2's."""
    python, native = runners["python"].switch, runners["c"].switch
    control = runners["bmv2"].control
    for info in compiled.p4info.registers:
        name = info.preamble.name
        width = info.type_spec.bitstring.bit.bitwidth or info.type_spec.bitstring.int.bitwidth
        if width > 64:
            continue                        # bmv2's Thrift API cannot read it
        ours = [python.register(name).read(i) for i in range(info.size)]
        c_cells = [native.register(name).read(i) for i in range(info.size)]
        theirs = control.register_cells(name)
        if width == 64:                     # bmv2's Thrift API saturates at 2**63 - 1
            compare_cells(report, filename, f"register {name}", ours, c_cells,
                          [min(v, I64_MAX) for v in theirs], clamp=I64_MAX)
        else:
            compare_cells(report, filename, f"register {name}", ours, c_cells, theirs)
    for info in compiled.p4info.counters:
        name = info.preamble.name
        compare_cells(report, filename, f"counter {name}",
                      [tuple(python.counter(name).read(i)) for i in range(info.size)],
                      [tuple(native.counter(name).read(i)) for i in range(info.size)],
                      [control.counter_value(name, i) for i in range(info.size)])
    tables = {t.preamble.id: t.preamble.name for t in compiled.p4info.tables}
    std = control.clients.standard
    for info in compiled.p4info.direct_counters:
        table = tables[info.direct_table_id]
        ours = [(e.packets, e.bytes) for e in python.table(table).entries()]
        total = (sum(p for p, _ in ours), sum(b for _, b in ours))
        theirs = [std.bm_mt_read_counter(0, table, e.entry_handle)
                  for e in std.bm_mt_get_entries(0, table)]
        bmv2_total = (sum(v.packets for v in theirs), sum(v.bytes for v in theirs))
        report.cells += 1
        if total != bmv2_total:
            report.problems.append(f"{filename}: direct counter {info.preamble.name}: "
                                   f"python {total} != bmv2 {bmv2_total} (packets, bytes)")
        for handle_name, (t, _) in control.entries.items():
            if t != table:
                continue
            entry, _, _ = runners["python"].entries[handle_name]
            report.cells += 1
            if (entry.packets, entry.bytes) != control.counter_value(info.preamble.name,
                                                                      "$" + handle_name):
                report.problems.append(f"{filename}: direct counter {info.preamble.name} "
                                       f"entry {handle_name} differs")


def compare_cells(report, filename, what, ours, c_cells, theirs, clamp=None):
    """One register's or counter's cells: Python against C exactly, then Python against bmv2
    (with `clamp`, our values saturated as bmv2's Thrift API reports them)."""
    if c_cells != ours:
        report.problems.append(f"{filename}: {what}: python != c")
    report.cells += len(ours)
    if clamp is not None:
        ours = [min(v, clamp) for v in ours]
    if ours != theirs:
        bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
        report.problems.append(f"{filename}: {what}: cells {bad[:8]} differ: "
                               f"python {[ours[i] for i in bad[:8]]}, "
                               f"bmv2 {[theirs[i] for i in bad[:8]]}")


def without_parser_errors(program, commands):
    """``commands`` less the packets that meet a parser error on our Python switch.  Such a
    packet leaves headers invalid, and P4 leaves the fields of an invalid header unspecified:
    bmv2 reads what an earlier packet left in its PHV (its PHVs are pooled and reused), we
    read 0, so a program that reads them (most test programs do, for a short packet) is
    compared on the packets it parses in full only (docs/bmv2.md)."""
    lines = []
    switch = p4switch.Switch(program, backend="python", clock=Clock(), seed=1, log=lines.append)
    runner = stf.StfRunner(switch, program)
    kept = []
    for cmd in commands:
        if isinstance(cmd, stf.CONTROL_COMMANDS):
            runner.apply_control(cmd)
        elif isinstance(cmd, stf.PacketCmd):
            del lines[:]
            try:
                switch.process_packet(cmd.port, cmd.data)
            except Exception:  # noqa: BLE001 - the comparison will show it
                pass
            if any(line.startswith("Parser error") for line in lines):
                continue
        kept.append(cmd)
    return kept
