"""What the two back ends that keep tables outside Python (c: backend/c/binding.py; xdp:
backend/xdp/binding.py) share: values as 64-bit words, the lookup order a table's entries
are handed over in, and table loads deferred to the end of a block of changes."""

from __future__ import annotations

import contextlib

_WORD = (1 << 64) - 1


def nwords(width: int) -> int:
    """64-bit words of a `width`-bit value in C (emit's wide.nwords)."""
    return max(1, (width + 63) // 64)


def split_words(value: int, n: int) -> list[int]:
    """`value` as `n` 64-bit words, most significant first."""
    return [(value >> (64 * (n - 1 - i))) & _WORD for i in range(n)]


def value_words(values, widths) -> list[int]:
    """Values as 64-bit words: nwords each, high first."""
    out = []
    for value, width in zip(values, widths):
        out += split_words(value, nwords(width))
    return out


def ordered_entries(table) -> tuple[int, list]:
    """(kind, entries) in the order both back ends look them up: 0 no key, 1 exact or
    longest-prefix levels, 2 ternary/range priority order."""
    if not table.spec.keys:
        return 0, []
    if hasattr(table, "_exact"):
        return 1, list(table._exact.values())
    if hasattr(table, "_levels"):
        return 1, [e for _, _, level in table._levels for e in level.values()]
    return 2, list(table._ordered)


class DeferredLoads:
    """`deferred_loads()`: table changes made inside reach the data plane once, at the end
    (each changed table loaded whole once, instead of once per change: 1,024 route inserts
    would otherwise load the table 1,024 times).  Until then packets see the tables as they
    were.  The caller holds the datapath lock; nested uses join the outer one.  A subclass
    sets `self._deferred = None`, records {index: table} there while it is a dict, and
    defines `_load_deferred(table, index)`."""
    _deferred: dict | None = None

    @contextlib.contextmanager
    def deferred_loads(self):
        if self._deferred is not None:
            yield
            return
        self._deferred = {}
        try:
            yield
        finally:
            deferred, self._deferred = self._deferred, None
            for index, table in sorted(deferred.items()):
                self._load_deferred(table, index)

    def _load_deferred(self, table, index: int) -> None:
        raise NotImplementedError
