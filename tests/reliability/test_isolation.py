"""A rogue host against two concurrent jobs on the in-process p4src switch.

Job 1 runs on h1, h2, h3 and job 2 on h4, h5 (star:6, window 4 each, 400 int32 elements).
Between every real packet of the jobs the rogue -- h5 (a member of job 2 only) or h6 (a
member of no job) -- sends packets with every combination of job id, message type (a
contribution, or a result going down), version, slot (inside and outside the windows),
contributor index and chunk offset, under its own addresses or forging a member's (h1's)
MAC, IP and UDP port or the service address; and results forged straight to job 1's
workers.  Job 1's sums stay exact whoever the rogue is; job 2's too (h5's own valid job-2
contributions are left out: a member may of course spoil its own job).  Every rogue packet
is dropped and counted, or forwarded as plain IPv4 that no worker takes for a result (it
does not come from the service address).  The worker's own filter is tested below with
worker processes over loopback UDP.
"""

import itertools
import json
import os

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from agg_network import P4Fabric, UdpSwitchBridge, run_workers, worker_command
from controller.entries import DROP_REASONS, EVENTS
from fuzz_packets import agg_bytes
from contracts.wire import worker_port
from p4src_harness import DROP_REASON_COUNT, EVENT_COUNT, counts
from switch_jobs import SwitchJobs

SERVICE = ("02:00:0a:00:ff:fe", "10.0.255.254", 9100)


def rogue_packets(jobs, rogue_port):
    """Every spoofing combination the rogue tries, as frames sent from `rogue_port`."""
    rogue = jobs.spec.host(f"h{rogue_port}")
    h1 = jobs.spec.host("h1")
    own_job = next((job for job, hosts in jobs.jobs.items() if rogue.name in hosts), None)
    own_index = (jobs.plans[own_job].hosts[rogue.name].contributor
                 if own_job is not None else None)
    sources = [(rogue.mac, rogue.ip, 20000 + 1), (h1.mac, h1.ip, 20000 + 1), SERVICE]
    for job, msg_type, version, slot, contributor, offset, (mac, ip, sport) in itertools.product(
            (1, 2), (1, 2), (0, 1), (0, 1, 3, 4, 65535), (0, 1, 2, 31), (0, 8, 32, 64), sources):
        if job == own_job and msg_type == 1 and contributor == own_index and slot < 4:
            continue        # a valid contribution to its own job: not an attack on another
        payload = agg_bytes(msg_type, version, job, slot, contributor, offset,
                            list(range(100, 108)))
        yield bytes(Ether(src=mac, dst=SERVICE[0]) / IP(src=ip, dst=SERVICE[1])
                    / UDP(sport=sport, dport=9100) / payload)
    for member in jobs.jobs[1]:          # results forged straight to job 1's workers
        victim = jobs.spec.host(member)
        for slot, version, offset, (mac, ip, sport) in itertools.product(
                range(4), (0, 1), (0, 32), [SERVICE, (h1.mac, h1.ip, 9100)]):
            payload = agg_bytes(2, version, 1, slot, 0, offset, [666] * 8)
            yield bytes(Ether(src=mac, dst=victim.mac) / IP(src=ip, dst=victim.ip)
                        / UDP(sport=sport, dport=worker_port(1)) / payload)


@pytest.mark.parametrize("rogue_port", [5, 6])
def test_a_rogue_host_cannot_change_another_jobs_sums(rogue_port):
    jobs = SwitchJobs("star:6", {1: ["h1", "h2", "h3"], 2: ["h4", "h5"]}, {1: 4, 2: 4})
    attacks = list(rogue_packets(jobs, rogue_port))
    pending = iter(attacks)
    forwarded = []

    def attack(n=12):
        for frame in itertools.islice(pending, n):
            for port, out in jobs.switch.process_packet(rogue_port, frame):
                forwarded.append((port, Ether(out)))

    jobs.run(between=attack)
    attack(len(attacks))                # whatever is left, after the jobs finished
    jobs.assert_exact()

    # the only frames that left the switch are plain IPv4 forwarded unchanged, none from the
    # service address (a worker accepts results from (10.0.255.254, 9100) only)
    assert all(out[IP].src != SERVICE[1] for _, out in forwarded)
    assert all(out[UDP].dport == worker_port(1) for _, out in forwarded)
    drops = {DROP_REASONS[i]: n for i, n in
             counts(jobs.switch, "drop_reasons", DROP_REASON_COUNT).items()}
    assert sum(drops.values()) + len(forwarded) == len(attacks)
    assert set(drops) <= {"not_member", "bad_msg_type", "wrong_contributor", "slot_range",
                          "spoofed_source"}
    assert drops["spoofed_source"] == 3 * 4 * 2 * 2       # forged service-address results
    events = {EVENTS[i]: n for i, n in counts(jobs.switch, "agg_events", EVENT_COUNT).items()}
    assert events == jobs.expected_events()


def test_worker_processes_ignore_results_that_do_not_come_from_the_switch(tmp_path):
    """A rogue on loopback sends well-formed results for every slot/version/offset to the
    job's port on every worker; the workers still get the exact sum and count the datagrams
    as foreign."""
    job = 5000 + os.getpid() % 20000
    fabric = P4Fabric("star:3", job_id=job, window=4)
    bridge = UdpSwitchBridge(fabric, 3, worker_port(job))
    rogue = RogueSender(job, elements=240)
    bridge.start()
    rogue.start()
    try:
        outcomes = run_workers([worker_command(job, rank, 3, bridge.address, "--elements", "240",
                                               "--seed", "4", "--contributor",
                                               str(fabric.contributor(rank)), "--json",
                                               str(tmp_path / f"r{rank}.json"), k=8)
                                for rank in range(3)])
    finally:
        rogue.stop()
        bridge.stop()
    assert [status for status, _ in outcomes] == [0, 0, 0], outcomes
    reports = [json.loads((tmp_path / f"r{rank}.json").read_text()) for rank in range(3)]
    assert all(r["correct"] is True for r in reports)
    assert sum(r["packets_foreign"] for r in reports) > 0


class RogueSender:
    """Floods forged results (msg_type 2, plausible slot/version/offset, values 666) at the
    job's port of workers 127.0.0.10-12 from its own socket until stopped."""

    def __init__(self, job, elements):
        import socket
        import threading
        self.job, self.elements = job, elements
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()

    def _run(self):
        chunks = -(-self.elements // 8)
        while not self.stopping.is_set():
            for c in range(chunks):
                payload = agg_bytes(2, (c // 4) % 2, self.job, c % 4, 0, 8 * c, [666] * 8)
                for rank in range(3):
                    try:
                        self.sock.sendto(payload, (f"127.0.0.{10 + rank}", worker_port(self.job)))
                    except OSError:
                        pass
            self.stopping.wait(0.005)

    def stop(self):
        self.stopping.set()
        self.thread.join()
        self.sock.close()
