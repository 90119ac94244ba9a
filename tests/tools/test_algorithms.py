"""Unit tests for p4switch.runtime.algorithms: known check values and the meter."""

import pytest

from p4switch.runtime import algorithms as alg
from p4switch.runtime.algorithms import GREEN, RED, YELLOW, TwoRateThreeColorMeter

CHECK_INPUT = [(b, 8) for b in b"123456789"]


def test_pack_fields_concatenates_msb_first_and_pads_at_end():
    assert alg.pack_fields([(0b101, 3), (0x1, 4)]) == bytes([0b10100010])
    assert alg.pack_fields([(0xABC, 12), (0xD, 4)]) == b"\xab\xcd"
    assert alg.pack_fields([(0x1FF, 8)]) == b"\xff"  # value truncated to its width
    assert alg.pack_fields([]) == b""


def test_crc32_check_value():
    assert alg.crc32(CHECK_INPUT) == 0xCBF43926


def test_crc16_is_arc_check_value():
    assert alg.crc16(CHECK_INPUT) == 0xBB3D


def test_custom_crcs_default_to_builtin_and_reconfigure():
    c16 = alg.make_hash("crc16_custom")
    c32 = alg.make_hash("crc32_custom")
    assert c16(CHECK_INPUT) == 0xBB3D
    assert c32(CHECK_INPUT) == 0xCBF43926
    # CRC-16/CCITT-FALSE: not reflected, init 0xFFFF -> 0x29B1
    c16.configure(0x1021, 0xFFFF, 0x0000, False, False)
    assert c16(CHECK_INPUT) == 0x29B1
    # CRC-32/BZIP2: not reflected, init/xor 0xFFFFFFFF -> 0xFC891918
    c32.configure(0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, False, False)
    assert c32(CHECK_INPUT) == 0xFC891918
    # CRC-32C (Castagnoli), reflected -> 0xE3069283
    c32.configure(0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
    assert c32(CHECK_INPUT) == 0xE3069283
    # instances are independent
    assert alg.make_hash("crc32_custom")(CHECK_INPUT) == 0xCBF43926


def test_crc_mixed_reflection():
    # CRC-16/XMODEM: poly 0x1021, init 0, not reflected -> 0x31C3
    assert alg.Crc(16, 0x1021)(CHECK_INPUT) == 0x31C3
    # CRC-16/KERMIT: poly 0x1021, reflected -> 0x2189
    assert alg.Crc(16, 0x1021, 0, 0, True, True)(CHECK_INPUT) == 0x2189
    # refin only: equals reflecting the refin+refout result
    both = alg.Crc(16, 0x1021, 0, 0, True, True)(CHECK_INPUT)
    only_in = alg.Crc(16, 0x1021, 0, 0, True, False)(CHECK_INPUT)
    assert only_in == int(f"{both:016b}"[::-1], 2)


IPV4_HEADER_WITH_ZERO_CHECKSUM = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")


def test_csum16_ipv4_header_example():
    fields = [(b, 8) for b in IPV4_HEADER_WITH_ZERO_CHECKSUM]
    assert alg.csum16(fields) == 0xB861
    with_checksum = IPV4_HEADER_WITH_ZERO_CHECKSUM[:10] + b"\xb8\x61" + IPV4_HEADER_WITH_ZERO_CHECKSUM[12:]
    assert alg.csum16([(b, 8) for b in with_checksum]) == 0


def test_csum16_odd_length_pads_zero():
    assert alg.csum16([(0x12, 8), (0x34, 8), (0x56, 8)]) == (~(0x1234 + 0x5600) & 0xFFFF)


def test_csum16_end_around_carry():
    assert alg.csum16([(0xFFFF, 16), (0x0001, 16)]) == (~0x0001 & 0xFFFF)


def test_xor16_words_and_padding():
    assert alg.xor16([(0x1234, 16), (0xFF00, 16)]) == 0xED34
    assert alg.xor16([(0x1234, 16), (0xAB, 8)]) == 0x1234 ^ 0xAB00
    assert alg.xor16([(0xF, 4)]) == 0xF000


def test_identity_takes_first_eight_bytes():
    assert alg.identity([(0x0A000001, 32)]) == 0x0A000001
    assert alg.identity([(0x0102030405060708, 64), (0x09, 8)]) == 0x0102030405060708
    assert alg.identity([(0b1, 1)]) == 0x80


def test_random_hash_is_seedable():
    a, b = alg.make_hash("random", seed=7), alg.make_hash("random", seed=7)
    assert [a([]) for _ in range(3)] == [b([]) for _ in range(3)]


def test_unknown_algorithm_raises():
    with pytest.raises(ValueError, match="not supported"):
        alg.make_hash("md5")


def test_meter_unconfigured_is_green():
    meter = TwoRateThreeColorMeter("packets")
    assert [meter.execute(t) for t in range(5)] == [GREEN] * 5


def test_meter_packets_green_yellow_red_and_refill():
    meter = TwoRateThreeColorMeter("packets")
    # CIR 1 pkt/s burst 2, PIR 2 pkt/s burst 3
    meter.set_config(1, 2, 2, 3)
    colors = [meter.execute(0) for _ in range(4)]
    assert colors == [GREEN, GREEN, YELLOW, RED]
    # half a second: PIR bucket gets 1 token, CIR bucket none
    assert meter.execute(500_000) == YELLOW
    assert meter.execute(500_000) == RED
    # one more second: PIR +2 (cap 3 -> 2 tokens), CIR +1
    assert meter.execute(1_500_000) == GREEN
    assert meter.execute(1_500_000) == YELLOW
    assert meter.execute(1_500_000) == RED


def test_meter_bytes_charges_length_and_precolor():
    meter = TwoRateThreeColorMeter("bytes")
    meter.set_config(1000, 1500, 2000, 3000)
    assert meter.execute(0, length=1500) == GREEN
    assert meter.execute(0, length=1000) == YELLOW   # peak has 1500 left, committed 0
    assert meter.execute(0, length=1000) == RED      # peak has 500 left
    assert meter.execute(0, length=100, pre_color=YELLOW) == YELLOW
    assert meter.get_config() == (1000, 1500, 2000, 3000)


def test_meter_rejects_cir_above_pir_and_bad_unit():
    with pytest.raises(ValueError):
        TwoRateThreeColorMeter("packets").set_config(10, 1, 5, 1)
    with pytest.raises(ValueError):
        TwoRateThreeColorMeter("cells")
