"""ATP's switches and parameter server in-process, for the worker tests: the real
p4src/main.p4 in p4switch (a topology's switches, one ATP job installed by the controller's
AggregationManager) and hosts/atp/server.py on the job's first host.

`AtpP4Fabric.receive(rank, payload)` is agg_network.LossyNetwork's switch interface: the
worker's fragment enters at its switch port; frames follow the links between switches;
a frame reaching the server's host at the server's port is handed to the server, whose
acknowledgements enter the server's switch port in turn; frames reaching a worker at its
port are returned as [(rank, payload)].  Faults (loss, duplication, lateness) are
LossyNetwork's, on the workers' links."""

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from agg_network import p4src_harness
from contracts.wire import ATP_UDP_PORT, SERVICE_IP, SERVICE_MAC, atp_server_port, worker_port
from controller.atp import racks_of
from hosts.atp.server import ParameterServer


class AtpP4Fabric:
    def __init__(self, topology, job_id, window, k=8, slots=16, members=None):
        self.k = k
        self.spec, self.switches, self.manager = p4src_harness().fabric(topology, k=k,
                                                                        slots=slots)
        self.hosts = list(members) if members else [h.name for h in self.spec.hosts]
        self.plan = self.manager.start_job(job_id, self.hosts, window, design="atp")
        self.racks, self.places = racks_of(self.plan)
        self.server = ParameterServer(job_id, self.racks, k)
        self.peer = {}
        for link in self.spec.links:
            self.peer[link.node1, link.port1] = (link.node2, link.port2)
            self.peer[link.node2, link.port2] = (link.node1, link.port1)

    def place(self, rank):
        """(rack, index) of worker `rank`."""
        return self.places[self.hosts[rank]]

    def _inject(self, host_name, sport, payload, pending):
        host = self.spec.host(host_name)
        attachment = self.plan.hosts.get(host_name)
        switch, port = (attachment.switch, attachment.port) if attachment else \
            self.manager.planner.topology.attachment(host_name)
        frame = bytes(Ether(src=host.mac, dst=SERVICE_MAC) / IP(src=host.ip, dst=SERVICE_IP)
                      / UDP(sport=sport, dport=ATP_UDP_PORT) / payload)
        pending.append((switch, port, frame))

    def receive(self, rank, payload):
        job = self.plan.job_id
        pending, delivered = [], []
        self._inject(self.hosts[rank], worker_port(job), payload, pending)
        while pending:
            switch, port, data = pending.pop(0)
            for egress, out in self.switches[switch].process_packet(port, data):
                node, node_port = self.peer[switch, egress]
                if node in self.switches:
                    pending.append((node, node_port, out))
                    continue
                frame = Ether(out)
                host = self.spec.host(node)
                assert (frame.dst, frame[IP].dst) == (host.mac, host.ip)
                udp = frame[UDP]
                if udp.dport == atp_server_port(job):
                    assert node == self.hosts[0] and frame[IP].src == SERVICE_IP
                    for ack in self.server.on_packet(bytes(udp.payload)):
                        self._inject(node, atp_server_port(job), ack, pending)
                else:
                    assert (udp.sport, udp.dport) == (ATP_UDP_PORT, worker_port(job))
                    delivered.append((self.hosts.index(node), bytes(udp.payload)))
        return delivered
