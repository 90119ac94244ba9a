"""Switch telemetry for the lab CLI: the slot registers of a job and the drop/event counters.

Register reads go through the controller's SwitchConnection: over P4Runtime on p4switch, over
bmv2's Thrift API on bmv2 (a connection made with its Thrift port: controller/bmv2_registers.py;
bmv2's P4Runtime server refuses register reads with UNIMPLEMENTED).  For a connection made
without one, that refuses them, `RegisterReader` can still fall back to bmv2's Thrift runtime
CLI: it pipes `register_read NAME INDEX` lines into `simple_switch_CLI --thrift-port N` and
parses the `NAME[INDEX]= VALUE` lines that the CLI prints (after its `RuntimeCmd: ` prompt).
Everything the `slots` command shows comes through `RegisterReader.read`, whichever switch runs.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Callable, Optional

THRIFT_CLI = "simple_switch_CLI"
THRIFT_CLI_TIMEOUT_S = 60.0

# (column, register name suffix in p4src; docs/protocol.md "Slots and versions")
SLOT_REGISTERS = (
    ("owner", "slot_state.owner"),
    ("offset", "slot_state.round_offset"),
    ("seen", "slot_state.seen"),
    ("count", "slot_state.count"),
    ("ready", "slot_state.result_ready"),
    ("exponent", "values.max_exponent"),
    ("overflow", "values.overflow"),
    ("value0", "values.value0.cells"),     # the first of the K values: running sum, then result
)


class TelemetryError(RuntimeError):
    """A read that could not be done (one-line message naming the switch)."""


# -- bmv2's Thrift runtime CLI ---------------------------------------------------------

def thrift_cli_command(thrift_port: int) -> list:
    return [THRIFT_CLI, "--thrift-port", str(thrift_port)]


def register_read_script(reads: list) -> str:
    """simple_switch_CLI input reading each (register name, index) of `reads`."""
    return "".join(f"register_read {name} {index}\n" for name, index in reads)


# "RuntimeCmd: NAME[INDEX]= VALUE" -- the prompt is printed before each answer when the
# commands come from a pipe, so the answer may share its line with one or more prompts.
_READ_ANSWER = re.compile(r"([A-Za-z_][\w.$]*)\[(\d+)\]=\s*(-?\d+)\s*$")
_PROMPT = "RuntimeCmd:"


def parse_register_reads(text: str) -> dict:
    """{(register name, index): value} of every `NAME[INDEX]= VALUE` answer in the output of
    simple_switch_CLI.  Other lines (banner, prompts, errors) are not answers."""
    values = {}
    for line in text.splitlines():
        answer = _READ_ANSWER.search(_strip_prompts(line))
        if answer:
            values[(answer.group(1), int(answer.group(2)))] = int(answer.group(3))
    return values


def _strip_prompts(line: str) -> str:
    line = line.strip()
    while line.startswith(_PROMPT):
        line = line[len(_PROMPT):].strip()
    return line


def cli_complaint(text: str) -> str:
    """The first line of simple_switch_CLI output that is neither banner nor answer: why a
    read was not answered."""
    banner = ("Obtaining JSON from switch", "Done", "Control utility for runtime P4 table")
    for line in text.splitlines():
        line = _strip_prompts(line)
        if line and not line.startswith(banner) and not _READ_ANSWER.search(line):
            return line
    return "no answer"


def thrift_register_reads(switch: str, thrift_port: int, reads: list,
                          run: Callable = subprocess.run) -> dict:
    """{(name, index): value} for `reads`, through simple_switch_CLI on `thrift_port`."""
    try:
        result = run(thrift_cli_command(thrift_port), input=register_read_script(reads),
                     capture_output=True, text=True, timeout=THRIFT_CLI_TIMEOUT_S)
    except FileNotFoundError:
        raise TelemetryError(f"switch {switch}: register reads need {THRIFT_CLI} "
                             "(bmv2's Thrift CLI), which is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise TelemetryError(f"switch {switch}: {THRIFT_CLI} on Thrift port {thrift_port} "
                             f"did not answer in {THRIFT_CLI_TIMEOUT_S:.0f} s") from None
    values = parse_register_reads(result.stdout)
    missing = [read for read in reads if read not in values]
    if missing:
        name, index = missing[0]
        raise TelemetryError(f"switch {switch}: {THRIFT_CLI} did not return {name}[{index}]: "
                             f"{cli_complaint(result.stdout + result.stderr)}")
    return values


# -- one reader for both targets ---------------------------------------------------------

def refuses_register_reads(error: Exception) -> bool:
    """bmv2's P4Runtime answers register reads with UNIMPLEMENTED."""
    return "UNIMPLEMENTED" in str(error)


class RegisterReader:
    """Reads registers of one switch by their P4Info names: over P4Runtime through
    `connection` (a controller SwitchConnection), or -- once the switch refused that -- over
    bmv2's Thrift CLI at `thrift_port`."""

    def __init__(self, switch: str, connection, thrift_port: Optional[int] = None,
                 run: Callable = subprocess.run):
        self.switch = switch
        self.connection = connection
        self.thrift_port = thrift_port
        self.run = run
        self.via_thrift = False

    def full_name(self, suffix: str) -> str:
        """The P4Info name of a register given by a unique suffix ("slot_state.count")."""
        return self.connection.helper.register(suffix).preamble.name

    def read(self, names: list, indexes: list) -> dict:
        """{name: {index: value}} for every name (P4Info names or unique suffixes) and index."""
        full = {name: self.full_name(name) for name in names}
        # index-major: one cell's registers are read close together while packets flow
        reads = [(full[name], index) for index in indexes for name in names]
        if not self.via_thrift:
            try:
                values = {read: self.connection.read_register(*read) for read in reads}
                return _by_name(names, full, indexes, values)
            except Exception as error:      # SwitchError from controller.client
                if not refuses_register_reads(error):
                    raise
                if self.thrift_port is None:
                    raise TelemetryError(f"switch {self.switch} refuses register reads over "
                                         "P4Runtime and has no Thrift port") from None
                self.via_thrift = True
        values = thrift_register_reads(self.switch, self.thrift_port, reads, self.run)
        return _by_name(names, full, indexes, values)


def _by_name(names, full, indexes, values) -> dict:
    return {name: {index: values[(full[name], index)] for index in indexes} for name in names}


# -- the slots of a job on one switch --------------------------------------------------

@dataclass(frozen=True)
class SlotCell:
    """One slot version of a job on one switch, as its registers hold it."""
    slot: int                 # relative to the job (what packets carry)
    version: int
    cell: int                 # register index: 2 * (slot_base + slot) + version
    owner: int
    offset: int
    seen: int
    count: int
    ready: int
    exponent: int
    overflow: int
    value0: int               # as the register holds it (bit<32>)

    @property
    def first_value(self) -> int:
        """value0 as the signed int32 the packets carry."""
        return self.value0 - (1 << 32) if self.value0 >= 1 << 31 else self.value0

    def state(self, generation: int) -> str:
        if self.owner != generation:
            return "empty"          # never used by this installation of the job
        if self.count:
            return "collecting"
        return "result" if self.ready else "complete"


def slot_cells(slot_base: int, slot_count: int) -> list:
    """(slot, version, cell) of a job's slot range, in slot order."""
    return [(slot, version, 2 * (slot_base + slot) + version)
            for slot in range(slot_count) for version in (0, 1)]


def read_slots(reader: RegisterReader, slot_base: int, slot_count: int) -> list:
    """[SlotCell] of the job's slot range on the reader's switch."""
    cells = slot_cells(slot_base, slot_count)
    values = reader.read([suffix for _, suffix in SLOT_REGISTERS], [c for _, _, c in cells])
    return [SlotCell(slot, version, cell,
                     **{column: values[suffix][cell] for column, suffix in SLOT_REGISTERS})
            for slot, version, cell in cells]


def format_slots(switch: str, job_id: int, generation: int, fan_in: int, cells: list) -> str:
    """A table of the cells: state, round offset, contributor bitmap (contributor 0 on the
    right), count, result flag, exponent, overflow, first value; then a count per state."""
    lines = [f"{switch} job {job_id} (generation {generation}, fan-in {fan_in}): "
             f"{len(cells) // 2} slots x 2 versions",
             f"{'slot':>4} {'ver':>3} {'cell':>5}  {'state':<10} {'offset':>10} "
             f"{'seen':>{max(fan_in, 4)}} {'count':>5} {'ready':>5} {'exp':>3} {'ovf':>3} "
             f"{'value[0]':>11}"]
    totals: dict = {}
    for c in cells:
        state = c.state(generation)
        totals[state] = totals.get(state, 0) + 1
        if state == "empty":
            offset = seen = count = ready = exponent = overflow = value = "-"
        else:
            offset, count, ready = str(c.offset), str(c.count), str(c.ready)
            seen = format(c.seen, f"0{fan_in}b")
            exponent, overflow = str(c.exponent), str(c.overflow)
            value = str(c.first_value)
        lines.append(f"{c.slot:>4} {c.version:>3} {c.cell:>5}  {state:<10} {offset:>10} "
                     f"{seen:>{max(fan_in, 4)}} {count:>5} {ready:>5} {exponent:>3} "
                     f"{overflow:>3} {value:>11}")
    lines.append("cells: " + ", ".join(f"{n} {state}" for state, n in sorted(totals.items())))
    return "\n".join(lines)


# -- counters -----------------------------------------------------------------------------

def format_status(status: dict) -> str:
    """AggregationManager.status() as one line per switch (non-zero counters only)."""
    def named(values: dict) -> str:
        return ", ".join(f"{name} {packets}" for name, packets in values.items()) or "none"
    return "\n".join(f"{switch}: events: {named(s['events'])}; drops: {named(s['drops'])}"
                     for switch, s in status.items())
