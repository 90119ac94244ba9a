"""Concurrent jobs on one in-process p4src switch, driven to completion without loss.

`SwitchJobs(topology, {job: [host, ...]}, {job: window})` installs the jobs with the controller's
AggregationManager on a one-switch topology, makes one worker engine per member (rank =
position in the job's host list) and `run(between)` moves packets until every engine is
done, calling `between()` before each real packet so that tests can interleave their own
(fuzz, rogue) packets with the jobs' traffic.  Results are checked by `assert_exact()`.
"""

from collections import deque

import numpy as np
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from agg_network import int_inputs
from hosts.ina.engine import AggregationEngine, EngineConfig, make_schedule
from p4src_harness import fabric

K, SLOTS = 8, 64


class SwitchJobs:
    def __init__(self, topology, jobs: dict, windows: dict, elements: int = 400, seed: int = 1):
        self.spec, switches, self.manager = fabric(topology, k=K, slots=SLOTS)
        (self.switch,) = switches.values()
        self.jobs = {job: list(hosts) for job, hosts in jobs.items()}
        self.plans = {job: self.manager.start_job(job, hosts, windows[job])
                      for job, hosts in self.jobs.items()}
        self.host_on_port = {p.port: p.host for plan in self.plans.values()
                             for p in plan.hosts.values()}
        self.inputs = {job: int_inputs(len(hosts), elements, seed + job)
                       for job, hosts in self.jobs.items()}
        self.engines = {job: [AggregationEngine(
            make_schedule(data, K, len(hosts), windows[job]),
            EngineConfig(job_id=job, contributor=self.plans[job].hosts[host].contributor,
                         window=windows[job]))
            for host, data in zip(hosts, self.inputs[job])]
            for job, hosts in self.jobs.items()}
        self.real_packets = 0

    def expected_events(self) -> dict:
        """agg_events when the switch saw exactly the jobs' rounds (closing ones included):
        every contribution after a round's first one added, every round completed once."""
        rounds = {job: engines[0].plan.rounds_total for job, engines in self.engines.items()}
        return {"added": sum(rounds[job] * (len(self.jobs[job]) - 1) for job in rounds),
                "completed": sum(rounds.values())}

    def port_of(self, host: str) -> int:
        return next(plan.hosts[host].port for plan in self.plans.values()
                    if host in plan.hosts)

    def run(self, between=lambda: None) -> None:
        queue = deque((job, rank, payload) for job, engines in self.engines.items()
                      for rank, engine in enumerate(engines) for payload in engine.start(0.0))
        while queue:
            between()
            job, rank, payload = queue.popleft()
            self.real_packets += 1
            for port, out in self.switch.process_packet(self._port(job, rank),
                                                        self._frame(job, rank, payload)):
                to_job, to_rank, result = self._result(port, out)
                queue.extend((to_job, to_rank, p)
                             for p in self.engines[to_job][to_rank].on_packet(result, 0.0))
        assert all(e.done for engines in self.engines.values() for e in engines), \
            "a job did not complete"

    def assert_exact(self) -> None:
        for job, engines in self.engines.items():
            expected = np.sum(self.inputs[job], axis=0, dtype=np.int64).tolist()
            for engine in engines:
                assert engine.result().tolist() == expected, f"job {job}: wrong sum"
                assert not engine.stats.overflow

    def _port(self, job, rank):
        return self.plans[job].hosts[self.jobs[job][rank]].port

    def _frame(self, job, rank, payload) -> bytes:
        host = self.spec.host(self.jobs[job][rank])
        return bytes(Ether(src=host.mac, dst="02:00:0a:00:ff:fe")
                     / IP(src=host.ip, dst="10.0.255.254")
                     / UDP(sport=20000 + job, dport=9100) / payload)

    def _result(self, port, out):
        """(job, rank, payload) of a result frame, checked to be addressed to that worker."""
        parsed = Ether(out)
        job = parsed[UDP].dport - 20000
        host = self.spec.host(self.host_on_port[port])
        assert (parsed.dst, parsed[IP].dst, parsed[IP].src, parsed[UDP].sport) == \
            (host.mac, host.ip, "10.0.255.254", 9100)
        return job, self.jobs[job].index(host.name), bytes(parsed[UDP].payload)
