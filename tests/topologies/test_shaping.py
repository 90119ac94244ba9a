"""Link shaping (topologies/shaping.py): each shaped interface gets one tbf at the link's rate
with htb's old burst and a queue of 1000 full-size frames; an interface without a rate gets
none, and netem (bmv2's delay/loss) goes under the tbf's class."""

from topologies.shaping import QUEUE_LIMIT_BYTES, ShapedIntf, qdiscs_by_interface, tbf_command


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


def test_qdiscs_by_interface_reads_tc_listing():
    # `tc qdisc show` as this kernel prints it: a tbf-shaped interface with a netem child
    # and a clsact, an unshaped veth, and loopback
    listing = ("qdisc noqueue 0: dev lo root refcnt 2 \n"
               "qdisc tbf 5: dev h1-eth0 root refcnt 2 rate 10Mbit burst 15Kb lat 1.2s \n"
               "qdisc netem 10: dev h1-eth0 parent 5:1 limit 1000 delay 1ms\n"
               "qdisc clsact ffff: dev h1-eth0 parent ffff:fff1 \n"
               "qdisc noqueue 0: dev h2-eth0 root refcnt 2 \n"
               "Error: something tc said\n")
    assert qdiscs_by_interface(listing) == {
        "lo": ["noqueue root refcnt 2"],
        "h1-eth0": ["tbf root refcnt 2 rate 10Mbit burst 15Kb lat 1.2s",
                    "netem parent 5:1 limit 1000 delay 1ms", "clsact parent ffff:fff1"],
        "h2-eth0": ["noqueue root refcnt 2"]}
    assert qdiscs_by_interface("") == {}
