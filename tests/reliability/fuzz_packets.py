"""Seeded bad packets for the aggregation switch, each with the drop reason it must get.

    .venv/bin/python tests/reliability/fuzz_packets.py [--count N] [--seed S]
        # runs the fuzz job (test_fuzz.py) and prints the drop-reason tally

`FuzzSource(rng, target)` makes random mixes of: truncated aggregation headers, truncated
values, wrong element counts, unknown jobs, slots out of range, contributor indices of
another port, non-member ports, message types a port may not send (results going down from
a worker), wrong UDP / IPv4 lengths, random bytes after UDP port 9100, non-IPv4 frames,
truncated IPv4 headers, fragments, forged results from the service address, unroutable
IPv4.  `target` describes the switch: its K, its member ports with their contributor
index per job, and each job's window.  The expected reason of random aggregation bytes comes
from `expected_agg_drop`, which applies docs/protocol.md's validation order.
"""

import argparse
import os
import struct
import sys
from dataclasses import dataclass

import numpy as np
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# Run as a script, the repository and the sibling test helpers are not on the path yet.
sys.path[:0] = [path for path in (REPO, HERE, os.path.join(REPO, "tests", "p4src"),
                                  os.path.join(REPO, "tests", "hosts")) if path not in sys.path]

from contracts.wire import AGG_UDP_PORT as AGG_PORT  # noqa: E402
from contracts.wire import FLAG_NO_VALUES  # noqa: E402
from contracts.wire import HEADER_FORMAT, SERVICE_IP, SERVICE_MAC  # noqa: E402
from controller.entries import DROP_REASONS  # noqa: E402
from p4src_harness import DROP_REASON_COUNT, counts  # noqa: E402
from switch_jobs import SwitchJobs  # noqa: E402

HEADER = struct.Struct(HEADER_FORMAT)


@dataclass
class Target:
    """What the fuzzer knows about the switch under test."""

    k: int
    ports: list                 # all host ports of the switch
    members: dict               # {(job, port): contributor}
    windows: dict               # {job: window}
    host_ip: dict               # {port: IPv4 address of the host there}

    def member_ports(self, job):
        return [port for (j, port) in self.members if j == job]


def agg_bytes(msg_type, version, job, slot, contributor, offset, values, num_elements=None):
    n = len(values) if num_elements is None else num_elements
    header = HEADER.pack((msg_type << 4) | (version << 3), 0, job, slot, contributor, offset,
                         n, 0)
    return header + struct.pack(f"!{len(values)}i", *values)


def frame(port_ip, payload, dport=AGG_PORT, src_ip=None, **ip_fields) -> bytes:
    return bytes(Ether(src="02:00:0a:00:00:99", dst=SERVICE_MAC)
                 / IP(src=src_ip or port_ip, dst=SERVICE_IP, **ip_fields)
                 / UDP(sport=20000, dport=dport) / payload)


def expected_agg_drop(target: Target, port: int, payload: bytes) -> str:
    """The drop reason of an Ethernet/IPv4/UDP:9100 frame with consistent lengths."""
    k = target.k
    if len(payload) < 16:
        return "truncated"
    first, _, job, slot, contributor, _, count, _ = HEADER.unpack_from(payload)
    if count != k:
        return "wrong_k"
    if first & FLAG_NO_VALUES:          # header only: exactly the 16 bytes
        if len(payload) != 16:
            return "bad_length"
    elif len(payload) < 16 + 4 * k:
        return "truncated"
    elif len(payload) != 16 + 4 * k:
        return "bad_length"
    if job not in target.windows:
        return "unknown_job"
    if (job, port) not in target.members:
        return "not_member"
    if first >> 4 != 1:
        return "bad_msg_type"
    if contributor != target.members[job, port]:
        return "wrong_contributor"
    if slot >= target.windows[job]:
        return "slot_range"
    raise ValueError("a well-formed contribution is not a bad packet")


class FuzzSource:
    def __init__(self, rng: np.random.Generator, target: Target):
        self.rng, self.t = rng, target
        self.kinds = [getattr(self, name) for name in dir(self) if name.startswith("_bad_")]

    def packet(self) -> tuple:
        """(ingress port, frame bytes, expected drop reason) of one random bad packet."""
        return self.kinds[int(self.rng.integers(len(self.kinds)))]()

    # -- helpers
    def _int(self, low, high):
        return int(self.rng.integers(low, high))

    def _bytes(self, n):
        return self.rng.bytes(n)

    def _values(self):
        return [self._int(-2**31, 2**31) for _ in range(self.t.k)]

    def _member(self):
        job = list(self.t.windows)[self._int(0, len(self.t.windows))]
        ports = self.t.member_ports(job)
        port = ports[self._int(0, len(ports))]
        return job, port, self.t.members[job, port]

    def _contribution(self, **change):
        job, port, contributor = self._member()
        fields = dict(msg_type=1, version=self._int(0, 2), job=job,
                      slot=self._int(0, self.t.windows[job]), contributor=contributor,
                      offset=self._int(0, 2**32) & ~(self.t.k - 1), values=self._values())
        fields.update(change)
        return port, agg_bytes(**fields)

    # -- the kinds of bad packets
    def _bad_truncated_header(self):
        port, payload = self._contribution()
        return port, frame(self.t.host_ip[port], payload[:self._int(0, 16)]), "truncated"

    def _bad_truncated_values(self):
        port, payload = self._contribution()
        cut = payload[:self._int(16, 16 + 4 * self.t.k)]
        return port, frame(self.t.host_ip[port], cut), "truncated"

    def _bad_wrong_k(self):
        count = self._int(0, 1 << 16)
        if count == self.t.k:
            count += 1
        port, payload = self._contribution(num_elements=count)
        return port, frame(self.t.host_ip[port], payload), "wrong_k"

    def _bad_unknown_job(self):
        job = self._int(0, 1 << 16)
        while job in self.t.windows:
            job = self._int(0, 1 << 16)
        port, payload = self._contribution(job=job)
        return port, frame(self.t.host_ip[port], payload), "unknown_job"

    def _bad_not_member(self):
        job = list(self.t.windows)[self._int(0, len(self.t.windows))]
        outsiders = [p for p in self.t.ports if (job, p) not in self.t.members]
        port = outsiders[self._int(0, len(outsiders))]
        victim = self.t.member_ports(job)[0]
        payload = agg_bytes(1, self._int(0, 2), job, 0, self.t.members[job, victim], 0,
                            self._values())
        # the packet even claims the member's IP address
        return port, frame(self.t.host_ip[victim], payload), "not_member"

    def _bad_wrong_contributor(self):
        job, port, contributor = self._member()
        other = self._int(0, 1 << 16)
        if other == contributor:
            other = (other + 1) % (1 << 16)
        _, payload = self._contribution(job=job, contributor=other)
        return port, frame(self.t.host_ip[port], payload), "wrong_contributor"

    def _bad_slot_range(self):
        job, port, contributor = self._member()
        payload = agg_bytes(1, 0, job, self._int(self.t.windows[job], 1 << 16), contributor, 0,
                            self._values())
        return port, frame(self.t.host_ip[port], payload), "slot_range"

    def _bad_msg_type(self):
        msg_type = [0, 2, 3, 7, 15][self._int(0, 5)]     # 2: a result going down, from a worker
        port, payload = self._contribution(msg_type=msg_type)
        return port, frame(self.t.host_ip[port], payload), "bad_msg_type"

    def _bad_length(self):
        port, payload = self._contribution()
        packet = Ether(frame(self.t.host_ip[port], payload))
        good_udp = 8 + len(payload)
        if self.rng.random() < 0.5:
            packet[UDP].len = (good_udp + self._int(1, 1 << 16)) % (1 << 16)
        else:
            packet[IP].len = (20 + good_udp + self._int(1, 1 << 16)) % (1 << 16)
        packet[IP].chksum = None
        return port, bytes(packet), "bad_length"

    def _bad_random_agg_bytes(self):
        while True:
            port = self.t.ports[self._int(0, len(self.t.ports))]
            payload = self._bytes(self._int(0, 16 + 4 * self.t.k + 9))
            if len(payload) >= 14 and self.rng.random() < 0.5:  # often the right K, to go deeper
                payload = payload[:12] + struct.pack("!H", self.t.k) + payload[14:]
            try:
                reason = expected_agg_drop(self.t, port, payload)
            except ValueError:        # random bytes that happen to be a valid contribution
                continue
            return port, frame(self.t.host_ip[port], payload), reason

    def _bad_not_ipv4(self):
        port = self.t.ports[self._int(0, len(self.t.ports))]
        ethertype = self._int(0, 1 << 16)
        if ethertype == 0x0800:
            ethertype = 0x86DD
        data = self._bytes(12) + struct.pack("!H", ethertype) + self._bytes(self._int(0, 90))
        if self.rng.random() < 0.3:       # or a frame cut inside Ethernet / IPv4
            data = data[:12] + b"\x08\x00" + data[14:]
            data = data[:self._int(0, 14 + 20)]
        return port, data, "not_ipv4"

    def _bad_fragment(self):
        port, payload = self._contribution()
        flags, offset = (1, 0) if self.rng.random() < 0.5 else (0, self._int(1, 1 << 13))
        return port, frame(self.t.host_ip[port], payload, flags=flags, frag=offset), "no_route"

    def _bad_forged_result(self):
        port = self.t.ports[self._int(0, len(self.t.ports))]
        job, victim, contributor = self._member()
        payload = agg_bytes(2, 0, job, 0, contributor, 0, self._values())
        forged = bytes(Ether(src=SERVICE_MAC, dst="02:00:0a:00:00:01")
                       / IP(src=SERVICE_IP, dst=self.t.host_ip[victim])
                       / UDP(sport=AGG_PORT, dport=20000 + job) / payload)
        return port, forged, "spoofed_source"

    def _bad_unroutable(self):
        port = self.t.ports[self._int(0, len(self.t.ports))]
        data = bytes(Ether(src="02:00:0a:00:00:99", dst="02:00:0a:00:00:98")
                     / IP(src=self.t.host_ip[port], dst=f"192.168.{self._int(0, 256)}.1")
                     / UDP(sport=1, dport=self._int(1, 9100)) / self._bytes(self._int(0, 40)))
        return port, data, "no_route"


def run_fuzz(count: int, seed: int):
    """Two jobs on star:5 (job 1: h1-h3, window 4; job 2: h3, h4, window 3; h5 in neither)
    with `count` bad packets interleaved with their traffic.  Returns (jobs, tally,
    outputs): the finished SwitchJobs, {reason: bad packets sent} and every frame the switch
    emitted for a bad packet (must be none)."""
    jobs = SwitchJobs("star:5", {1: ["h1", "h2", "h3"], 2: ["h3", "h4"]}, {1: 4, 2: 3})
    target = Target(
        k=8, ports=[1, 2, 3, 4, 5],
        members={(job, h.port): h.contributor for job, plan in jobs.plans.items()
                 for h in plan.hosts.values()},
        windows={job: plan.window for job, plan in jobs.plans.items()},
        host_ip={port: jobs.spec.host(f"h{port}").ip for port in range(1, 6)})
    rng = np.random.default_rng(seed)
    source = FuzzSource(rng, target)
    tally, outputs, sent = {}, [], [0]

    def inject(n):
        for _ in range(min(n, count - sent[0])):
            port, data, reason = source.packet()
            tally[reason] = tally.get(reason, 0) + 1
            outputs.extend(jobs.switch.process_packet(port, data))
            sent[0] += 1

    jobs.run(between=lambda: inject(int(rng.integers(0, 80))))
    inject(count)
    return jobs, tally, outputs


def main() -> int:
    parser = argparse.ArgumentParser(description="fuzz the p4src switch next to two jobs")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    jobs, tally, outputs = run_fuzz(args.count, args.seed)
    jobs.assert_exact()
    counted = {DROP_REASONS[i]: n
               for i, n in counts(jobs.switch, "drop_reasons", DROP_REASON_COUNT).items()}
    print("| drop reason | bad packets sent | counted by the switch |")
    print("|---|---|---|")
    for reason in sorted(set(tally) | set(counted)):
        print(f"| {reason} | {tally.get(reason, 0)} | {counted.get(reason, 0)} |")
    print(f"{sum(tally.values())} bad packets between {jobs.real_packets} real packets of 2 jobs; "
          f"frames emitted for bad packets: {len(outputs)}; both jobs' sums exact")
    return 0 if counted == tally and not outputs else 1


if __name__ == "__main__":
    raise SystemExit(main())
