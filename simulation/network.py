"""The simulated network: a SimGrid platform built from a topology spec (topologies/spec.py).

Every host and every switch of the spec becomes a SimGrid host (a switch needs one to run its
aggregation actor); every spec link becomes a split-duplex SimGrid link (each direction its
own capacity, as on a full-duplex Ethernet link) with the link's rate and delay.  Routes are
the spec's links, and a shortest path for every pair of hosts that exchange messages (the
host-only algorithms send host to host through the switches; in-network aggregation only
ever sends over one link, from a node to its neighbour in the reduction tree).

The network model is SimGrid's CM02: a transfer of S bytes over a route takes the route's
latency plus S / (its share of the bottleneck rate), with max-min fair sharing between
concurrent transfers, and no latency or bandwidth correction factors (SimGrid's default
LV08 model multiplies latencies by 13 and rates by 0.97 to fit TCP on real clusters, and its
cross-traffic option takes 5% of the reverse direction for acknowledgements; we
model the frames ourselves: simulation/ina.py and host_algorithms.py size every message as
the frames it stands for, headers included).

SimGrid allows one engine per process, so every simulation runs in a child process
(simulation/run.py, `run_isolated`), the only process that imports this module.
"""

from __future__ import annotations


import networkx as nx
import simgrid
from simgrid import Engine, LinkInRoute, NetZone

# re-exported for the Python engine's callers
from simulation.cpp_engine import UNSHAPED_MBIT, LinkModel, link_model   # noqa: F401

HOST_SPEED_FLOPS = 1e9        # unused (no computation is simulated), but SimGrid needs one
SIMGRID_VERSION = str(simgrid.simgrid_version)


class Platform:
    """The SimGrid engine and platform for one spec; `host(name)`, `link_between(a, b)`.

    Routes: every link both ways, and a shortest path (networkx, over the spec's links) for
    every pair in `pairs`, in a SimGrid full zone.  (A Dijkstra zone would find the paths
    itself, but SimGrid's Python binding makes it without its route cache, so every message
    ran Dijkstra over the whole fabric: minutes for one round on fattree:24.)"""

    def __init__(self, spec, pairs=(), log_level: str = "critical"):
        self.engine = Engine(["simulate", f"--log=root.thres:{log_level}",
                              "--cfg=network/model:CM02",
                              "--cfg=network/TCP-gamma:0",
                              "--cfg=network/crosstraffic:0",
                              "--cfg=contexts/stack-size:256"])
        zone = NetZone.create_full_zone("fabric")
        names = [h.name for h in spec.hosts] + [s.name for s in spec.switches]
        self.hosts = {name: zone.create_host(name, HOST_SPEED_FLOPS) for name in names}
        self.links: dict[frozenset, LinkModel] = {}
        self.directions: dict[tuple, LinkInRoute] = {}
        self.graph = nx.Graph()
        for index, link in enumerate(spec.links):
            model = link_model(link, index)
            simlink = zone.create_split_duplex_link(model.name, model.mbit * 1e6 / 8)
            simlink.set_latency(model.delay_s)
            simlink.seal()
            # each direction its own half (a symmetric route would reuse UP both ways)
            self.directions[(link.node1, link.node2)] = LinkInRoute(simlink,
                                                                    LinkInRoute.Direction.UP)
            self.directions[(link.node2, link.node1)] = LinkInRoute(simlink,
                                                                    LinkInRoute.Direction.DOWN)
            self.links[frozenset((link.node1, link.node2))] = model
            self.graph.add_edge(link.node1, link.node2)
        routed = set()
        for (a, b) in self.directions:
            self._route(zone, [a, b])
            routed.add((a, b))
        for a, b in pairs:
            if a != b and (a, b) not in routed:
                self._route(zone, nx.shortest_path(self.graph, a, b))
                routed.add((a, b))
        zone.seal()

    def _route(self, zone, path: list) -> None:
        zone.add_route(self.hosts[path[0]].netpoint, self.hosts[path[-1]].netpoint, None, None,
                       [self.directions[hop] for hop in zip(path, path[1:])], False)

    def host(self, name: str):
        return self.hosts[name]

    def link_between(self, a: str, b: str) -> LinkModel:
        return self.links[frozenset((a, b))]

    def uplink(self, host: str) -> LinkModel:
        """The link of a host (hosts have one)."""
        neighbour = next(iter(self.graph[host]))
        return self.link_between(host, neighbour)

    @staticmethod
    def clock() -> float:
        return Engine.clock

    def run(self) -> None:
        self.engine.run()
