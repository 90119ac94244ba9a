"""ICMP echo from inside a host, without depending on the ping binary being installed.

`python -m topologies.probe IP [--count N] [--timeout S]` sends N echo requests (RFC 792) over
a raw socket, prints "<received>/<sent> replies from IP" and exits 0 only if all came back.
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import struct
import sys
import time

ECHO_REQUEST, ECHO_REPLY = 8, 0


def internet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def echo_request(identifier: int, sequence: int, payload: bytes) -> bytes:
    header = struct.pack("!BBHHH", ECHO_REQUEST, 0, 0, identifier, sequence)
    checksum = internet_checksum(header + payload)
    return struct.pack("!BBHHH", ECHO_REQUEST, 0, checksum, identifier, sequence) + payload


def parse_reply(packet: bytes, identifier: int):
    """Sequence number of an echo reply to us (packet starts with the IPv4 header), or None."""
    if len(packet) < 20:
        return None
    icmp = packet[(packet[0] & 0x0F) * 4:]
    if len(icmp) < 8:
        return None
    kind, _, _, ident, sequence = struct.unpack("!BBHHH", icmp[:8])
    return sequence if kind == ECHO_REPLY and ident == identifier else None


def ping(address: str, count: int = 3, timeout: float = 2.0) -> int:
    """Number of replies received, one request at a time."""
    identifier = os.getpid() & 0xFFFF
    received = 0
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as sock:
        for sequence in range(1, count + 1):
            sock.sendto(echo_request(identifier, sequence, b"ina-emu probe"), (address, 0))
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                if not select.select([sock], [], [], left)[0]:
                    break
                if parse_reply(sock.recv(2048), identifier) == sequence:
                    received += 1
                    break
    return received


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(prog="python -m topologies.probe")
    parser.add_argument("address")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args(argv)
    received = ping(args.address, args.count, args.timeout)
    print(f"{received}/{args.count} replies from {args.address}")
    return 0 if received == args.count else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
