"""The topology as a graph: which switch port leads where, and IPv4 routes for every host.

Built from a `topologies.spec.TopologySpec` (imported lazily by callers; only its attributes
are used here).  Nodes are host and switch names; every edge knows the switch port number at
each switch end.  Everything is deterministic: ties are broken by node order in the spec.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True)
class Route:
    """One ipv4_routes entry: on `switch`, traffic to `host_ip`/32 leaves through `port`."""

    switch: str
    host_ip: str
    port: int


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
        for link in spec.links:
            self.graph.add_edge(link.node1, link.node2,
                                ports={link.node1: link.port1, link.node2: link.port2})

    def is_switch(self, name: str) -> bool:
        return self.graph.nodes[name].get("kind") == "switch"

    def port_towards(self, switch: str, neighbour: str) -> int:
        """The port of `switch` whose link goes to `neighbour`."""
        return self.graph.edges[switch, neighbour]["ports"][switch]

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
        """A /32 route on every switch for every host it can reach, along shortest paths."""
        routes = []
        for host_name in self.host_names:
            host = self.spec.host(host_name)
            # One BFS from the host: the predecessor of a switch is its next hop to the host.
            next_hop = nx.predecessor(self.graph, host_name)
            for switch in self.switch_names:
                hops = next_hop.get(switch)
                if not hops:
                    continue
                routes.append(Route(switch, host.ip, self.port_towards(switch, hops[0])))
        return routes
