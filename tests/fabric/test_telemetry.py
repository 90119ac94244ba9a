"""Register reads for the lab CLI, through the controller's connection (P4Runtime on p4switch,
Thrift on bmv2: tests/controller/test_bmv2_registers.py reads a real bmv2 that way), and the
slot and status tables made of them."""

import pytest

from controller import SwitchError
from fabric.telemetry import (SLOT_REGISTERS, RegisterReader, SlotCell, format_slots,
                              format_status, read_slots, slot_cells)

PREFIX = "AggIngress.aggregation."

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


def test_reads_go_through_the_connection():
    values = slot_values(base=3, count=2)
    connection = FakeConnection(values)
    cells = read_slots(RegisterReader("s1", connection), 3, 2)
    assert [(c.slot, c.version, c.cell) for c in cells] == [(0, 0, 6), (0, 1, 7), (1, 0, 8),
                                                             (1, 1, 9)]
    assert cells[1] == SlotCell(slot=0, version=1, cell=7, owner=7, offset=448, seen=0b101,
                                count=2, ready=0, exponent=0, overflow=0, value0=2**32 - 7)
    assert cells[1].first_value == -7
    # one cell's registers together (index-major), so a row is read at nearly one moment
    assert connection.reads[:2] == [(PREFIX + "slot_state.owner", 6),
                                    (PREFIX + "slot_state.round_offset", 6)]
    assert len(connection.reads) == len(SLOT_REGISTERS) * 4


def test_connection_errors_are_not_hidden():
    values = slot_values(base=0, count=1)
    connection = FakeConnection(values, error=SwitchError("switch s1: Read failed: "
                                                          "UNAVAILABLE: connection reset"))
    with pytest.raises(SwitchError, match="UNAVAILABLE"):
        read_slots(RegisterReader("s1", connection), 0, 1)


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
