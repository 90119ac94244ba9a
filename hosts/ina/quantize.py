"""Block floating point: float32 vectors as int32 values that the switch can add exactly.

Scheme (what the worker reports as its "quantization"):

* A block is one packet's K values.  Each worker computes, per block, the smallest
  exponent e with max|x| < 2**e (`np.frexp` of the block's largest magnitude) and sends it
  biased by 127 in the header's 8-bit `exponent` field (clamped to 0..255; clamping at the
  bottom only makes e larger, so the invariant |x| < 2**e still holds; an all-zero block
  sends 0, which never wins the max).
* The switch keeps the max of the exponent field over the workers, so every worker learns
  the same agreed exponent E >= its own e for that block.
* Values are scaled by 2**(S - E) and rounded to the nearest integer, where
  S = 31 - bit_length(N) for N workers.  Then |q| <= 2**S and N * 2**S < 2**31, so any
  sum of up to N contributions fits in int32: the switch adds integers exactly and its
  saturation never triggers for finite inputs.
* The integer sum is scaled back by 2**(E - S) in float64 (exact) and rounded once to
  float32.

Exponent agreement uses SwitchML's piggy-backing (hosts/ina/engine.py, `BlockFloatSchedule`):
the packet that carries block c's values (scaled with c's agreed exponent) carries in its
exponent field the local exponent of block c + W, the next block that uses the same slot;
the result returns c's sum and c+W's agreed exponent.  Only the first W blocks need an
exponent-only round, so a vector of B blocks costs B + min(B, W) packets per worker.

Error bound, relative to the float64 sum of the float32 inputs, per element of a block
with agreed exponent E:  each worker's rounding error is at most 2**(E - S - 1), so

    |dequantized - exact| <= N * 2**(E - S - 1)  (= `block_error_bound`)

and since 2**(E-1) <= M, the largest magnitude in the block over all workers (unless the
exponent was clamped at the bottom), this is at most N * 2**(bit_length(N) - 31) * M,
e.g. 2**-24 * M for N = 8.  The final float32 rounding adds at most half an ulp of the
result (relative 2**-24).  Non-finite inputs are rejected.
"""

from __future__ import annotations

import numpy as np

FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24
EXPONENT_BIAS = 127
EXPONENT_FIELD_MAX = 255
SCHEME = ("block floating point: per-packet (K values) power-of-two exponent, max over "
          "workers by the switch, piggy-backed on the previous round of the same slot "
          "(SwitchML); values scaled to int32 with 31-bit_length(N) magnitude bits")


def headroom_shift(world: int) -> int:
    """S: quantized magnitudes are at most 2**S, so N of them sum without overflow."""
    if world < 1:
        raise ValueError(f"world must be at least 1, got {world}")
    shift = 31 - world.bit_length()
    if shift < 1:
        raise ValueError(f"block floating point supports at most 2**30-1 workers, got {world}")
    return shift


def block_exponents(blocks: np.ndarray) -> np.ndarray:
    """Biased exponent field (uint8) per row of `blocks` (shape: blocks x K, float32)."""
    blocks = np.asarray(blocks, dtype=np.float32)
    if not np.all(np.isfinite(blocks)):
        raise ValueError("block floating point cannot carry NaN or infinite values")
    largest = np.max(np.abs(blocks.astype(np.float64)), axis=1)
    _, exponent = np.frexp(largest)      # largest < 2**exponent; frexp(0) gives 0
    field = np.clip(exponent + EXPONENT_BIAS, 0, EXPONENT_FIELD_MAX)
    return np.where(largest > 0, field, 0).astype(np.uint8)


def _scale_power(exponent_field: np.ndarray, world: int) -> np.ndarray:
    """E - S per block, as float64 column ready to broadcast over a block's values."""
    exponent = np.asarray(exponent_field, dtype=np.int64) - EXPONENT_BIAS
    return (exponent - headroom_shift(world)).astype(np.float64)


def quantize(blocks: np.ndarray, exponent_field: np.ndarray, world: int) -> np.ndarray:
    """int32 values of `blocks` (blocks x K) scaled with each block's agreed exponent."""
    blocks = np.asarray(blocks, dtype=np.float32).astype(np.float64)
    power = _scale_power(exponent_field, world)
    scaled = np.rint(np.ldexp(blocks, -power.astype(np.int64)[..., None]))
    limit = 2.0 ** headroom_shift(world)
    if np.any(np.abs(scaled) > limit):
        raise ValueError("a value exceeds its block's agreed exponent "
                         "(the agreed exponent must be the max over workers)")
    return scaled.astype(np.int32)


def dequantize64(sums: np.ndarray, exponent_field: np.ndarray, world: int) -> np.ndarray:
    """Exact float64 value of integer block sums (blocks x K) under the agreed exponents."""
    power = _scale_power(exponent_field, world).astype(np.int64)
    return np.ldexp(np.asarray(sums, dtype=np.float64), power[..., None])


def dequantize(sums: np.ndarray, exponent_field: np.ndarray, world: int) -> np.ndarray:
    """float32 value of integer block sums: the exact value rounded once."""
    return dequantize64(sums, exponent_field, world).astype(np.float32)


def block_error_bound(exponent_field: np.ndarray, world: int) -> np.ndarray:
    """Per block: bound on |dequantize64(sum) - float64 sum of the inputs|, N * 2**(E-S-1)."""
    power = _scale_power(exponent_field, world).astype(np.int64)
    return np.ldexp(float(world), power - 1)
