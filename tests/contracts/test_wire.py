"""contracts/wire.py against p4src: every wire and service constant the Python side uses is
read back from the P4 source (headers.p4, slot_state.p4), so the two cannot disagree silently."""

import ipaddress
import os
import re
import struct

import pytest

from contracts import wire

P4SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "p4src")


def p4_text(name: str) -> str:
    with open(os.path.join(P4SRC, name)) as handle:
        return re.sub(r"/\*.*?\*/", "", handle.read(), flags=re.S)


def p4_constants(text: str) -> dict:
    """`const bit<W> NAME = VALUE;` and `#define NAME NUMBER` as {NAME: int}."""
    found = {name: int(value, 0) for name, value in
             re.findall(r"const\s+bit<\d+>\s+(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*;", text)}
    found.update({name: int(value, 0) for name, value in
                  re.findall(r"#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\s*$", text, flags=re.M)})
    return found


def header_fields(text: str, header: str) -> list:
    """[(name, width)] of `header NAME { bit<W> field; ... }`, in order."""
    body = re.search(r"header\s+" + header + r"\s*\{(.*?)\}", text, flags=re.S).group(1)
    return [(name, int(width)) for width, name in re.findall(r"bit<(\d+)>\s+(\w+)\s*;", body)]


HEADERS = p4_text("headers.p4")
CONSTANTS = p4_constants(HEADERS)


def test_service_address_and_port_match_headers_p4():
    assert CONSTANTS["AGG_UDP_PORT"] == wire.AGG_UDP_PORT
    assert CONSTANTS["SERVICE_IP"] == int(ipaddress.IPv4Address(wire.SERVICE_IP))
    assert CONSTANTS["SERVICE_MAC"] == int(wire.SERVICE_MAC.replace(":", ""), 16)


def test_message_types_and_compile_time_defaults_match_headers_p4():
    assert CONSTANTS["MSG_CONTRIBUTION"] == wire.MSG_CONTRIBUTION
    assert CONSTANTS["MSG_RESULT"] == wire.MSG_RESULT
    assert CONSTANTS["AGG_K"] == wire.DEFAULT_K
    assert CONSTANTS["AGG_SLOTS"] == wire.DEFAULT_SLOTS
    assert wire.DEFAULT_K in wire.SWITCH_K_VALUES


def test_flags_and_header_only_lengths_match_headers_p4():
    assert CONSTANTS["AGG_FLAG_NO_VALUES"] == wire.FLAG_NO_VALUES
    assert CONSTANTS["AGG_FLAG_TO_OWNER"] == wire.FLAG_TO_OWNER
    fields = dict(header_fields(HEADERS, "agg_t"))
    assert fields["flags"] == 2 and fields["owner"] == 16
    assert wire.NO_OWNER == (1 << fields["owner"]) - 1
    only = re.search(r"AGG_HEADER_ONLY_UDP_LENGTH\s*=\s*8\s*\+\s*(\d+)\s*;", HEADERS)
    assert int(only.group(1)) == wire.header_only_size() == wire.HEADER_LEN


def test_header_layout_matches_agg_t():
    fields = header_fields(HEADERS, "agg_t")
    assert sum(width for _, width in fields) == 8 * wire.HEADER_LEN
    assert struct.calcsize(wire.HEADER_FORMAT) == wire.HEADER_LEN
    # Each struct item covers whole P4 fields in order: the bit fields of byte 0 share a B.
    item_bits = [8 * struct.calcsize("!" + code) for code in wire.HEADER_FORMAT.lstrip("!")]
    widths = [width for _, width in fields]
    for bits in item_bits:
        taken = 0
        while taken < bits:
            taken += widths.pop(0)
        assert taken == bits, f"a P4 field of agg_t straddles a {bits}-bit struct item"
    assert not widths
    # num_elements carries K: the packet's size follows from it.
    assert wire.packet_size(8) == wire.HEADER_LEN + 8 * 4


def test_values_are_32_bit_and_the_udp_length_formula_agrees():
    assert re.search(r"int<32>\s+v##i", HEADERS), "the K values are no longer int<32>"
    udp_length = re.search(r"AGG_UDP_LENGTH\s*=\s*8\s*\+\s*(\d+)\s*\+\s*(\d+)\s*\*\s*AGG_K", HEADERS)
    assert (int(udp_length.group(1)), int(udp_length.group(2))) == (wire.HEADER_LEN,
                                                                     wire.VALUE_BYTES)


def test_contributor_bitmap_width_is_max_contributors():
    slot_state = p4_text("agg_slot_state.p4")
    width = re.search(r"register<bit<(\d+)>,\s*bit<\d+>>\(AGG_CELLS\)\s+seen\s*;", slot_state)
    assert int(width.group(1)) == wire.MAX_CONTRIBUTORS


def test_ecmp_limits_match_forwarding_p4():
    """Groups of at most ECMP_MAX_GROUP_SIZE buckets, ECMP_BUCKETS in all per switch, in
    forwarding.p4's ecmp_buckets table, whose bucket number is a 16-bit field."""
    assert CONSTANTS["ECMP_MAX_GROUP_SIZE"] == wire.ECMP_MAX_GROUP_SIZE
    assert CONSTANTS["ECMP_BUCKETS"] == wire.ECMP_BUCKETS
    forwarding = p4_text("forwarding.p4")
    assert re.search(r"table ecmp_buckets \{.*?size = ECMP_BUCKETS;\s*\}", forwarding, re.S)
    assert re.search(r"bit<16>\s+ecmp_bucket;", p4_text("headers.p4"))


def test_worker_ports_fit_in_udp():
    assert wire.worker_port(wire.MAX_JOB_ID) == 65535
    assert wire.worker_port(3) == wire.WORKER_PORT_BASE + 3


@pytest.mark.parametrize("mutation", [("9100", "9101"), ("0x0a00fffe", "0x0a00fffd")])
def test_a_changed_p4_constant_is_caught(mutation):
    """The readers above see a change in the P4 text (so the checks can fail)."""
    changed = p4_constants(HEADERS.replace(*mutation))
    assert (changed["AGG_UDP_PORT"], changed["SERVICE_IP"]) != (wire.AGG_UDP_PORT,
                                                                int(ipaddress.IPv4Address(
                                                                    wire.SERVICE_IP)))


def test_the_largest_window_is_what_the_switchs_slot_count_holds():
    (width,) = re.findall(r"bit<(\d+)>\s+slot_count\s*;", HEADERS)
    assert wire.MAX_WINDOW == (1 << int(width)) - 1
    assert dict(header_fields(HEADERS, "agg_t"))["slot"] >= int(width)   # slots 0..window-1


def test_the_engine_packs_the_header_of_contracts_wire():
    from hosts.ina import engine, protocol
    assert engine._HEADER.format == protocol._HEADER.format == wire.HEADER_FORMAT
    assert struct.calcsize(wire.HEADER_FORMAT) == wire.HEADER_LEN


@pytest.mark.parametrize("bw_mbit, k, delay_ms, window", [
    (100, 256, None, 16),      # 16 frames of 1,082 bytes fill 1.4 ms at 100 Mbit/s
    (50, 256, None, 16),       # never fewer than MIN_DEFAULT_WINDOW
    (10, 256, None, 16),
    (100, 128, None, 31),      # 570-byte frames: 31 of them fill 1.4 ms
    (100, 64, None, 32),       # never more than DEFAULT_WINDOW
    (1000, 256, None, 32),
    (None, 256, None, 32),     # unshaped
    (100, 256, 1.0, 32),       # a link delay lengthens the round trip
])
def test_the_default_window_covers_the_link_time_of_a_round_trip(bw_mbit, k, delay_ms, window):
    assert wire.default_window(bw_mbit, k, delay_ms) == window
    if bw_mbit and not delay_ms and wire.MIN_DEFAULT_WINDOW < window < wire.DEFAULT_WINDOW:
        frame_s = (wire.INA_FRAME_OVERHEAD + wire.VALUE_BYTES * k) * 8 / (bw_mbit * 1e6)
        assert abs(window * frame_s - wire.WINDOW_COVER_S) <= frame_s / 2
