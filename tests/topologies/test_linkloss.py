"""Link loss without sch_netem (topologies/linkloss.py): the eBPF program bmv2's lossy links
get on each end's egress, which ends get it, and (root) what it drops on a veth."""

import os
import socket
import subprocess

import pytest

from topologies import linkloss
from topologies.impairment import lossy_ends
from topologies.spec import parse_topology


def test_threshold_is_the_loss_in_31_bits():
    assert linkloss.threshold(0) == 0
    assert linkloss.threshold(1) == round(0.01 * 2**31)
    assert linkloss.threshold(100) == 2**31 - 1         # the largest positive immediate
    with pytest.raises(ValueError, match="loss is a percentage"):
        linkloss.threshold(101)


def test_program_drops_below_the_threshold():
    code = linkloss.loss_instructions(2.5)
    assert len(code) == 7 * 8
    # call get_prandom_u32; r0 >>= 1; if r0 < T goto drop; ok; exit; drop: shot; exit
    assert [code[i] for i in range(0, len(code), 8)] == [0x85, 0x77, 0xa5, 0xb7, 0x95, 0xb7,
                                                         0x95]
    assert int.from_bytes(code[20:24], "little") == linkloss.threshold(2.5)
    assert linkloss.program_name(2.5) == "loss-2_5"


def test_both_ends_of_every_lossy_link_drop_what_they_send():
    spec = parse_topology("leafspine:2,1,2").with_link_defaults(loss_pct=3)
    ends = lossy_ends(spec)
    assert len(ends) == 2 * len(spec.links)
    # a host's end is its interface (port None) and counts for its switch
    host_ends = [e for e in ends if e[1] is None]
    assert sorted(e[0] for e in host_ends) == [h.name for h in spec.hosts]
    assert all(e[3] == spec.host_attachment(e[0])[0] for e in host_ends)
    assert all(e[2] == 3 for e in ends)
    assert lossy_ends(parse_topology("star:2")) == []


@pytest.mark.emulation
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (veths, bpf)")
def test_a_veth_drops_about_its_loss():
    """2,000 datagrams over a veth with 10% loss on its egress: about 200 dropped, counted."""
    name = f"ll{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", f"{name}a", "type", "veth", "peer", "name",
                    f"{name}b"], check=True)
    try:
        for command in (["ip", "addr", "add", "10.254.0.1/24", "dev", f"{name}a"],
                        ["ip", "link", "set", f"{name}a", "up"],
                        ["ip", "link", "set", f"{name}b", "up"],
                        ["ip", "neigh", "replace", "10.254.0.2", "lladdr", "02:00:00:00:00:02",
                         "dev", f"{name}a"]):
            subprocess.run(command, check=True)
        with linkloss.loss_programs([10.0]) as pinned:
            linkloss.attach([(None, f"{name}a", pinned[10.0])])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            for _ in range(2000):
                sender.sendto(b"x" * 64, ("10.254.0.2", 9))
        assert 120 <= linkloss.dropped(None, f"{name}a") <= 280
    finally:
        subprocess.run(["ip", "link", "del", f"{name}a"])
