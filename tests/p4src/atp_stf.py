"""An STF for ATP's switch (p4src/atp/atp.p4 in p4src/main.p4), one scenario per rule the
paper gives it, with the expected frames built here (scapy), not by a switch.
`python tests/p4src/atp_stf.py > tests/p4src/atp.stf` writes the committed K = 1 file that
tests/bmv2 runs three ways (Python, C, bmv2); tests/p4src runs it at K = 4 on each back end
and checks the committed file is what this writes.

One switch, hosts on ports 1-4 (10.0.0.P), /32 routes to each.  Job 11: a rack of workers
0-2 on ports 1-3, the top (level 0), its parameter server on h1 (UDP 24011).  Job 12:
workers 0-1 on ports 2-3, server on h2 (24012).  Job 13: this switch is its rack switch
below a next level on port 4 (index 1 there).  Job 14: this switch is the next level over
two racks' switches on ports 3 and 4, server on h1 (24014).
Covered: sums completed and routed to the server (from the service address: it hangs off
this switch), and packets on their way to a server elsewhere routed on untouched; a duplicate consumed; a collision sent on
unaggregated; the server's acknowledgement freeing the aggregator and multicast; a resend
clearing it and going to the server; an overflow going on alone with the aggregator kept;
an ECN mark carried into the sum; a rack's sum sent up to the next level, an
acknowledgement sent up from a server below and multicast when it comes down; the next
level summing racks; drops.
"""

from __future__ import annotations

import struct
import sys

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

ATP_PORT = 9300
SERVICE_MAC, SERVICE_IP = "02:00:0a:00:ff:fe", "10.0.255.254"
INT_MAX = 2**31 - 1
# p4src/atp/atp.p4 ATP_EVENT_* and headers.p4 DROP_*
EVENTS = {"added": 0, "completed": 1, "duplicate": 2, "collision": 3, "overflow": 4,
          "resend": 5, "ack_up": 6, "ack_down": 7}
DROPS = {"unknown_job": 5, "not_member": 6, "wrong_contributor": 7, "slot_range": 8,
         "bad_msg_type": 9, "unsupported_flags": 15}
LEVEL_RACK, LEVEL_UP, LEVEL_PS = 0, 1, 2
SERVERS = {11: 1, 12: 2, 13: 1, 14: 1}      # the port of each job's parameter server


def mac(port):
    return f"02:00:0a:00:00:{port:02x}"


def ip(port):
    return f"10.0.0.{port}"


class Frames:
    def __init__(self, k: int):
        self.k = k

    def values(self, v):
        return [v + i for i in range(self.k)] if isinstance(v, int) else list(v)

    def payload(self, msg_type, job, aggregator, index, offset, values, level=LEVEL_RACK,
                resend=0, collision=0, ecn=0, rack=0, bitmap0=None, bitmap1=0, overflow=0,
                flags=0):
        first = (msg_type << 4) | (overflow << 2) | flags
        header = struct.pack("!BBHHHIHH", first, 0, job, aggregator, index, offset, self.k, 0)
        atp = struct.pack("!BBHII", (level << 6) | (resend << 5) | (collision << 4) | (ecn << 3),
                          rack, 0, 1 << index if bitmap0 is None else bitmap0, bitmap1)
        return header + atp + struct.pack(f"!{self.k}i", *self.values(values))

    def gradient(self, port, job, server_port, aggregator, index, offset, values, tos=0,
                 dport=ATP_PORT, on_its_way=False, **fields):
        """A worker's (or rack switch's) packet as it enters on `port`, to the switches; with
        `dport` the server's, as a switch sends it on to the server on `server_port` (from
        the service address); `on_its_way`: sent on to that server by a switch the server
        does not hang off (still from the worker on `port`)."""
        if dport != ATP_PORT:
            src_mac, dst_mac, src_ip, dst_ip = (SERVICE_MAC, mac(server_port), SERVICE_IP,
                                                ip(server_port))
        elif on_its_way:
            src_mac, dst_mac, src_ip, dst_ip = (mac(port), mac(server_port), ip(port),
                                                ip(server_port))
        else:
            src_mac, dst_mac, src_ip, dst_ip = mac(port), SERVICE_MAC, ip(port), SERVICE_IP
        return bytes(Ether(src=src_mac, dst=dst_mac)
                     / IP(src=src_ip, dst=dst_ip, id=7, tos=tos)
                     / UDP(sport=20000 + job, dport=dport, chksum=0)
                     / self.payload(1, job, aggregator, index, offset, values, **fields))

    def ack(self, port, job, aggregator, offset, values, **fields):
        """The server's acknowledgement (with the sum) as it enters on `port`."""
        return bytes(Ether(src=mac(port), dst=SERVICE_MAC)
                     / IP(src=ip(port), dst=SERVICE_IP, id=7)
                     / UDP(sport=24000 + job, dport=ATP_PORT, chksum=0)
                     / self.payload(2, job, aggregator, 0, offset, values, bitmap0=0,
                                    **fields))

    def result(self, port, job, aggregator, offset, values, to_switch=False, **fields):
        """An acknowledgement copy as the switch addresses it to the member on `port`."""
        dst_mac, dst_ip, dport = ((SERVICE_MAC, SERVICE_IP, ATP_PORT) if to_switch
                                  else (mac(port), ip(port), 20000 + job))
        return bytes(Ether(src=SERVICE_MAC, dst=dst_mac)
                     / IP(src=SERVICE_IP, dst=dst_ip, id=7)
                     / UDP(sport=ATP_PORT, dport=dport, chksum=0)
                     / self.payload(2, job, aggregator, 0, offset, values, bitmap0=0,
                                    **fields))


def write_stf(out, k: int = 1) -> int:
    """Writes the STF; returns the number of packets it sends in."""
    f = Frames(k)
    lines = [f"# Generated by tests/p4src/atp_stf.py: p4src/main.p4 with -DAGG_K={k}"]
    add = lines.append
    for port in (1, 2, 3, 4):
        add(f"add ipv4_routes hdr.ipv4.dstAddr:0x{0x0a000000 | port:08x}/32 forward(port:{port})")
    jobs = {  # job: (level, fan_in, top, parent, index at parent, members {port: index}, ps)
        11: (0, 3, 1, 0, 0, {1: 0, 2: 1, 3: 2}, 24011),
        12: (0, 2, 1, 0, 0, {2: 0, 3: 1}, 24012),
        13: (0, 2, 0, 4, 1, {1: 0, 2: 1}, 24013),
        14: (1, 2, 1, 0, 0, {3: 0, 4: 1}, 24014)}
    for node, (job, (level, fan_in, top, parent, index, members, ps)) in \
            enumerate(jobs.items(), start=1):
        add(f"add atp_jobs hdr.agg.job_id:{job} atp_job(generation:{job - 10}, "
            f"level:{level}, fan_in:{fan_in}, "
            f"is_top:{top}, parent_port:{parent}, index_at_parent:{index}, "
            f"mcast_group:{job + 1}, ps_mac:0x{mac(SERVERS[job]).replace(':', '')}, "
            f"ps_ip:0x{0x0a000000 | SERVERS[job]:08x}, ps_port:{ps}, "
            f"ps_here:{int(job != 13)})")
        for port, member in members.items():
            add(f"add atp_members hdr.agg.job_id:{job} standard_metadata.ingress_port:{port} "
                f"atp_child(index:{member})")
            address = (f"mac:0x{mac(port).replace(':', '')}, ip:0x{0x0a000000 | port:08x}, "
                       f"udp_port:{20000 + job}") if level == 0 else \
                "mac:0x02000a00fffe, ip:0x0a00fffe, udp_port:9300"
            add(f"add agg_result_addresses hdr.agg.job_id:{job} "
                f"standard_metadata.egress_port:{port} result_to({address})")
        if parent:
            add(f"add atp_members hdr.agg.job_id:{job} standard_metadata.ingress_port:{parent} "
                "atp_parent()")
        add(f"mc_mgrp_create {job + 1}")
        add(f"mc_node_create {node} {' '.join(map(str, members))}")
        add(f"mc_node_associate {job + 1} {node - 1}")
    sent = 0

    def send(port, frame, comment=None):
        nonlocal sent
        if comment:
            add(f"\n# {comment}")
        add(f"packet {port} {frame.hex().upper()}")
        sent += 1

    def expect(port, frame):
        add(f"expect {port} {frame.hex().upper()}$")

    total = [10 + 20 + 30 + 3 * i for i in range(k)]
    send(1, f.gradient(1, 11, 1, 5, 0, 0, 10),
         "job 11, fragment 0 in aggregator 5: summed; a duplicate consumed; the last routed "
         "to the server (h1, its port 24011) with the rack's bitmap")
    add("no_packet")
    send(2, f.gradient(2, 11, 1, 5, 1, 0, 20))
    add("no_packet")
    send(2, f.gradient(2, 11, 1, 5, 1, 0, 20))
    add("no_packet")
    send(3, f.gradient(3, 11, 1, 5, 2, 0, 30))
    expect(1, f.gradient(3, 11, 1, 5, 2, 0, total, dport=24011, level=LEVEL_PS,
                         bitmap0=0b111))
    add("register_read atp_count 5 3")

    send(2, f.gradient(2, 12, 2, 5, 0, 0, 7),
         "job 12 hashed to aggregator 5 too: a collision, on to its server unaggregated")
    expect(2, f.gradient(2, 12, 2, 5, 0, 0, 7, dport=24012, level=LEVEL_PS, collision=1))

    send(1, f.ack(1, 11, 5, 0, total),
         "job 11's server acknowledges: aggregator 5 freed, the sum to every worker")
    for port in (1, 2, 3):
        expect(port, f.result(port, 11, 5, 0, total))
    add("register_read atp_tag 5 0")
    send(3, f.gradient(3, 12, 2, 5, 1, 0, 8), "aggregator 5 free again: job 12 takes it")
    add("no_packet")
    send(3, f.gradient(3, 12, 2, 5, 1, 0, 8, resend=1),
         "a resend: the aggregator cleared, the packet on to the server")
    expect(2, f.gradient(3, 12, 2, 5, 1, 0, 8, dport=24012, level=LEVEL_PS, resend=1))
    add("register_read atp_tag 5 0")

    send(1, f.gradient(1, 11, 1, 6, 0, k, INT_MAX - 10 - k),
         "an add that overflows: that packet on alone with its own values, the aggregator "
         "poisoned: the next member's goes on alone too")
    add("no_packet")
    send(2, f.gradient(2, 11, 1, 6, 1, k, 20))
    expect(1, f.gradient(2, 11, 1, 6, 1, k, 20, dport=24011, level=LEVEL_PS, overflow=1))
    add("register_read atp_count 6 1")
    add("register_read atp_poisoned 6 1")
    send(3, f.gradient(3, 11, 1, 6, 2, k, 30))
    expect(1, f.gradient(3, 11, 1, 6, 2, k, 30, dport=24011, level=LEVEL_PS, overflow=1))

    send(1, f.gradient(1, 11, 1, 7, 0, 2 * k, 1, tos=3),
         "an ECN-marked contribution: the sum goes on marked")
    add("no_packet")
    send(2, f.gradient(2, 11, 1, 7, 1, 2 * k, 2))
    add("no_packet")
    send(3, f.gradient(3, 11, 1, 7, 2, 2 * k, 3))
    expect(1, f.gradient(3, 11, 1, 7, 2, 2 * k, [6 + 3 * i for i in range(k)], dport=24011,
                         level=LEVEL_PS, bitmap0=0b111, ecn=1))

    send(1, f.gradient(1, 13, 1, 8, 0, 0, 100, rack=1),
         "job 13: this switch is a rack below the next level (port 4): the rack's sum goes "
         "up as member 1 there")
    add("no_packet")
    send(2, f.gradient(2, 13, 1, 8, 1, 0, 200, rack=1))
    expect(4, f.gradient(2, 13, 1, 8, 1, 0, [300 + 2 * i for i in range(k)], rack=1,
                         level=LEVEL_UP, bitmap0=0b11, bitmap1=0b10))
    send(1, f.ack(1, 13, 8, 0, 5), "its server, below this switch, acknowledges: sent up")
    expect(4, f.ack(1, 13, 8, 0, 5))
    send(4, f.result(0, 13, 8, 0, 5, to_switch=True),
         "the acknowledgement comes down: aggregator 8 freed, multicast to the rack")
    for port in (1, 2):
        expect(port, f.result(port, 13, 8, 0, 5))
    add("register_read atp_tag 8 0")

    send(3, f.gradient(3, 14, 1, 9, 0, 0, 1000, level=LEVEL_UP, bitmap0=0b1111, bitmap1=0b1),
         "job 14: this switch is the next level: two racks' sums, then on to the server")
    add("no_packet")
    send(4, f.gradient(4, 14, 1, 9, 1, 0, 2000, level=LEVEL_UP, rack=1, bitmap0=0b11,
                       bitmap1=0b10))
    expect(1, f.gradient(4, 14, 1, 9, 1, 0, [3000 + 2 * i for i in range(k)], level=LEVEL_PS,
                         rack=1, dport=24014, bitmap0=0b11, bitmap1=0b11))

    on_its_way = f.gradient(4, 13, 1, 3, 1, 0, 9, rack=1, level=LEVEL_PS, on_its_way=True)
    send(4, on_its_way, "on its way to job 13's server, which hangs off another switch: "
         "routed on untouched; so is one of a job this switch was not told of")
    expect(1, on_its_way)
    stranger = f.gradient(4, 15, 1, 3, 1, 0, 9, level=LEVEL_PS, on_its_way=True)
    send(4, stranger)
    expect(1, stranger)

    send(4, f.gradient(4, 11, 1, 1, 0, 0, 1), "drops: a port that is no member of job 11")
    add("no_packet")
    send(1, f.gradient(1, 15, 1, 1, 0, 0, 1), "a job no switch was told of")
    add("no_packet")
    send(1, f.gradient(1, 11, 1, 1, 1, 0, 1), "an index that is not the port's")
    add("no_packet")
    send(1, f.gradient(1, 11, 1, 1, 0, 0, 1, level=LEVEL_UP), "a level-1 packet at level 0")
    add("no_packet")
    send(1, f.gradient(1, 11, 1, 65535, 0, 0, 1), "an aggregator beyond the pool")
    add("no_packet")
    send(1, f.gradient(1, 11, 1, 1, 0, 0, 1, flags=2), "header flags ATP does not implement")
    add("no_packet")

    add("")
    counts = {"added": 8, "completed": 4, "duplicate": 1, "collision": 1, "overflow": 2,
              "resend": 1, "ack_up": 1, "ack_down": 2}
    for name, packets in counts.items():
        add(f"check_counter atp_events({EVENTS[name]}) packets == {packets}")
    for reason in ("not_member", "unknown_job", "wrong_contributor", "bad_msg_type",
                   "slot_range", "unsupported_flags"):
        add(f"check_counter drop_reasons({DROPS[reason]}) packets == 1")
    out.write("\n".join(lines) + "\n")
    return sent


if __name__ == "__main__":
    write_stf(sys.stdout, int(sys.argv[1]) if len(sys.argv) > 1 else 1)
