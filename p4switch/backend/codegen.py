"""Helpers for writing the generated Python module: indented lines and unique names."""

from __future__ import annotations

import keyword
from contextlib import contextmanager


class CodeWriter:
    """Lines of Python source with an indentation level."""

    def __init__(self):
        self.lines: list[str] = []
        self.level = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    @contextmanager
    def indent(self):
        self.level += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.line("pass")        # a Python block may not be empty
            self.level -= 1

    def mark(self) -> int:
        return len(self.lines)

    def insert(self, at: int, text: str) -> None:
        """Insert a line at position `at` with the current indentation (used for
        `nonlocal` declarations known only after a function body is written)."""
        self.lines.insert(at, "    " * self.level + text)

    def take_since(self, mark: int) -> list[str]:
        """Remove and return the lines written since `mark`."""
        taken = self.lines[mark:]
        del self.lines[mark:]
        return taken

    def nest(self, lines: list[str]) -> None:
        """Re-add lines taken with `take_since`, one level deeper."""
        self.lines.extend("    " + line for line in lines)

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"


class Names:
    """Unique Python identifiers for declarations and temporaries."""

    def __init__(self):
        self._by_key: dict = {}
        self._count = 0

    def fresh(self, base: str) -> str:
        self._count += 1
        safe = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "v"
        if keyword.iskeyword(safe) or safe[0].isdigit():
            safe = "_" + safe
        return f"{safe}_{self._count}"

    def of(self, key, base: str) -> str:
        """The identifier for `key` (a declaration node, or any hashable), made once."""
        name = self._by_key.get(key)
        if name is None:
            name = self._by_key[key] = self.fresh(base)
        return name
