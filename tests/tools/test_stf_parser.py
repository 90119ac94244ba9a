"""Tests for parsing STF text into commands (no switch involved)."""

import pytest

from p4switch import stf
from p4switch.stf import StfError, parse_stf


def test_packets_expects_and_comments():
    cmds = parse_stf("""
# a comment
packet 0 0011 2233  # trailing comment
expect 1 00** 22$
expect 2
no_packet
wait
""", "t.stf")
    assert cmds == [
        stf.PacketCmd(3, 0, bytes.fromhex("00112233")),
        stf.ExpectCmd(4, 1, "00**22", True),
        stf.ExpectCmd(5, 2, None, False),
        stf.NoPacketCmd(6),
        stf.WaitCmd(7),
    ]


def test_add_with_priority_keys_and_action_args():
    (cmd,) = parse_stf("add MyIngress.acl 10 hdr.ipv4.dstAddr:0x0A0000**  meta.x:1..5 "
                       "MyIngress.fwd(port: 3, mac:0x0a0b) = A")
    assert cmd == stf.AddCmd(1, "MyIngress.acl", 10,
                             [("hdr.ipv4.dstAddr", "0x0A0000**"), ("meta.x", "1..5")],
                             "MyIngress.fwd", [("port", "3"), ("mac", "0x0a0b")], "A")


def test_add_without_priority_or_args():
    (cmd,) = parse_stf("add ipv4_lpm hdr.ipv4.dstAddr:10.0.0.0/8 drop()")
    assert cmd.priority is None and cmd.args == [] and cmd.action == "drop"
    assert cmd.keys == [("hdr.ipv4.dstAddr", "10.0.0.0/8")] and cmd.handle is None


def test_setdefault_remove_and_replication():
    cmds = parse_stf("""setdefault t fwd(port:1)
remove all
remove t 3 k:0x1
mc_mgrp_create 5
mc_node_create 7 1 2 3
mc_node_associate 5 0
mirroring_add 100 4
meter_config MyIngress.m 1 10 20 30 40
meter_config police $A 1 2 3 4
value_set_add P.known 0xAB00&&&0xFF00
value_set_add known 7
""")
    assert cmds[0] == stf.SetDefaultCmd(1, "t", "fwd", [("port", "1")])
    assert cmds[1] == stf.RemoveCmd(2, None)
    assert cmds[2] == stf.RemoveCmd(3, "t", 3, [("k", "0x1")])
    assert cmds[3] == stf.McGroupCreateCmd(4, 5)
    assert cmds[4] == stf.McNodeCreateCmd(5, 7, [1, 2, 3])
    assert cmds[5] == stf.McNodeAssociateCmd(6, 5, 0)
    assert cmds[6] == stf.MirroringAddCmd(7, 100, 4)
    assert cmds[7] == stf.MeterConfigCmd(8, "MyIngress.m", 1, 10, 20, 30, 40)
    assert cmds[8] == stf.MeterConfigCmd(9, "police", "$A", 1, 2, 3, 4)
    assert cmds[9] == stf.ValueSetAddCmd(10, "P.known", 0xAB00, 0xFF00)
    assert cmds[10] == stf.ValueSetAddCmd(11, "known", 7, None)


def test_state_checks():
    cmds = parse_stf("""register_write MyIngress.r 3 0x10
register_read r 3 16
check_counter MyIngress.c(2) packets == 4
counter_read c(0x1) bytes >= 100
expect_digest learn 0x0a 1
check_counter t_hits($A) bytes != 0
""")
    assert cmds[0] == stf.RegisterWriteCmd(1, "MyIngress.r", 3, 16)
    assert cmds[1] == stf.RegisterReadCmd(2, "r", 3, 16)
    assert cmds[2] == stf.CheckCounterCmd(3, "MyIngress.c", 2, "packets", "==", 4)
    assert cmds[3] == stf.CheckCounterCmd(4, "c", 1, "bytes", ">=", 100)
    assert cmds[4] == stf.ExpectDigestCmd(5, "learn", [10, 1])
    assert cmds[5] == stf.CheckCounterCmd(6, "t_hits", "$A", "bytes", "!=", 0)


@pytest.mark.parametrize("text, message", [
    ("frobnicate 1", "unknown STF command 'frobnicate'"),
    ("packet 0 abz", "packet needs a port and hex digits"),
    ("packet x 00", "bad port 'x'"),
    ("expect 1 00zz", "bad expected packet data"),
    ("add t k:1 fwd", "expected ACTION(PARAM:VALUE, ...)"),
    ("add t k:1 fwd(port)", "bad action argument 'port'"),
    ("add t k fwd()", "bad key 'k'"),
    ("mc_node_associate 1", "expected mc_node_associate GROUP HANDLE"),
    ("check_counter c packets == 1", "expected check_counter"),
])
def test_errors_name_file_and_line(text, message):
    with pytest.raises(StfError) as info:
        parse_stf("\n" + text, "bad.stf")
    assert str(info.value).startswith("bad.stf:2: ")
    assert message in str(info.value)


def test_parse_number():
    assert stf.parse_number("0x1F") == 31
    assert stf.parse_number("0b101") == 5
    assert stf.parse_number("42") == 42
    assert stf.parse_number("10.0.1.2") == 0x0A000102
    with pytest.raises(ValueError):
        stf.parse_number("4x")
