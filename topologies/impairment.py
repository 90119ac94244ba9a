"""Where a link's impairments (delay, jitter, loss, duplication, reordering) are applied.

Two ways (docs/impairments.md): the built-in switch's own `--impair` option, or, for bmv2,
which has no such option, the kernel: loss by a tc bpf program on each end's egress
(topologies/linkloss.py: no sch_netem needed, which the kernels here and in CI lack), delay
and jitter by tc netem on the Mininet link (under its tbf; where sch_netem exists).  The
built-in switch always impairs its links itself, so its results do not depend on the
kernel.  The link's bandwidth is a tc tbf on each interface either way
(topologies/shaping.py).

Each direction of each link is impaired exactly once, as netem on both ends' egress would:

* host - switch link: on the switch's port, `PORT:both:...` (rx: host -> switch, tx:
  switch -> host);
* switch - switch link: `PORT:tx:...` on each end (each switch impairs what it sends).

The switch writes its counters to `<sw>.impair.json` (`--impair-stats`); `read_counters`
sums them over ports and directions.
"""

from __future__ import annotations

import json
import time
from typing import Optional

import networkx as nx

from topologies.spec import Link, TopologySpec

# --impair key for each Link field, in the order they are written
IMPAIR_KEYS = (("loss", "loss_pct"), ("dup", "dup_pct"), ("reorder", "reorder_pct"),
               ("delay", "delay_ms"), ("jitter", "jitter_ms"))
COUNTERS = ("dropped", "duplicated", "reordered", "delayed")
STATS_SUFFIX = ".impair.json"
STATS_WAIT_S = 3.0     # the switch rewrites its stats file every second


class ImpairmentUnsupported(ValueError):
    """The chosen switch target cannot apply a link's impairments (one-line message)."""


def is_impaired(link: Link) -> bool:
    return any(getattr(link, field) is not None for _, field in IMPAIR_KEYS)


def impair_settings(link: Link, seed: Optional[int] = None) -> Optional[str]:
    """`loss=2,delay=10,seed=7` for a link's impairments; None when it has none."""
    if not is_impaired(link):
        return None
    items = [f"{key}={getattr(link, field):g}" for key, field in IMPAIR_KEYS
             if getattr(link, field) is not None]
    if seed is not None:
        items.append(f"seed={seed}")
    return ",".join(items)


def switch_impair_args(spec: TopologySpec, seed: Optional[int] = None) -> dict:
    """{switch name: ("PORT:DIRECTION:SETTINGS", ...)} for every switch with an impaired link
    (see the module docstring for which port gets which direction)."""
    args: dict = {}
    for link in spec.links:
        settings = impair_settings(link, seed)
        if settings is None:
            continue
        ends = [(node, port) for node, port in ((link.node1, link.port1),
                                                (link.node2, link.port2))
                if not spec.is_host(node)]
        direction = "tx" if len(ends) == 2 else "both"
        for switch, port in ends:
            args.setdefault(switch, []).append(f"{port}:{direction}:{settings}")
    return {switch: tuple(specs) for switch, specs in args.items()}


def longest_round_trip_ms(spec: TopologySpec) -> float:
    """The most a frame and its answer can spend in link delays (delay + jitter per link)
    between two hosts and back, over the fewest-hop paths: what a retransmission timeout has
    to wait for at least."""
    graph = nx.Graph()
    for link in spec.links:
        graph.add_edge(link.node1, link.node2,
                       delay=(link.delay_ms or 0.0) + (link.jitter_ms or 0.0))
    worst = 0.0
    for source in (h.name for h in spec.hosts):
        for target, path in nx.single_source_shortest_path(graph, source).items():
            if spec.is_host(target):
                worst = max(worst, sum(graph.edges[a, b]["delay"]
                                       for a, b in zip(path, path[1:])))
    return 2 * worst


def check_netem_supported(spec: TopologySpec) -> None:
    """Mininet's TCLink gives netem delay, jitter and loss only: refuse dup/reorder."""
    for link in spec.links:
        for name, value in (("dup", link.dup_pct), ("reorder", link.reorder_pct)):
            if value is not None:
                raise ImpairmentUnsupported(
                    f"link {link.node1}-{link.node2}: {name} is only supported by the built-in "
                    "switch (--switch builtin); with bmv2 links get loss (tc bpf), delay and "
                    "jitter (tc netem)")


def check_target(spec: TopologySpec, switch_kind: str) -> None:
    """ImpairmentUnsupported when `switch_kind` ("builtin" or "bmv2") cannot impair the
    spec's links as asked."""
    if switch_kind != "builtin":
        check_netem_supported(spec)


def tclink_options(link: Link, netem: bool) -> dict:
    """Mininet TCLink options: bw always; delay and jitter only when netem applies them (the
    switch does not).  Loss is never netem's: the switch's, or topologies/linkloss.py's."""
    options = {}
    if link.bw is not None:
        options["bw"] = link.bw
    if netem:
        if link.delay_ms is not None:
            options["delay"] = f"{link.delay_ms:g}ms"
        if link.jitter_ms is not None:
            options["jitter"] = f"{link.jitter_ms:g}ms"
    return options


def lossy_ends(spec: TopologySpec) -> list:
    """(node, port or None for a host, loss percent, the switch it counts for) of both ends
    of every link with a loss: each end drops what it sends (topologies/linkloss.py).  A
    host's end counts for the switch it is attached to."""
    ends = []
    for link in spec.links:
        if not link.loss_pct:
            continue
        for (node, port), (other, _) in (((link.node1, link.port1), (link.node2, link.port2)),
                                         ((link.node2, link.port2), (link.node1, link.port1))):
            host = spec.is_host(node)
            ends.append((node, None if host else port, link.loss_pct,
                         other if host else node))
    return ends


def stats_path(output_dir: str, switch: str) -> str:
    return f"{output_dir.rstrip('/')}/{switch}{STATS_SUFFIX}"


def counters_of(stats: dict) -> dict:
    """{counter: sum over ports and directions} from one switch's stats document."""
    totals = dict.fromkeys(COUNTERS, 0)
    for directions in stats.get("ports", {}).values():
        for counters in directions.values():
            for name in COUNTERS:
                totals[name] += counters.get(name, 0)
    return totals


def read_stats(path: str) -> dict:
    """A switch's --impair-stats document; ValueError with a one-line reason if unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read impairment stats {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON: {e.msg}") from None


def fresh_stats(path: str, written_after: Optional[float] = None,
                timeout_s: float = STATS_WAIT_S) -> dict:
    """read_stats, waiting up to timeout_s for a document whose "time" is at least
    written_after (a final one always does); the newest one read if none comes."""
    deadline = time.monotonic() + timeout_s
    while True:
        stats = read_stats(path)
        fresh = (written_after is None or stats.get("final")
                 or stats.get("time", 0) >= written_after)
        if fresh or time.monotonic() >= deadline:
            return stats
        time.sleep(0.1)


def sum_counters(per_switch: dict) -> dict:
    """{counter: total} over {switch: {counter: value}}."""
    return {name: sum(c[name] for c in per_switch.values()) for name in COUNTERS}


# -- command line: the link options of `python -m lab` and `experiments compare`

# (option, its unit, help): one per field of contracts.requests.LinkSettings, which turns
# them into TopologySpec.with_link_defaults keywords
LINK_ARGUMENTS = (
    ("bw", "MBIT", "every link's bandwidth, Mbit/s"),
    ("delay", "MS", "every link's delay, ms"),
    ("jitter", "MS", "every link's delay jitter (uniform +-MS), ms"),
    ("loss", "PCT", "every link's loss, percent (bmv2: a tc bpf program drops)"),
    ("dup", "PCT", "every link's duplication, percent (built-in switch only)"),
    ("reorder", "PCT", "every link's reordering, percent (built-in switch only)"),
)


def add_link_arguments(parser) -> None:
    """--bw, --delay, --jitter, --loss, --dup, --reorder: settings for every link.  The built-in
    switch impairs links itself (--impair); with bmv2 the kernel does: loss by tc bpf
    (topologies/linkloss.py), delay and jitter by tc netem (docs/impairments.md)."""
    for name, unit, text in LINK_ARGUMENTS:
        parser.add_argument(f"--{name}", type=float, metavar=unit, help=text)
