"""Switch telemetry for the lab CLI: the slot registers of a job and the drop/event counters.

Register reads go through the controller's SwitchConnection: over P4Runtime on p4switch, over
bmv2's Thrift API on bmv2 (a connection made with its Thrift port: controller/bmv2_registers.py;
bmv2's P4Runtime server refuses register reads with UNIMPLEMENTED).  Everything the `slots`
command shows comes through `RegisterReader.read`, whichever switch runs.
"""

from __future__ import annotations

from dataclasses import dataclass

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


# -- one reader for both targets ---------------------------------------------------------

class RegisterReader:
    """Reads registers of one switch by their P4Info names through `connection` (a controller
    SwitchConnection: P4Runtime on p4switch, Thrift on bmv2)."""

    def __init__(self, switch: str, connection):
        self.switch = switch
        self.connection = connection

    def full_name(self, suffix: str) -> str:
        """The P4Info name of a register given by a unique suffix ("slot_state.count")."""
        return self.connection.helper.register(suffix).preamble.name

    def read(self, names: list, indexes: list) -> dict:
        """{name: {index: value}} for every name (P4Info names or unique suffixes) and index."""
        full = {name: self.full_name(name) for name in names}
        # index-major: one cell's registers are read close together while packets flow
        reads = [(full[name], index) for index in indexes for name in names]
        values = {read: self.connection.read_register(*read) for read in reads}
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
