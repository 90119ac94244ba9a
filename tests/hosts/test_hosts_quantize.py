"""Block floating point (hosts/ina/quantize.py): headroom, exponents, exactness, error bound."""

import numpy as np
import pytest

from hosts.ina import quantize


def agreed_sum(worker_blocks, world):
    """What the protocol computes: max exponent, exact integer sum, scaled back."""
    exponents = np.max([quantize.block_exponents(b) for b in worker_blocks], axis=0)
    integer_sum = np.sum([quantize.quantize(b, exponents, world).astype(np.int64)
                          for b in worker_blocks], axis=0)
    return exponents, integer_sum


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5, 8, 31, 32])
def test_worst_case_sum_fits_int32(world):
    shift = quantize.headroom_shift(world)
    assert world * 2**shift <= 2**31 - 1
    # Largest magnitude just below 2**E in every worker, all the same sign.
    almost_one = np.nextafter(np.float32(1.0), np.float32(0))
    for sign in (1, -1):
        block = np.full((1, 4), sign * almost_one, dtype=np.float32)
        exponents, total = agreed_sum([block] * world, world)
        assert int(exponents[0]) == quantize.EXPONENT_BIAS    # max < 1.0  ->  E = 0
        assert np.all(np.abs(total) <= 2**31 - 1)
        largest_q = round(float(almost_one) * 2**quantize.headroom_shift(world))
        assert np.all(total == sign * world * largest_q)


def test_block_exponents():
    blocks = np.array([[0.0, 0.0], [0.75, -0.5], [1.0, 0.0], [-3.0, 2.0],
                       [np.finfo(np.float32).max, 0.0], [1e-45, 0.0]], dtype=np.float32)
    fields = quantize.block_exponents(blocks)
    assert fields.tolist() == [0, 127, 128, 129, 255, 0]   # 1e-45 is clamped at the bottom
    with pytest.raises(ValueError, match="NaN or infinite"):
        quantize.block_exponents(np.array([[np.inf, 1.0]], dtype=np.float32))


def test_values_on_the_quantization_grid_sum_exactly():
    world = 4
    rng = np.random.default_rng(1)
    # Multiples of 2**(E-S) with E = 0: exactly representable after scaling.
    step = 2.0 ** -quantize.headroom_shift(world)
    ints = rng.integers(-2**20, 2**20, size=(world, 3, 16))
    blocks = [(i * step).astype(np.float32) for i in ints]
    exponents, total = agreed_sum(blocks, world)
    result = quantize.dequantize64(total, exponents, world)
    assert np.array_equal(result, ints.sum(axis=0) * step)


@pytest.mark.parametrize("world", [2, 3, 8, 32])
def test_error_bound_against_float64_sum(world):
    rng = np.random.default_rng(world)
    # Per worker and block a different scale, including wide dynamic range inside blocks.
    scales = 2.0 ** rng.integers(-30, 30, size=(world, 20, 1))
    blocks = [(rng.standard_normal((20, 64)) * scales[w]).astype(np.float32) for w in range(world)]
    exact = np.sum([b.astype(np.float64) for b in blocks], axis=0)
    exponents, total = agreed_sum(blocks, world)
    result64 = quantize.dequantize64(total, exponents, world)
    bound = quantize.block_error_bound(exponents, world)[:, None]
    error = np.abs(result64 - exact)
    assert np.all(error <= bound)
    # The bound in terms of the block's largest magnitude M over all workers.
    largest = np.max([np.abs(b).max(axis=1) for b in blocks], axis=0)[:, None]
    assert np.all(bound <= world * 2.0 ** (world.bit_length() - 31) * largest)
    # And the float32 result adds at most half an ulp.
    result32 = quantize.dequantize(total, exponents, world)
    assert np.all(np.abs(result32 - exact) <= bound + 2.0**-24 * (np.abs(exact) + bound))
    # Rounding is real: the bound is not vacuous, some error is nonzero.
    assert error.max() > 0


def test_quantize_refuses_a_too_small_exponent():
    block = np.array([[4.0, 1.0]], dtype=np.float32)
    with pytest.raises(ValueError, match="agreed exponent"):
        quantize.quantize(block, np.array([quantize.EXPONENT_BIAS]), 2)
