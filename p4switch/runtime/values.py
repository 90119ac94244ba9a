"""Run-time representations the compiled program shares: header stacks and control flow.

Headers, structs and header unions are classes generated per program by the back end
(`p4switch.backend.pytypes`); bit<W>/int<W> values are Python ints, bool is bool, varbit is a
`(bit_length, value)` tuple. A header stack is a `HeaderStack` of generated header objects.
"""

from __future__ import annotations

from .packet import ParserException


class ExitPipeline(Exception):
    """Raised by `exit;`: ends the current top-level control (caught by the traffic manager)."""


class P4AssertionError(Exception):
    """A v1model `assert`/`assume` failed (bmv2 stops the switch; we stop the packet)."""


class HeaderStack:
    """`H[size]`: `elems` are header (or header union) objects; `nextIndex` as in the spec."""

    __slots__ = ("elems", "nextIndex", "size", "factory")

    def __init__(self, factory, size: int):
        self.factory = factory
        self.size = size
        self.elems = [factory() for _ in range(size)]
        self.nextIndex = 0

    def at(self, index: int):
        """Element `index`; StackOutOfBounds outside 0..size-1."""
        if 0 <= index < self.size:
            return self.elems[index]
        raise ParserException("StackOutOfBounds")

    def at_in_control(self, index: int):
        """Element `index` in a control, where an index out of range is undefined behaviour
        (P4-16) and the packet goes on, as on bmv2: a fresh invalid element outside the
        stack, so a write through it changes nothing and a read gives zeros."""
        if 0 <= index < self.size:
            return self.elems[index]
        return self.factory()

    def next(self):
        if self.nextIndex >= self.size:
            raise ParserException("StackOutOfBounds")
        return self.elems[self.nextIndex]

    def last(self):
        if self.nextIndex == 0:
            raise ParserException("StackOutOfBounds")
        return self.elems[self.nextIndex - 1]

    @property
    def lastIndex(self) -> int:
        return (self.nextIndex - 1) & 0xFFFFFFFF

    def push_front(self, count: int) -> None:
        """Shift elements up by `count`; the first `count` become invalid."""
        count = min(count, self.size)
        if count <= 0:
            return
        self.elems = [self.factory() for _ in range(count)] + self.elems[:self.size - count]
        self.nextIndex = min(self.nextIndex + count, self.size)

    def pop_front(self, count: int) -> None:
        """Shift elements down by `count`; the last `count` become invalid."""
        count = min(count, self.size)
        if count <= 0:
            return
        self.elems = self.elems[count:] + [self.factory() for _ in range(count)]
        self.nextIndex = max(self.nextIndex - count, 0)

    def copy(self) -> "HeaderStack":
        new = HeaderStack.__new__(HeaderStack)
        new.factory = self.factory
        new.size = self.size
        new.elems = [e.copy() for e in self.elems]
        new.nextIndex = self.nextIndex
        return new

    def _assign(self, other: "HeaderStack") -> None:
        for mine, theirs in zip(self.elems, other.elems):
            mine._assign(theirs)
        self.nextIndex = other.nextIndex

    def __eq__(self, other) -> bool:
        return isinstance(other, HeaderStack) and self.elems == other.elems

    def _emit(self, writer) -> None:
        for elem in self.elems:
            elem._emit(writer)

    def _fields(self) -> list:
        out = []
        for elem in self.elems:
            out.extend(elem._fields())
        return out

    def _is_valid(self) -> bool:
        return any(e._is_valid() for e in self.elems)
