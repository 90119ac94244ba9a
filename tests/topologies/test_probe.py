"""The ICMP probe's echo request encoding and reply parsing."""

import struct

from topologies.probe import (ECHO_REPLY, echo_request, internet_checksum, parse_reply)


def test_echo_request_checksum_verifies():
    packet = echo_request(0x1234, 7, b"abc")
    assert packet[:2] == b"\x08\x00"
    assert struct.unpack("!HH", packet[4:8]) == (0x1234, 7)
    assert internet_checksum(packet) == 0          # a correct checksum sums to 0xffff
    assert internet_checksum(b"\x00\x01\xf2\x03\xf4\xf5\xf6\xf7") == 0x220d  # RFC 1071 example


def reply(identifier, sequence, kind=ECHO_REPLY):
    ip_header = bytes([0x45]) + bytes(19)
    return ip_header + struct.pack("!BBHHH", kind, 0, 0, identifier, sequence) + b"abc"


def test_parse_reply_matches_only_our_replies():
    assert parse_reply(reply(0x1234, 7), 0x1234) == 7
    assert parse_reply(reply(0x1235, 7), 0x1234) is None
    assert parse_reply(reply(0x1234, 7, kind=8), 0x1234) is None
    assert parse_reply(b"\x45" + bytes(10), 0x1234) is None
