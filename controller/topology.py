"""The topology as a graph: which switch port leads where, and IPv4 routes for every host.

Built from a `topologies.spec.TopologySpec` (imported lazily by callers; only its attributes
are used here).  Nodes are host and switch names; every edge knows the switch port number at
each switch end.  Everything is deterministic: ties are broken by node order in the spec.

Routes are ECMP: a switch's route to a host lists every neighbour that starts a shortest path
to it (the host's breadth-first predecessors, networkx), so multipath fabrics (fat trees,
leaf-spine with several spines) spread flows over all equal-cost paths (p4src/forwarding.p4).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from contracts.wire import ECMP_MAX_GROUP_SIZE


@dataclass(frozen=True)
class Route:
    """One ipv4_routes entry: on `switch`, traffic to `host_ip`/32 leaves through one of
    `ports` (ascending; more than one: equal-cost next hops, one chosen per flow), each with
    the weight `weight` in the switch's ECMP group (1 for a single port; see ecmp_weights)."""

    switch: str
    host_ip: str
    ports: tuple
    weight: int = 1


class TopologyGraph:
    """Hosts and switches of a TopologySpec with the port numbers of every link."""

    def __init__(self, spec):
        self.spec = spec
        self.graph = nx.Graph()
        self.switch_names = [s.name for s in spec.switches]
        self.host_names = [h.name for h in spec.hosts]
        for name in self.switch_names:
            self.graph.add_node(name, kind="switch")
        for name in self.host_names:
            self.graph.add_node(name, kind="host")
        self._ports = {}            # (node, neighbour) -> node's port; routes() asks millions
        for link in spec.links:
            self.graph.add_edge(link.node1, link.node2)
            self._ports[link.node1, link.node2] = link.port1
            self._ports[link.node2, link.node1] = link.port2

    def is_switch(self, name: str) -> bool:
        return self.graph.nodes[name].get("kind") == "switch"

    def port_towards(self, switch: str, neighbour: str) -> int:
        """The port of `switch` whose link goes to `neighbour`."""
        return self._ports[switch, neighbour]

    def attachment(self, host: str) -> tuple[str, int]:
        """(switch, port) the host is plugged into."""
        neighbours = list(self.graph.neighbors(host))
        if len(neighbours) != 1:
            raise ValueError(f"host {host} has {len(neighbours)} links; expected exactly one")
        switch = neighbours[0]
        return switch, self.port_towards(switch, host)

    def switch_graph(self) -> nx.Graph:
        """The switches and the links between them only."""
        return self.graph.subgraph(self.switch_names)

    def routes(self) -> list[Route]:
        """A /32 route on every switch for every host it can reach, over every shortest path:
        the route's ports lead to the switch's neighbours on shortest paths to the host."""
        next_ports = {}
        for host_name in self.host_names:
            # One BFS from the host: a switch's predecessors are all its next hops to the host.
            next_hops = nx.predecessor(self.graph, host_name)
            for switch in self.switch_names:
                hops = next_hops.get(switch)
                if hops:
                    next_ports[switch, host_name] = tuple(sorted(
                        self.port_towards(switch, hop) for hop in hops))
        weights = self.ecmp_weights(next_ports)
        ips = {host.name: host.ip for host in self.spec.hosts}
        return [Route(switch, ips[host], ports,
                      weights[switch] if len(ports) > 1 else 1)
                for (switch, host), ports in next_ports.items()]

    def ecmp_weights(self, next_ports: dict) -> dict:
        """{switch: the weight of each member in its ECMP groups}.  A switch whose nearest host
        is t + 1 hops away gets B ** t, B the largest group of the topology, so that a group of
        n members picks (hash mod n*B**t) div B**t: another part of the flow's hash than the
        switches nearer the hosts use (p4src/forwarding.p4 says why), capped so that n times the
        weight stays within ECMP_MAX_GROUP_SIZE."""
        sizes = {}
        for (switch, _), ports in next_ports.items():
            sizes[switch] = max(sizes.get(switch, 1), len(ports))
        base = max(sizes.values(), default=1)
        hops_to_host = nx.multi_source_dijkstra_path_length(self.graph, set(self.host_names)) \
            if self.host_names else {}
        weights = {}
        for switch in self.switch_names:
            tier = max(0, hops_to_host.get(switch, 1) - 1)
            widest = sizes.get(switch, 1)
            weights[switch] = max(1, min(base ** tier, ECMP_MAX_GROUP_SIZE // widest))
        return weights
