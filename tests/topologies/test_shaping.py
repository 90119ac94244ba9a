"""Link shaping (topologies/shaping.py): each shaped interface gets one tbf at the link's rate
with htb's old burst and a queue of 1000 full-size frames; an interface without a rate gets
none, and netem (bmv2's delay/loss) goes under the tbf's class."""

from topologies.shaping import QUEUE_LIMIT_BYTES, ShapedIntf, tbf_command


def test_tbf_command_has_rate_burst_and_queue():
    assert tbf_command(100) == ("%s qdisc add dev %s root handle 5: tbf rate 100mbit "
                                "burst 15k limit 1514000")
    assert tbf_command(2.5) % ("tc", "h1-eth0") == (
        "tc qdisc add dev h1-eth0 root handle 5: tbf rate 2.5mbit burst 15k limit 1514000")
    assert QUEUE_LIMIT_BYTES == 1000 * 1514


def test_shaped_interface_commands():
    # bwCmds reads nothing from the interface: called on the class with no node at all
    commands, parent = ShapedIntf.bwCmds(None, bw=10)
    assert commands == [tbf_command(10)] and parent == " parent 5:1 "
    assert ShapedIntf.bwCmds(None, bw=None) == ([], " root ")
    # above Mininet's 1000 Mbit/s limit for htb: still shaped
    assert ShapedIntf.bwCmds(None, bw=10000)[0] == [tbf_command(10000)]
