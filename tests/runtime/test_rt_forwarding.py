"""End to end: IPv4 LPM forwarding with TTL decrement and checksum update."""

import os

import pytest
from scapy.all import IP, UDP, Ether, Raw

import p4switch
from p4switch.runtime.errors import NotFound
from p4switch.runtime.tables import LPM

PROGRAM = os.path.join(os.path.dirname(__file__), "programs", "ipv4_forward.p4")


@pytest.fixture(scope="module")
def program():
    return p4switch.compile_file(PROGRAM)


def routed_switch(program, **kw):
    sw = p4switch.Switch(program, **kw)
    t = sw.table("MyIngress.ipv4_lpm")
    t.insert({"hdr.ipv4.dstAddr": LPM(0x0A000100, 24)}, "MyIngress.ipv4_forward",
             {"dstAddr": 0x020000000001, "port": 3})
    t.insert({"hdr.ipv4.dstAddr": LPM(0x0A000105, 32)}, "ipv4_forward",
             {"dstAddr": 0x020000000002, "port": 4})
    return sw


def packet(dst, ttl=64):
    return bytes(Ether(dst="02:00:00:00:00:aa", src="02:00:00:00:00:bb") /
                 IP(src="10.0.0.1", dst=dst, ttl=ttl) / UDP(sport=1, dport=2) / Raw(b"p" * 19))


def expected(dst, dmac, ttl):
    # scapy recomputes the IPv4 checksum for the new TTL.
    return bytes(Ether(dst=dmac, src="02:00:00:00:00:aa") /
                 IP(src="10.0.0.1", dst=dst, ttl=ttl) / UDP(sport=1, dport=2) / Raw(b"p" * 19))


def test_longest_prefix_forwarding_rewrites_macs_ttl_and_checksum(program):
    sw = routed_switch(program)
    assert sw.process_packet(1, packet("10.0.1.7")) == [
        (3, expected("10.0.1.7", "02:00:00:00:00:01", 63))]
    assert sw.process_packet(2, packet("10.0.1.5", ttl=9)) == [
        (4, expected("10.0.1.5", "02:00:00:00:00:02", 8))]


def test_miss_runs_the_default_drop_and_non_ipv4_is_dropped(program):
    sw = routed_switch(program)
    assert sw.process_packet(1, packet("10.9.9.9")) == []
    arp_like = bytes(Ether(type=0x0806) / Raw(b"\x00" * 28))
    assert sw.process_packet(1, arp_like) == []


def test_trace_names_states_tables_actions_and_ports(program):
    lines = []
    sw = routed_switch(program, log=lines.append)
    sw.process_packet(1, packet("10.0.1.7"))
    text = "\n".join(lines)
    for needle in ("state 'start'", "state 'parse_ipv4'",
                   "Table 'MyIngress.ipv4_lpm': hit with action MyIngress.ipv4_forward",
                   "out of port 3"):
        assert needle in text
    lines.clear()
    sw.process_packet(1, packet("10.9.9.9"))
    assert "Table 'MyIngress.ipv4_lpm': miss, default action MyIngress.drop" in lines


def test_switches_from_one_program_have_separate_state(program):
    a = routed_switch(program)
    b = p4switch.Switch(program)
    assert b.process_packet(1, packet("10.0.1.7")) == []
    assert a.process_packet(1, packet("10.0.1.7")) != []


def test_device_config_round_trip(program):
    again = p4switch.load_device_config(program.device_config)
    sw = routed_switch(again)
    assert sw.process_packet(1, packet("10.0.1.7")) == [
        (3, expected("10.0.1.7", "02:00:00:00:00:01", 63))]
    with pytest.raises(p4switch.CompileError):
        p4switch.load_device_config(b"not json")


def test_unknown_names_raise_not_found(program):
    sw = p4switch.Switch(program)
    with pytest.raises(NotFound):
        sw.table("nosuch")
    with pytest.raises(NotFound):
        sw.register("ipv4_lpm")


def test_p4info_lists_the_table(program):
    names = [t.preamble.name for t in program.p4info.tables]
    assert names == ["MyIngress.ipv4_lpm"]
