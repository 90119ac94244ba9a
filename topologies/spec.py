"""Topology description shared by topologies/, controller/ and experiments/ (no Mininet here).

A `TopologySpec` lists hosts, switches and links with fixed addresses and port numbers, so
that the Mininet builder (topologies/net.py) and the controller (routes, reduction trees)
agree on every name, address and port without talking to each other.

Generated kinds (`parse_topology(text)`):

* ``star:N``            one switch s1, hosts h1..hN; host i on port i.
* ``leafspine:L,S,H``   leaves s1..sL, spines s(L+1)..s(L+S), H hosts per leaf.  A leaf's
                        hosts are on ports 1..H, its uplink to spine j on port H+j; a spine's
                        port i goes to leaf i.
* ``fattree:K``         k-ary fat tree (K even): (K/2)^2 core switches first, then per pod
                        K/2 aggregation and K/2 edge switches; K^3/4 hosts.  An edge switch has
                        its hosts on ports 1..K/2 and aggregation switch j of its pod on port
                        K/2+j; an aggregation switch has edge j on port j and its K/2 cores on
                        ports K/2+1..K; a core switch's port p goes to pod p.
* ``tree:D,F``          complete tree of depth D and fanout F (D=1: one switch with F hosts),
                        switches numbered breadth first from the root s1.  A switch's children
                        (switches, or hosts at the last level) are on ports 1..F, its parent on
                        port F+1.
* ``PATH.json``         the P4 tutorials' topology.json layout, see `_parse_json`.

Addressing: host number n (1-based, in order) gets 10.0.((n-1)//254).((n-1)%254+1) and MAC
02:00:0a:00:<ip octet 3>:<ip octet 4>; all hosts share 10.0.0.0/16.  The aggregation service
address 10.0.255.254 / 02:00:0a:00:ff:fe is reserved.  Switch i (0-based, in order) has
device id i and gRPC port 9559+i on 127.0.0.1.

Links: `node1` is the end nearer the hosts (the host itself for a host link); a port is the
switch's port number and None on a host.  Every problem with the input raises ValueError with
a one-line message.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import re
from dataclasses import dataclass
from typing import Optional

from contracts.wire import SERVICE_IP, SERVICE_MAC

HOST_SUBNET = ipaddress.ip_network("10.0.0.0/16")
HOST_PREFIX_LEN = HOST_SUBNET.prefixlen
FIRST_GRPC_PORT = 9559
MAX_SWITCH_PORT = 510          # leaves 511 (bmv2's drop port) and above unused
MAX_HOSTS = 254 * 254          # third octet 0..253 keeps 10.0.255.254 free
MAX_SWITCHES = 1024
MAX_NODE_NAME = 10             # "<name>-eth<port>" must fit Linux's 15-character interface names


@dataclass(frozen=True)
class Host:
    name: str
    ip: str                     # without prefix length; every host is in HOST_SUBNET
    mac: str
    commands: tuple = ()        # shell commands run in the host after setup (topology.json)


@dataclass(frozen=True)
class Switch:
    name: str
    device_id: int
    grpc_port: int              # P4Runtime server on 127.0.0.1:grpc_port


@dataclass(frozen=True)
class Link:
    node1: str
    port1: Optional[int]        # switch port number; None when node1 is a host
    node2: str
    port2: Optional[int]
    bw: Optional[float] = None          # Mbit/s
    delay_ms: Optional[float] = None
    loss_pct: Optional[float] = None
    dup_pct: Optional[float] = None     # duplicated frames, percent
    reorder_pct: Optional[float] = None # frames swapped with the next one, percent
    jitter_ms: Optional[float] = None   # uniform +-jitter added to delay_ms

    def end_of(self, node: str) -> tuple[Optional[int], str, Optional[int]]:
        """(my port, peer name, peer port) seen from `node`, one of the link's ends."""
        if node == self.node1:
            return self.port1, self.node2, self.port2
        if node == self.node2:
            return self.port2, self.node1, self.port1
        raise KeyError(f"{node} is not an end of link {self.node1}-{self.node2}")


@dataclass
class TopologySpec:
    kind: str                   # "star", "leafspine", "fattree", "tree" or "json"
    hosts: list
    switches: list
    links: list

    def host(self, name: str) -> Host:
        return _find(self.hosts, name, "host")

    def switch(self, name: str) -> Switch:
        return _find(self.switches, name, "switch")

    def is_host(self, name: str) -> bool:
        # a set of the names, remade when the list changes: called for every pair of hosts
        # (impairment.longest_round_trip_ms), a scan made that a minute at 1,024 hosts
        cached = self.__dict__.get("_host_names")
        if cached is None or cached[0] is not self.hosts or cached[1] != len(self.hosts):
            cached = (self.hosts, len(self.hosts), frozenset(h.name for h in self.hosts))
            self.__dict__["_host_names"] = cached
        return name in cached[2]

    def links_of(self, node: str) -> list:
        return [l for l in self.links if node in (l.node1, l.node2)]

    def host_attachment(self, host: str) -> tuple[str, int]:
        """(switch name, switch port) the host is plugged into."""
        (link,) = self.links_of(host)
        _, switch, port = link.end_of(host)
        return switch, port

    def with_link_defaults(self, **defaults) -> "TopologySpec":
        """A copy where links without their own value of a LINK_SETTINGS field (bw, delay_ms,
        loss_pct, dup_pct, reorder_pct, jitter_ms) get the given one (None: no default)."""
        unknown = set(defaults) - set(LINK_SETTINGS)
        if unknown:
            raise TypeError(f"not a link setting: {sorted(unknown)[0]}")
        check_link_shaping(**defaults)
        def fill(link: Link) -> Link:
            return dataclasses.replace(link, **{
                key: getattr(link, key) if getattr(link, key) is not None else value
                for key, value in defaults.items()})
        return TopologySpec(self.kind, list(self.hosts), list(self.switches),
                            [fill(l) for l in self.links])

    def to_dict(self) -> dict:
        return {"kind": self.kind,
                "hosts": [dataclasses.asdict(h) for h in self.hosts],
                "switches": [dataclasses.asdict(s) for s in self.switches],
                "links": [dataclasses.asdict(l) for l in self.links]}


LINK_SETTINGS = ("bw", "delay_ms", "loss_pct", "dup_pct", "reorder_pct", "jitter_ms")


def check_link_shaping(bw=None, delay_ms=None, loss_pct=None, dup_pct=None, reorder_pct=None,
                       jitter_ms=None) -> None:
    """ValueError unless bw > 0 Mbit/s, delay and jitter >= 0 ms and loss, dup and reorder
    between 0 and 100 percent."""
    if bw is not None and not bw > 0:
        raise ValueError(f"bandwidth must be > 0 Mbit/s, got {bw}")
    for name, value in (("delay", delay_ms), ("jitter", jitter_ms)):
        if value is not None and not value >= 0:
            raise ValueError(f"{name} must be >= 0 ms, got {value}")
    for name, value in (("loss", loss_pct), ("dup", dup_pct), ("reorder", reorder_pct)):
        if value is not None and not 0 <= value <= 100:
            raise ValueError(f"{name} must be between 0 and 100 percent, got {value}")


def _find(items, name, what):
    for item in items:
        if item.name == name:
            return item
    raise KeyError(f"no {what} named {name!r}")


# ---------------------------------------------------------------- addressing

def host_ip(number: int) -> str:
    """Address of host `number` (1-based)."""
    if not 1 <= number <= MAX_HOSTS:
        raise ValueError(f"host number {number} outside 1..{MAX_HOSTS}")
    return f"10.0.{(number - 1) // 254}.{(number - 1) % 254 + 1}"


def mac_for_ip(ip: str) -> str:
    octets = ipaddress.ip_address(ip).packed
    return "02:00:0a:00:%02x:%02x" % (octets[2], octets[3])


def switch_for_index(index: int, name: Optional[str] = None) -> Switch:
    return Switch(name or f"s{index + 1}", index, FIRST_GRPC_PORT + index)


def host_for_number(number: int, name: Optional[str] = None) -> Host:
    ip = host_ip(number)
    return Host(name or f"h{number}", ip, mac_for_ip(ip))


# ---------------------------------------------------------------- generated kinds

class _Builder:
    """Collects switches, hosts and links with per-switch port numbers for the generators."""

    def __init__(self, kind: str, switch_count: int):
        if switch_count > MAX_SWITCHES:
            raise ValueError(f"{kind}: {switch_count} switches is more than {MAX_SWITCHES}")
        self.kind = kind
        self.switches = [switch_for_index(i) for i in range(switch_count)]
        self.hosts: list = []
        self.links: list = []

    def sw(self, index: int) -> str:
        return self.switches[index].name

    def add_host(self, switch_index: int, port: int) -> None:
        host = host_for_number(len(self.hosts) + 1)
        self.hosts.append(host)
        self.links.append(Link(host.name, None, self.sw(switch_index), port))

    def add_switch_link(self, lower: int, lower_port: int, upper: int, upper_port: int):
        self.links.append(Link(self.sw(lower), lower_port, self.sw(upper), upper_port))

    def spec(self) -> TopologySpec:
        if len(self.hosts) > MAX_HOSTS:
            raise ValueError(f"{self.kind}: {len(self.hosts)} hosts is more than {MAX_HOSTS}")
        spec = TopologySpec(self.kind, self.hosts, self.switches, self.links)
        validate(spec)
        return spec


def _star(n: int) -> TopologySpec:
    b = _Builder("star", 1)
    _check_hosts("star", n)
    for port in range(1, n + 1):
        b.add_host(0, port)
    return b.spec()


def _leafspine(leaves: int, spines: int, hosts_per_leaf: int) -> TopologySpec:
    _check_hosts("leafspine", leaves * hosts_per_leaf)
    b = _Builder("leafspine", leaves + spines)
    for leaf in range(leaves):
        for port in range(1, hosts_per_leaf + 1):
            b.add_host(leaf, port)
    for leaf in range(leaves):
        for spine in range(spines):
            b.add_switch_link(leaf, hosts_per_leaf + 1 + spine, leaves + spine, leaf + 1)
    return b.spec()


def _fattree(k: int) -> TopologySpec:
    if k % 2:
        raise ValueError(f"fattree:{k}: K must be even")
    half = k // 2
    _check_hosts("fattree", k ** 3 // 4)
    cores = half * half
    b = _Builder("fattree", cores + k * k)

    def agg(pod, j):
        return cores + pod * k + j

    def edge(pod, j):
        return cores + pod * k + half + j

    for pod in range(k):
        for e in range(half):
            for port in range(1, half + 1):
                b.add_host(edge(pod, e), port)
    for pod in range(k):
        for e in range(half):
            for a in range(half):
                b.add_switch_link(edge(pod, e), half + 1 + a, agg(pod, a), e + 1)
    for pod in range(k):
        for a in range(half):
            for c in range(half):
                b.add_switch_link(agg(pod, a), half + 1 + c, a * half + c, pod + 1)
    return b.spec()


def _tree(depth: int, fanout: int) -> TopologySpec:
    _check_hosts("tree", fanout ** depth)
    switch_count = sum(fanout ** level for level in range(depth))
    b = _Builder("tree", switch_count)
    first_of_level = 0
    for level in range(depth):
        count = fanout ** level
        for i in range(count):
            parent = first_of_level + i
            if level == depth - 1:
                for port in range(1, fanout + 1):
                    b.add_host(parent, port)
        first_of_level += count
    # children of switch p (breadth-first index) are switches p*F+1 .. p*F+F
    for child in range(1, switch_count):
        parent = (child - 1) // fanout
        b.add_switch_link(child, fanout + 1, parent, (child - 1) % fanout + 1)
    return b.spec()


def _check_hosts(kind: str, count: int) -> None:
    if count > MAX_HOSTS:
        raise ValueError(f"{kind}: {count} hosts is more than {MAX_HOSTS}")


_GENERATORS = {
    "star": (_star, 1, "star:N"),
    "leafspine": (_leafspine, 3, "leafspine:LEAVES,SPINES,HOSTS_PER_LEAF"),
    "fattree": (_fattree, 1, "fattree:K"),
    "tree": (_tree, 2, "tree:DEPTH,FANOUT"),
}


def _parse_generated(text: str) -> TopologySpec:
    kind, _, args = text.partition(":")
    generator, arity, usage = _GENERATORS[kind]
    parts = args.split(",") if args else []
    if len(parts) != arity or not all(re.fullmatch(r"[0-9]+", p.strip()) for p in parts):
        raise ValueError(f"bad topology {text!r}: expected {usage} with positive integers")
    numbers = [int(p) for p in parts]
    if any(n < 1 for n in numbers):
        raise ValueError(f"bad topology {text!r}: numbers must be at least 1")
    if kind == "fattree" and numbers[0] < 2:
        raise ValueError(f"bad topology {text!r}: K must be an even number of at least 2")
    return generator(*numbers)


# ---------------------------------------------------------------- topology.json

_SWITCH_PORT = re.compile(r"^(?P<node>[^-\s]+)-p(?P<port>[0-9]+)$")


def _parse_json(path: str) -> TopologySpec:
    """The P4 tutorials' layout:

        {"hosts":    {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
                             "commands": ["..."]}, ...},
         "switches": {"s1": {}, ...},
         "links":    [["h1", "s1-p1"], ["s1-p2", "s2-p1", "5ms", 100], ...]}

    A link end is a host name, "SWITCH-pPORT", or a bare switch name (next free port, in
    link order).  Optional third and fourth link items: latency ("5ms" or a number of
    milliseconds) and bandwidth (Mbit/s); an optional last item, an object, gives the
    link's impairments: {"loss": P, "dup": P, "reorder": P, "jitter": MS} (percent, ms;
    e.g. ["h1", "s1-p1", {"loss": 2}]).  Host "ip" and "mac" are optional (defaults from
    the host's position); an ip's prefix length is accepted but hosts always get /16, and
    the address must lie in 10.0.0.0/16.  "commands" run in the host after the network is
    configured.  Switches are numbered in file order.  Keys the emulator cannot honour
    (for instance a switch's "runtime_json": forwarding comes from the controller) raise.
    """
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read topology file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object with hosts, switches and links")
    unknown = set(data) - {"hosts", "switches", "links"}
    if unknown:
        raise ValueError(f"{path}: unsupported top-level key {sorted(unknown)[0]!r}")
    hosts_in = _json_mapping(data, "hosts", path)
    switches_in = _json_mapping(data, "switches", path)
    links_in = data.get("links", [])
    if not isinstance(links_in, list):
        raise ValueError(f"{path}: 'links' must be a list")

    hosts = [_json_host(path, n, name, attrs) for n, (name, attrs)
             in enumerate(hosts_in.items(), start=1)]
    switches = []
    for index, (name, attrs) in enumerate(switches_in.items()):
        if not isinstance(attrs, dict):
            raise ValueError(f"{path}: switch {name}: expected an object")
        if attrs:
            raise ValueError(f"{path}: switch {name}: unsupported key {sorted(attrs)[0]!r} "
                             "(switches run p4src and get their tables from the controller)")
        switches.append(switch_for_index(index, name))
    names = set(hosts_in) | set(switches_in)
    if len(names) != len(hosts_in) + len(switches_in):
        dup = sorted(set(hosts_in) & set(switches_in))[0]
        raise ValueError(f"{path}: {dup!r} is both a host and a switch")

    explicit = _explicit_ports(path, links_in, set(switches_in))
    next_free = {s: 1 for s in switches_in}
    links = []
    for i, item in enumerate(links_in):
        links.append(_json_link(path, i, item, set(hosts_in), set(switches_in),
                                explicit, next_free))
    spec = TopologySpec("json", hosts, switches, [_orient(l, set(hosts_in)) for l in links])
    try:
        validate(spec)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return spec


def _json_mapping(data, key, path):
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {key!r} must be an object mapping names to attributes")
    return value


def _json_host(path, number, name, attrs) -> Host:
    if not isinstance(attrs, dict):
        raise ValueError(f"{path}: host {name}: expected an object")
    unknown = set(attrs) - {"ip", "mac", "commands"}
    if unknown:
        raise ValueError(f"{path}: host {name}: unsupported key {sorted(unknown)[0]!r}")
    if "ip" in attrs:
        try:
            ip = ipaddress.ip_interface(str(attrs["ip"])).ip
        except ValueError:
            raise ValueError(f"{path}: host {name}: bad ip {attrs['ip']!r}") from None
        if ip not in HOST_SUBNET:
            raise ValueError(f"{path}: host {name}: ip {ip} is outside {HOST_SUBNET}")
        ip = str(ip)
    else:
        ip = host_ip(number)
    mac = str(attrs.get("mac", mac_for_ip(ip))).lower()
    if not re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", mac):
        raise ValueError(f"{path}: host {name}: bad mac {attrs.get('mac')!r}")
    commands = attrs.get("commands", [])
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise ValueError(f"{path}: host {name}: 'commands' must be a list of strings")
    return Host(name, ip, mac, tuple(commands))


def _explicit_ports(path, links_in, switch_names) -> dict:
    """Ports named as SWITCH-pN anywhere in the file, so that bare ends avoid them."""
    used: dict = {s: set() for s in switch_names}
    for item in links_in:
        if isinstance(item, list):
            for end in item[:2]:
                m = _SWITCH_PORT.match(end) if isinstance(end, str) else None
                if m and m["node"] in switch_names:
                    used[m["node"]].add(int(m["port"]))
    return used


_JSON_IMPAIRMENTS = {"loss": "loss_pct", "dup": "dup_pct", "reorder": "reorder_pct",
                     "jitter": "jitter_ms"}


def _json_impairments(where, value) -> dict:
    """Link fields from a link's trailing {"loss": P, "dup": P, "reorder": P, "jitter": MS}."""
    unknown = set(value) - set(_JSON_IMPAIRMENTS)
    if unknown:
        raise ValueError(f"{where}: unsupported link key {sorted(unknown)[0]!r} "
                         f"(known: {', '.join(_JSON_IMPAIRMENTS)})")
    fields = {}
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ValueError(f"{where}: {key} must be a number, got {number!r}")
        fields[_JSON_IMPAIRMENTS[key]] = float(number)
    try:
        check_link_shaping(**fields)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    return fields


def _json_link(path, index, item, host_names, switch_names, explicit, next_free) -> Link:
    where = f"{path}: link {index + 1}"
    impairments = {}
    if isinstance(item, list) and len(item) > 2 and isinstance(item[-1], dict):
        impairments = _json_impairments(where, item[-1])
        item = item[:-1]
    if not isinstance(item, list) or not 2 <= len(item) <= 4:
        raise ValueError(f"{where}: expected [end1, end2, latency?, bandwidth?, "
                         "{loss, dup, reorder, jitter}?]")
    ends = []
    for end in item[:2]:
        if not isinstance(end, str):
            raise ValueError(f"{where}: link end {end!r} is not a string")
        m = _SWITCH_PORT.match(end)
        if m and m["node"] in switch_names:
            ends.append((m["node"], int(m["port"])))
        elif end in switch_names:
            port = next_free[end]
            while port in explicit[end]:
                port += 1
            next_free[end] = port + 1
            ends.append((end, port))
        elif end in host_names:
            ends.append((end, None))
        else:
            raise ValueError(f"{where}: unknown node {end!r}")
    delay = _json_latency(where, item[2]) if len(item) > 2 else None
    bw = _json_bandwidth(where, item[3]) if len(item) > 3 else None
    (n1, p1), (n2, p2) = ends
    return Link(n1, p1, n2, p2, bw=bw, delay_ms=delay, **impairments)


def _json_latency(where, value) -> Optional[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ms = float(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[0-9.]+\s*(ms)?\s*", value):
        try:
            ms = float(value.strip().removesuffix("ms"))
        except ValueError:
            raise ValueError(f"{where}: bad latency {value!r}") from None
    else:
        raise ValueError(f"{where}: bad latency {value!r} (expected e.g. \"5ms\")")
    if ms < 0:
        raise ValueError(f"{where}: negative latency")
    return ms or None


def _json_bandwidth(where, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{where}: bad bandwidth {value!r} (expected Mbit/s > 0)")
    return float(value)


def _orient(link: Link, host_names) -> Link:
    """Put a host end first, as the generated kinds do."""
    if link.node2 in host_names and link.node1 not in host_names:
        return dataclasses.replace(link, node1=link.node2, port1=link.port2,
                                   node2=link.node1, port2=link.port1)
    return link


# ---------------------------------------------------------------- checks and entry point

def validate(spec: TopologySpec) -> None:
    """Raise ValueError (one line) unless the spec is one the emulator can build."""
    names = [n.name for n in spec.hosts] + [s.name for s in spec.switches]
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"node name {name!r} used twice")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*[0-9]", name) or len(name) > MAX_NODE_NAME:
            raise ValueError(f"node name {name!r}: use a letter, then letters/digits/_ ending "
                             f"in a digit, at most {MAX_NODE_NAME} characters")
        seen.add(name)
    if not spec.switches:
        raise ValueError("a topology needs at least one switch")
    host_names = {h.name for h in spec.hosts}
    ips = [h.ip for h in spec.hosts]
    for ip in set(ips):
        if ips.count(ip) > 1:
            raise ValueError(f"ip {ip} used by two hosts")
    if SERVICE_IP in ips:
        raise ValueError(f"ip {SERVICE_IP} is reserved for the aggregation service")
    macs = [h.mac for h in spec.hosts]
    if len(set(macs)) != len(macs) or SERVICE_MAC in macs:
        raise ValueError("host MAC addresses must be unique and not the service MAC")

    used_ports: dict = {}
    host_links = {h: 0 for h in host_names}
    for link in spec.links:
        for node, port in ((link.node1, link.port1), (link.node2, link.port2)):
            if node in host_names:
                if port is not None:
                    raise ValueError(f"host {node} has a port number on a link")
                host_links[node] += 1
                continue
            if node not in seen:
                raise ValueError(f"link to unknown node {node!r}")
            if not isinstance(port, int) or not 1 <= port <= MAX_SWITCH_PORT:
                raise ValueError(f"switch {node}: port {port!r} outside 1..{MAX_SWITCH_PORT}")
            if (node, port) in used_ports:
                raise ValueError(f"switch {node} port {port} used by two links")
            used_ports[(node, port)] = link
        if link.node1 in host_names and link.node2 in host_names:
            raise ValueError(f"hosts {link.node1} and {link.node2} linked directly; "
                             "hosts must connect to a switch")
        if link.node1 == link.node2:
            raise ValueError(f"link from {link.node1} to itself")
    for host, count in host_links.items():
        if count != 1:
            raise ValueError(f"host {host} has {count} links; each host needs exactly one")


def parse_topology(text: str) -> TopologySpec:
    """`star:N`, `leafspine:L,S,H`, `fattree:K`, `tree:D,F` or a topology.json path."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty topology")
    text = text.strip()
    kind = text.partition(":")[0]
    if kind in _GENERATORS:
        return _parse_generated(text)
    if text.endswith(".json") or os.path.exists(text):
        return _parse_json(text)
    raise ValueError(f"bad topology {text!r}: expected star:N, leafspine:L,S,H, fattree:K, "
                     "tree:D,F or a topology.json file")
