"""Per-switch aggregation slot allocator: each job gets one contiguous, disjoint slot range.

A switch has `capacity` slots (the program's AGG_SLOTS); a job asks for `window` of them.
First fit over the free ranges; freeing merges neighbours so capacity is never lost.
"""

from __future__ import annotations


class SlotCapacityError(ValueError):
    """A switch has no contiguous free range large enough for a job's window."""


class SlotAllocator:
    """Slot ranges handed out on one switch: {job_id: (base, count)}."""

    def __init__(self, switch: str, capacity: int):
        if capacity < 1:
            raise ValueError(f"switch {switch}: slot capacity must be at least 1")
        self.switch = switch
        self.capacity = capacity
        self.ranges: dict[int, tuple[int, int]] = {}

    def free_slots(self) -> int:
        return self.capacity - sum(count for _, count in self.ranges.values())

    def allocate(self, job_id: int, count: int) -> int:
        """Reserve `count` slots for `job_id`; returns the base slot."""
        if job_id in self.ranges:
            raise ValueError(f"switch {self.switch}: job {job_id} already has slots")
        if count < 1:
            raise ValueError(f"window must be at least 1, got {count}")
        base = self._first_fit(count)
        if base is None and not self._largest_gap():
            raise SlotCapacityError(f"switch {self.switch}: no slots left for job {job_id} "
                                    f"(all {self.capacity} in use)")
        if base is None:
            raise SlotCapacityError(
                f"switch {self.switch}: job {job_id} needs {count} slots but only "
                f"{self._largest_gap()} contiguous of {self.capacity} are free")
        self.ranges[job_id] = (base, count)
        return base

    def release(self, job_id: int) -> None:
        self.ranges.pop(job_id, None)

    def _gaps(self):
        """Free (base, count) ranges in slot order."""
        cursor = 0
        for base, count in sorted(self.ranges.values()):
            if base > cursor:
                yield cursor, base - cursor
            cursor = base + count
        if cursor < self.capacity:
            yield cursor, self.capacity - cursor

    def _first_fit(self, count: int):
        for base, size in self._gaps():
            if size >= count:
                return base
        return None

    def _largest_gap(self) -> int:
        return max((size for _, size in self._gaps()), default=0)
