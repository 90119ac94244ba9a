"""Stateful v1model extern objects: registers, counters, meters and parser value sets.

The compiled pipeline reads and writes register cells directly and calls `count`/`execute`;
the control plane uses the rest (through `Switch.register(...)`, `Switch.counter(...)`, ...). Indices outside the array
raise OutOfRange for the control plane; in the data plane a read gives 0 and a write is
ignored (the spec leaves it undefined; this keeps a switch running).
"""

from __future__ import annotations

from .algorithms import GREEN, TwoRateThreeColorMeter
from .errors import InvalidArgument, NotFound, OutOfRange


class _Indexed:
    def __init__(self, name: str, size: int):
        self.name = name
        self.size = size

    def _check(self, index: int) -> None:
        if not (isinstance(index, int) and 0 <= index < self.size):
            raise OutOfRange(f"{self.name}: index {index!r} outside 0..{self.size - 1}")


class Register(_Indexed):
    """`register<T, I>(size)`: cells of `width` bits (`signed` for int<W>)."""

    def __init__(self, name: str, size: int, width: int, signed: bool = False):
        super().__init__(name, size)
        self.width = width
        self.signed = signed
        self.cells = [0] * size

    # control plane: values are the unsigned bit patterns

    def read(self, index: int) -> int:
        self._check(index)
        return self.cells[index] & ((1 << self.width) - 1)

    def write(self, index: int, value: int) -> None:
        self.cells[index] = self.checked(index, value)

    def checked(self, index: int, value: int) -> int:
        """`value` (an unsigned bit pattern) as a cell holds it, sign-extended for int<W>,
        once the index and the value are checked (every back end's write)."""
        self._check(index)
        if not (isinstance(value, int) and 0 <= value < (1 << self.width)):
            raise InvalidArgument(f"{self.name}: value {value!r} does not fit "
                                  f"{self.width} bits")
        return value - (1 << self.width) if self.signed and value >> (self.width - 1) else value

    def reset(self) -> None:
        self.cells[:] = [0] * self.size      # in place: compiled code holds the list


class Counter(_Indexed):
    """`counter(size, type)`: (packets, bytes) per index."""

    def __init__(self, name: str, size: int, unit: str = "packets"):
        super().__init__(name, size)
        self.unit = unit
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        self._check(index)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, bytes_: int) -> None:
        self._check(index)
        self.packets[index] = packets
        self.bytes[index] = bytes_

    def reset(self) -> None:
        self.packets = [0] * self.size
        self.bytes = [0] * self.size


class DirectCounter:
    """`direct_counter(type)`: the counts live on the owner table's entries."""

    def __init__(self, name: str, table, unit: str = "packets"):
        self.name = name
        self.table = table
        self.unit = unit

    def read(self, match: dict, priority=None) -> tuple[int, int]:
        entry = self.table.get(match, priority)
        return entry.packets, entry.bytes

    def write(self, match: dict, packets: int, bytes_: int, priority=None) -> None:
        entry = self.table.get(match, priority)
        entry.packets, entry.bytes = packets, bytes_


class Meter(_Indexed):
    """`meter(size, type)`: a two-rate three-colour meter per index."""

    def __init__(self, name: str, size: int, unit: str = "packets", clock=None):
        super().__init__(name, size)
        self.unit = unit
        self.clock = clock
        self.meters = [None] * size

    def _meter(self, index: int) -> TwoRateThreeColorMeter:
        meter = self.meters[index]
        if meter is None:
            meter = self.meters[index] = TwoRateThreeColorMeter(self.unit)
        return meter

    def execute(self, index: int, nbytes: int, now_us: int | None = None) -> int:
        """The colour of a packet of `nbytes` at `now_us` (the packet's clock reading; the
        switch clock when not given); None for an index outside the array (bmv2 then
        leaves the result unwritten)."""
        if not 0 <= index < self.size:
            return None
        if self.meters[index] is None:
            return GREEN
        return self.meters[index].execute(self.clock() if now_us is None else now_us, nbytes)

    def set_config(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        self._check(index)
        try:
            self._meter(index).set_config(cir, cburst, pir, pburst)
        except ValueError as e:
            raise InvalidArgument(f"{self.name}: {e}") from None

    def get_config(self, index: int):
        self._check(index)
        meter = self.meters[index]
        return None if meter is None else meter.get_config()

    def reset(self, index: int) -> None:
        self._check(index)
        self.meters[index] = None


class DirectMeter:
    """`direct_meter<T>(type)`: one meter per entry of the owner table; `color` is what the
    last hit of that table produced (read by `direct_meter.read()` in the action)."""

    def __init__(self, name: str, table, unit: str = "packets"):
        self.name = name
        self.table = table
        self.unit = unit
        self.color = GREEN
        table._meter_factory = lambda: TwoRateThreeColorMeter(unit)

    def set_config(self, match: dict, cir, cburst, pir, pburst, priority=None) -> None:
        entry = self.table.get(match, priority)
        if entry.meter is None:
            entry.meter = TwoRateThreeColorMeter(self.unit)
        try:
            entry.meter.set_config(cir, cburst, pir, pburst)
        except ValueError as e:
            raise InvalidArgument(f"{self.name}: {e}") from None

    def get_config(self, match: dict, priority=None):
        entry = self.table.get(match, priority)
        return None if entry.meter is None else entry.meter.get_config()


class ValueSet:
    """A parser `value_set<T>(size)`: members are (value, mask) pairs (mask None: exact);
    for a tuple/struct type, value and mask are tuples."""

    def __init__(self, name: str, size: int):
        self.name = name
        self.size = size
        self.members: list[tuple] = []

    def add(self, value, mask=None) -> None:
        if (value, mask) in self.members:
            return
        if self.size and len(self.members) >= self.size:
            raise InvalidArgument(f"value set {self.name} is full ({self.size})")
        self.members.append((value, mask))

    def remove(self, value, mask=None) -> None:
        try:
            self.members.remove((value, mask))
        except ValueError:
            raise NotFound(f"value set {self.name} has no member {value!r}") from None

    def clear(self) -> None:
        self.members.clear()

    def match(self, key) -> bool:
        for value, mask in self.members:
            if mask is None:
                if key == value:
                    return True
            elif isinstance(key, tuple):
                if all(k & m == v & m for k, v, m in zip(key, value, mask)):
                    return True
            elif key & mask == value & mask:
                return True
        return False
