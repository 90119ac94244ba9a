"""Register reads for the lab CLI: P4Runtime first, bmv2's Thrift CLI when P4Runtime refuses.

bmv2 is not installed everywhere, so simple_switch_CLI's side is recorded text written from its
documented output format: a banner, then per command the `RuntimeCmd: ` prompt followed by
`NAME[INDEX]= VALUE`.
"""

import subprocess

import pytest

from controller import SwitchError
from fabric.telemetry import (SLOT_REGISTERS, RegisterReader, SlotCell, TelemetryError,
                                  format_slots, format_status, parse_register_reads,
                                  read_slots, register_read_script, slot_cells,
                                  thrift_cli_command)

PREFIX = "AggIngress.aggregation."

BANNER = ("Obtaining JSON from switch...\n"
          "Done\n"
          "Control utility for runtime P4 table manipulation\n")


def test_parse_answers_after_prompts():
    text = (BANNER
            + f"RuntimeCmd: {PREFIX}slot_state.owner[6]= 3\n"
            + f"RuntimeCmd: {PREFIX}slot_state.seen[6]= 4294967295\n"
            + f"RuntimeCmd: RuntimeCmd: {PREFIX}values.max_exponent[7]=  131\n"
            + "RuntimeCmd: \n")
    assert parse_register_reads(text) == {
        (PREFIX + "slot_state.owner", 6): 3,
        (PREFIX + "slot_state.seen", 6): 4294967295,
        (PREFIX + "values.max_exponent", 7): 131,
    }


def test_parse_ignores_banner_and_errors():
    text = BANNER + "RuntimeCmd: Error: register index 9000 is out of range\nRuntimeCmd: \n"
    assert parse_register_reads(text) == {}


def test_cli_command_and_script():
    assert thrift_cli_command(9091) == ["simple_switch_CLI", "--thrift-port", "9091"]
    assert register_read_script([("a.r", 0), ("a.r", 5), ("b", 2)]) == \
        "register_read a.r 0\nregister_read a.r 5\nregister_read b 2\n"


class FakeHelper:
    """Resolves register suffixes the way the controller's P4InfoHelper does."""

    def __init__(self, names):
        self.names = names

    def register(self, suffix):
        (name,) = [n for n in self.names if n == suffix or n.endswith("." + suffix)]

        class Register:
            class preamble:
                pass
        Register.preamble.name = name
        return Register


class FakeConnection:
    """A controller SwitchConnection whose register reads answer from `values` or fail."""

    def __init__(self, values, error=None):
        self.helper = FakeHelper(sorted({name for name, _ in values}))
        self.values = values
        self.error = error
        self.reads = []

    def read_register(self, name, index):
        self.reads.append((name, index))
        if self.error:
            raise self.error
        return self.values[(name, index)]


def slot_values(base, count, generation=7):
    """Register contents for a job's cells: even cells complete, odd ones collecting."""
    values = {}
    for _, version, cell in slot_cells(base, count):
        row = {"owner": generation, "offset": 64 * cell, "seen": 0b101 if version else 0b111,
               "count": 2 if version else 0, "ready": 0 if version else 1,
               "exponent": 0, "overflow": 0, "value0": (-cell) % (1 << 32)}
        for column, suffix in SLOT_REGISTERS:
            values[(PREFIX + suffix, cell)] = row[column]
    return values


def recorded_cli(values):
    """A stand-in for subprocess.run(simple_switch_CLI ...) answering each register_read
    line of its input from `values`, in the CLI's output format; it records the calls."""
    calls = []

    def run(command, input, capture_output, text, timeout):
        calls.append((command, input))
        out = [BANNER.rstrip("\n")]
        for line in input.splitlines():
            _, name, index = line.split()
            out.append(f"RuntimeCmd: {name}[{index}]= {values[(name, int(index))]}")
        out.append("RuntimeCmd: ")
        return subprocess.CompletedProcess(command, 0, "\n".join(out) + "\n", "")
    return run, calls


def test_p4runtime_reads_when_the_switch_serves_them():
    values = slot_values(base=3, count=2)
    connection = FakeConnection(values)
    run, calls = recorded_cli(values)
    cells = read_slots(RegisterReader("s1", connection, thrift_port=9090, run=run), 3, 2)
    assert calls == []               # p4switch: no Thrift at all
    assert [(c.slot, c.version, c.cell) for c in cells] == [(0, 0, 6), (0, 1, 7), (1, 0, 8),
                                                             (1, 1, 9)]
    assert cells[1] == SlotCell(slot=0, version=1, cell=7, owner=7, offset=448, seen=0b101,
                                count=2, ready=0, exponent=0, overflow=0, value0=2**32 - 7)
    assert cells[1].first_value == -7


def test_thrift_fallback_when_p4runtime_refuses():
    values = slot_values(base=0, count=2)
    # what bmv2's P4Runtime server (PI) answers, as the controller reports it
    refused = SwitchError("switch s2: Read failed: UNIMPLEMENTED: Register reads are not "
                          "supported yet")
    connection = FakeConnection(values, error=refused)
    run, calls = recorded_cli(values)
    reader = RegisterReader("s2", connection, thrift_port=9091, run=run)
    cells = read_slots(reader, 0, 2)
    assert reader.via_thrift
    (command, script), = calls
    assert command == ["simple_switch_CLI", "--thrift-port", "9091"]
    lines = script.splitlines()
    assert len(lines) == len(SLOT_REGISTERS) * 4
    assert lines[0] == f"register_read {PREFIX}slot_state.owner 0"
    # one cell's registers together (index-major), so a row is read at nearly one moment
    assert lines[1] == f"register_read {PREFIX}slot_state.round_offset 0"
    assert lines[-1] == f"register_read {PREFIX}values.value0.cells 3"
    assert [(c.cell, c.seen, c.count, c.ready) for c in cells] == [
        (0, 0b111, 0, 1), (1, 0b101, 2, 0), (2, 0b111, 0, 1), (3, 0b101, 2, 0)]
    # once refused, later reads go straight to Thrift
    tried = len(connection.reads)
    read_slots(reader, 0, 2)
    assert len(connection.reads) == tried and len(calls) == 2


def test_other_p4runtime_errors_are_not_hidden():
    values = slot_values(base=0, count=1)
    connection = FakeConnection(values, error=SwitchError("switch s1: Read failed: "
                                                          "UNAVAILABLE: connection reset"))
    run, calls = recorded_cli(values)
    with pytest.raises(SwitchError, match="UNAVAILABLE"):
        read_slots(RegisterReader("s1", connection, thrift_port=9090, run=run), 0, 1)
    assert calls == []


def test_refused_without_thrift_port():
    values = slot_values(base=0, count=1)
    connection = FakeConnection(values, error=SwitchError("UNIMPLEMENTED"))
    with pytest.raises(TelemetryError, match="s1 refuses register reads over P4Runtime"):
        read_slots(RegisterReader("s1", connection), 0, 1)


def test_unanswered_read_names_the_cli_complaint():
    values = slot_values(base=0, count=1)
    connection = FakeConnection(values, error=SwitchError("UNIMPLEMENTED"))

    def run(command, **kwargs):
        return subprocess.CompletedProcess(
            command, 0, BANNER + "RuntimeCmd: Error: Invalid register operation (ERROR_INDEX)\n",
            "")
    with pytest.raises(TelemetryError) as info:
        read_slots(RegisterReader("s3", connection, thrift_port=9092, run=run), 0, 1)
    assert str(info.value) == (f"switch s3: simple_switch_CLI did not return "
                               f"{PREFIX}slot_state.owner[0]: Error: Invalid register operation "
                               "(ERROR_INDEX)")


def test_missing_thrift_cli_is_one_line(monkeypatch):
    values = slot_values(base=0, count=1)
    connection = FakeConnection(values, error=SwitchError("UNIMPLEMENTED"))
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(TelemetryError, match="need simple_switch_CLI .* not on PATH"):
        read_slots(RegisterReader("s1", connection, thrift_port=9090), 0, 1)


def test_format_slots():
    cells = [SlotCell(0, 0, 10, owner=7, offset=0, seen=0b1011, count=3, ready=0, exponent=0,
                      overflow=0, value0=12),
             SlotCell(0, 1, 11, owner=7, offset=2048, seen=0b1111, count=0, ready=1,
                      exponent=129, overflow=1, value0=2**31),
             SlotCell(1, 0, 12, owner=2, offset=64, seen=1, count=0, ready=1, exponent=0,
                      overflow=0, value0=5),
             SlotCell(1, 1, 13, owner=7, offset=64, seen=0b1111, count=0, ready=0,
                      exponent=0, overflow=0, value0=2**31 - 1)]
    lines = format_slots("s4", 3, 7, 4, cells).splitlines()
    assert lines[0] == "s4 job 3 (generation 7, fan-in 4): 2 slots x 2 versions"
    assert lines[1].split() == ["slot", "ver", "cell", "state", "offset", "seen", "count",
                                "ready", "exp", "ovf", "value[0]"]
    assert lines[2].split() == ["0", "0", "10", "collecting", "0", "1011", "3", "0", "0", "0",
                                "12"]
    assert lines[3].split() == ["0", "1", "11", "result", "2048", "1111", "0", "1", "129", "1",
                                "-2147483648"]
    assert lines[4].split() == ["1", "0", "12", "empty", "-", "-", "-", "-", "-", "-", "-"]
    assert lines[5].split() == ["1", "1", "13", "complete", "64", "1111", "0", "0", "0", "0",
                                "2147483647"]
    assert lines[6] == "cells: 1 collecting, 1 complete, 1 empty, 1 result"


def test_format_status():
    status = {"s1": {"drops": {}, "events": {"added": 12, "completed": 4}},
              "s2": {"drops": {"wrong_k": 3}, "events": {}}}
    assert format_status(status).splitlines() == [
        "s1: events: added 12, completed 4; drops: none",
        "s2: events: none; drops: wrong_k 3"]
