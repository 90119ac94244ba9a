"""Input vectors and result verification shared by the worker and the ring baseline.

With a seed, rank r's vector is generated from (seed, r) alone, so every rank can rebuild
all ranks' vectors and check the allreduce result against the float64 (or int64) sum:
int32 values lie in a range whose sum over `world` ranks cannot overflow; float32 values
are standard normal.  With an input file, the vector comes from a 1-D .npy file and the
result cannot be verified (`correct` is None).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from contracts import collectives
from contracts import jobs as contracts_jobs
from contracts.collectives.base import shard_bounds  # noqa: F401  (hosts.allreduce's)


INT32_MAX = (1 << 31) - 1
INT32_INPUT_LIMIT = 1 << 24
DTYPES = {name: np.dtype(name) for name in contracts_jobs.DTYPES}   # the job contract's


class InputError(ValueError):
    """An input file or option that cannot be used (a usage error, exit status 2)."""


def int32_limit(world: int) -> int:
    """Largest magnitude generated for int32 so that any sum over `world` ranks fits."""
    return min(INT32_INPUT_LIMIT, INT32_MAX // world)


def generate(seed: int, rank: int, world: int, elements: int, dtype: np.dtype) -> np.ndarray:
    """Rank `rank`'s deterministic input vector."""
    rng = np.random.default_rng([seed, rank])
    if dtype == np.int32:
        limit = int32_limit(world)
        return rng.integers(-limit, limit, size=elements, dtype=np.int32, endpoint=True)
    if dtype == np.float32:
        return rng.standard_normal(elements, dtype=np.float32)
    raise InputError(f"unsupported dtype {dtype}")


def load_input(path: str, elements: int, dtype: np.dtype) -> np.ndarray:
    """A 1-D .npy vector of exactly `elements` values, safely castable to `dtype`."""
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read input {path}: {exc}") from None
    if data.ndim != 1 or len(data) != elements:
        raise InputError(f"input {path} has shape {data.shape}, expected ({elements},)")
    if not np.can_cast(data.dtype, dtype, casting="safe"):
        raise InputError(f"input {path} has dtype {data.dtype}, which does not fit {dtype}")
    return data.astype(dtype)


@dataclass(frozen=True)
class Reference:
    """The exact sum of all ranks' inputs and the sum of their magnitudes (for bounds)."""

    total: np.ndarray       # int64 or float64
    magnitude: np.ndarray   # float64: sum over ranks of |x|

    @classmethod
    def from_seed(cls, seed: int, world: int, elements: int, dtype: np.dtype) -> "Reference":
        wide = np.int64 if dtype == np.int32 else np.float64
        total = np.zeros(elements, dtype=wide)
        magnitude = np.zeros(elements, dtype=np.float64)
        for rank in range(world):
            vector = generate(seed, rank, world, elements, dtype)
            total += vector.astype(wide)
            magnitude += np.abs(vector.astype(np.float64))
        return cls(total, magnitude)


@dataclass(frozen=True)
class Verification:
    correct: bool
    max_abs_err: float


def collective_reference(collective, seed: int, rank: int, world: int, elements: int,
                         dtype: np.dtype) -> Reference:
    """What rank `rank` must hold after `collective` over the seeded inputs: the part it
    holds (contracts/collectives/) of the whole result, the sum of the inputs for the
    summing collectives, each rank's contribution in its place for the copies (allgather:
    every rank's own shard in order; broadcast: rank 0's vector).  `magnitude` (for float
    bounds) is the sum of |x| that made each element; for the copies (nothing is added) it
    is |x| itself."""
    collective = collectives.get(collective)
    reference = _whole_reference(collective, seed, world, elements, np.dtype(dtype))
    start, stop = collective.holds(rank, world, elements)
    if (start, stop) == (0, elements):
        return reference
    return Reference(reference.total[start:stop], reference.magnitude[start:stop])


# The workers of a worker group (threads of one process, hosts/group.py) check the same job:
# each rebuilding every rank's vector made the checks of 1,024 workers take a minute of both
# cores (about 60 ms each), and the first ranks' checks ran while the last ones' clocks did.
# One reference per process, made once under the lock; read-only, since the threads share it.
_reference_lock = threading.Lock()
_last_reference: list = [None, None]        # [key, Reference]


def _whole_reference(collective, seed: int, world: int, elements: int,
                     dtype: np.dtype) -> Reference:
    """The rank-independent part of collective_reference: the whole sum for the summing
    collectives, the expected vector of the copies."""
    key = ("sum" if collective.sums else collective.name, seed, world, elements, dtype.str)
    with _reference_lock:
        if _last_reference[0] != key:
            _last_reference[:] = [None, None]       # drop the previous one first (memory)
            reference = _made_reference(collective, seed, world, elements, dtype)
            reference.total.setflags(write=False)
            reference.magnitude.setflags(write=False)
            _last_reference[:] = [key, reference]
        return _last_reference[1]


def _made_reference(collective, seed: int, world: int, elements: int,
                    dtype: np.dtype) -> Reference:
    if collective.sums:
        return Reference.from_seed(seed, world, elements, dtype)
    expected = collective.expected_copy(
        lambda rank: generate(seed, rank, world, elements, dtype), world, elements)
    wide = np.int64 if dtype == np.int32 else np.float64
    return Reference(expected.astype(wide), np.abs(expected.astype(np.float64)))


def verify(result: np.ndarray, reference: Reference, tolerance: np.ndarray | float) -> Verification:
    """Compare `result` with the exact sum; integers must match exactly."""
    if result.dtype == np.int32:
        error = np.abs(result.astype(np.int64) - reference.total)
    else:
        error = np.abs(result.astype(np.float64) - reference.total)
    max_err = float(error.max(initial=0))
    return Verification(bool(np.all(error <= tolerance)), max_err)

