"""STF pieces that need no switch: key names, key values, packet patterns and diffs."""

import pytest

from p4switch import stf
from p4switch.runtime.tables import LPM, Exact, Optional, Range, Ternary

KEYS = ["hdr.ipv4.dstAddr", "hdr.ipv4.$valid$", "meta.vlan[1].vid", "meta.dstAddr2",
        "hdr.vlan[0].isValid()"]


@pytest.mark.parametrize("written, resolved", [
    ("hdr.ipv4.dstAddr", "hdr.ipv4.dstAddr"),
    ("dstAddr", "hdr.ipv4.dstAddr"),
    ("ipv4.dstAddr", "hdr.ipv4.dstAddr"),
    ("hdr.ipv4.$valid$", "hdr.ipv4.$valid$"),
    ("hdr.ipv4.valid", "hdr.ipv4.$valid$"),
    ("ipv4$valid$", "hdr.ipv4.$valid$"),
    ("hdr.ipv4.isValid()", "hdr.ipv4.$valid$"),
    ("vlan$0.valid", "hdr.vlan[0].isValid()"),
    ("meta.vlan$1.vid", "meta.vlan[1].vid"),
    ("vid", "meta.vlan[1].vid"),
])
def test_resolve_key_name(written, resolved):
    assert stf.resolve_key_name(written, KEYS) == resolved


def test_resolve_key_name_errors():
    with pytest.raises(ValueError, match="no key 'srcAddr'"):
        stf.resolve_key_name("srcAddr", KEYS)
    with pytest.raises(ValueError, match="ambiguous"):
        stf.resolve_key_name("x", ["a.x", "b.x"])


@pytest.mark.parametrize("text, kind, width, expected", [
    ("5", "exact", 8, Exact(5)),
    ("0x0A000000/8", "lpm", 32, LPM(0x0A000000, 8)),
    ("10.1.0.0/16", "lpm", 32, LPM(0x0A010000, 16)),
    ("0x0A01****", "lpm", 32, LPM(0x0A010000, 16)),
    ("7", "lpm", 8, LPM(7, 8)),
    ("0x1*", "ternary", 8, Ternary(0x10, 0xF0)),
    ("0x*1", "ternary", 16, Ternary(0x01, 0xFF0F)),
    ("0x03&&&0x0F", "ternary", 8, Ternary(3, 0x0F)),
    ("3", "ternary", 8, Ternary(3, 0xFF)),
    ("10.0.0.0/8", "ternary", 32, Ternary(0x0A000000, 0xFF000000)),
    ("100..200", "range", 16, Range(100, 200)),
    ("9", "range", 16, Range(9, 9)),
    ("9", "optional", 8, Optional(9)),
    ("*", "optional", 8, None),
    ("*", "ternary", 8, None),
])
def test_parse_match_value(text, kind, width, expected):
    assert stf.parse_match_value(text, kind, width) == expected


@pytest.mark.parametrize("text, kind", [
    ("*", "exact"), ("1..2", "exact"), ("1&&&1", "lpm"), ("0x*1", "lpm"), ("0x1*", "exact"),
    ("1/9", "lpm"), ("1/9", "ternary"), ("1/2", "exact"),
])
def test_parse_match_value_rejects_mismatched_kinds(text, kind):
    with pytest.raises(ValueError):
        stf.parse_match_value(text, kind, 8)


def test_pattern_prefix_wildcard_and_exact_length():
    data = bytes.fromhex("0011AABB")
    assert stf.pattern_matches("0011", False, data) is None
    assert stf.pattern_matches("00*1A*BB", False, data) is None
    assert stf.pattern_matches("0011", True, data) == 4
    assert stf.pattern_matches("0011AABB", True, data) is None
    assert stf.pattern_matches("0012", False, data) == 3
    assert stf.pattern_matches("0011AABBCC", False, data) == 8


def _expect(pattern, exact=True, line=1):
    return stf.ExpectCmd(line, 2, pattern, exact)


def test_port_diff_marks_first_difference():
    (failure,) = stf.port_diff(2, [_expect("0011AABB", line=7)], [bytes.fromhex("0011ACBB")])
    lines = failure.splitlines()
    assert lines[0] == "port 2: expected 1 packet(s), got 1"
    assert lines[1] == "  #0 (expect at line 7): first difference at byte 2"
    assert lines[2] == "    expected: 0011AABB$"
    assert lines[3] == "    actual:   0011ACBB"
    assert lines[4] == "              " + "     ^"


def test_port_diff_missing_and_extra_packets():
    assert stf.port_diff(1, [_expect("00")], [b"\x00"]) == []
    (missing,) = stf.port_diff(1, [_expect("00"), _expect("01", line=3)], [b"\x00"])
    assert "#1 (expect at line 3): no packet came out" in missing
    (extra,) = stf.port_diff(1, [], [b"\x05"])
    assert "expected 0 packet(s), got 1" in extra and "unexpected packet" in extra
    assert "    actual:   05" in extra


def test_port_diff_caret_counts_group_spaces():
    pattern = "00" * 9 + "FF"
    (failure,) = stf.port_diff(0, [_expect(pattern)], [bytes(10)])
    expected_line, actual_line, caret_line = failure.splitlines()[2:5]
    column = caret_line.index("^")
    assert actual_line[column] == "0" and expected_line[column] == "F"
