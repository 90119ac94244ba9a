"""Bytes on the wire: kernel interface counters read before and after each run.

Switch ports live in the root namespace, so their counters are
/sys/class/net/<switch>-eth<port>/statistics/{tx,rx}_bytes.  A host's interface lives in the
host's own network namespace, where /sys/class/net (mounted for the root namespace) cannot
see it; /proc/<pid>/net/dev of a process in that namespace shows the same kernel counters.
Counts are whole Ethernet frames as the veth sends them (headers included, no FCS).
With segmentation offload (topologies/net.py) a host's TCP send of several segments is one
frame for the veth's counters, with one set of headers: a host's counts add the headers of
the other segments (`segment_headers`), so they stay the bytes of the frames on the wire;
a switch port's counts (sysfs) count such a send once, with its one set of headers.
On a cluster (topologies/cluster.py) the nodes on other servers are read through their
Mininet shell there (`cat /proc/net/dev` in the node's namespace).
"""

from __future__ import annotations

from dataclasses import dataclass

from topologies.net import host_interface, switch_interface


@dataclass(frozen=True)
class Traffic:
    tx_bytes: int
    rx_bytes: int

    def __sub__(self, earlier: "Traffic") -> "Traffic":
        return Traffic(self.tx_bytes - earlier.tx_bytes, self.rx_bytes - earlier.rx_bytes)


def parse_net_dev(text: str) -> dict:
    """{interface: Traffic} from the text of /proc/net/dev."""
    counters = {}
    for line in text.splitlines():
        name, sep, fields = line.partition(":")
        values = fields.split()
        if sep and len(values) >= 9 and values[0].isdigit():
            counters[name.strip()] = Traffic(tx_bytes=int(values[8]), rx_bytes=int(values[0]))
    return counters


def sysfs_traffic(interface: str, root: str = "/sys/class/net") -> Traffic:
    def read(counter: str) -> int:
        with open(f"{root}/{interface}/statistics/{counter}") as handle:
            return int(handle.read())
    return Traffic(tx_bytes=read("tx_bytes"), rx_bytes=read("rx_bytes"))


def namespace_traffic(pid: int, interface: str) -> Traffic:
    with open(f"/proc/{pid}/net/dev") as handle:
        counters = parse_net_dev(handle.read())
    if interface not in counters:
        raise KeyError(f"interface {interface} not found in the namespace of pid {pid}")
    return counters[interface]


# Ethernet, IPv4 and TCP with the timestamp option (Linux's default): a segment's headers
TCP_SEGMENT_HEADER_BYTES = 14 + 20 + 32


def parse_snmp(text: str) -> dict:
    """{"Tcp": {"OutSegs": n, ...}, "Udp": {...}, ...} from /proc/net/snmp (each protocol a
    header line, then a value line)."""
    lines: dict = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep:
            lines.setdefault(name, []).append(rest.split())
    return {name: dict(zip(rows[0], map(int, rows[1])))
            for name, rows in lines.items() if len(rows) == 2}


def segment_headers(snmp: dict, netstat: dict) -> tuple[int, int]:
    """(sent, received) bytes of the headers of TCP segments that crossed the interface inside
    a frame of several (offloaded).  Sent: the namespace's TCP segments (Tcp OutSegs counts
    each) less its TCP frames (IP's packets, Ip OutRequests, less UDP's and ICMP's).  Received:
    IP's packets counted by ECN mark (IpExt In*Pkts count each segment) less those counted as
    they came (Ip InReceives).  Cumulative, like the counters; snmp is /proc/net/snmp's and
    netstat /proc/net/netstat's (parse_snmp)."""
    tcp, udp, icmp = snmp.get("Tcp", {}), snmp.get("Udp", {}), snmp.get("Icmp", {})
    tcp_frames_sent = (snmp.get("Ip", {}).get("OutRequests", 0) - udp.get("OutDatagrams", 0)
                       - icmp.get("OutMsgs", 0))
    extra_sent = max(0, tcp.get("OutSegs", 0) - tcp_frames_sent)
    ip_ext = netstat.get("IpExt", {})
    segments_received = sum(ip_ext.get(name, 0) for name in
                            ("InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts"))
    extra_received = max(0, segments_received - snmp.get("Ip", {}).get("InReceives", 0))
    return extra_sent * TCP_SEGMENT_HEADER_BYTES, extra_received * TCP_SEGMENT_HEADER_BYTES


def namespace_wire_traffic(pid: int, interface: str) -> Traffic:
    """namespace_traffic with the headers of offloaded segments added (segment_headers)."""
    traffic = namespace_traffic(pid, interface)
    tables = {}
    for name in ("snmp", "netstat"):
        with open(f"/proc/{pid}/net/{name}") as handle:
            tables[name] = parse_snmp(handle.read())
    sent, received = segment_headers(tables["snmp"], tables["netstat"])
    return Traffic(traffic.tx_bytes + sent, traffic.rx_bytes + received)


def parse_tcp_retransmitted_segments(text: str) -> int:
    """RetransSegs of the Tcp lines of /proc/net/snmp (a header line, then a value line)."""
    tcp = [line.split()[1:] for line in text.splitlines() if line.startswith("Tcp:")]
    if len(tcp) != 2 or "RetransSegs" not in tcp[0]:
        raise ValueError("no Tcp RetransSegs counter in /proc/net/snmp")
    return int(tcp[1][tcp[0].index("RetransSegs")])


def namespace_tcp_retransmitted_segments(pid: int) -> int:
    """TCP segments sent again, by every socket of the network namespace of `pid`."""
    with open(f"/proc/{pid}/net/snmp") as handle:
        return parse_tcp_retransmitted_segments(handle.read())


@dataclass(frozen=True)
class Snapshot:
    hosts: dict          # host name -> Traffic of its interface
    ports: dict          # switch interface name -> Traffic

    def __sub__(self, earlier: "Snapshot") -> "Snapshot":
        return Snapshot({h: t - earlier.hosts[h] for h, t in self.hosts.items()},
                        {p: t - earlier.ports[p] for p, t in self.ports.items()})

    def to_dict(self) -> dict:
        def plain(table):
            return {name: {"tx_bytes": t.tx_bytes, "rx_bytes": t.rx_bytes}
                    for name, t in sorted(table.items())}
        return {"hosts": plain(self.hosts), "ports": plain(self.ports)}


def remote_traffic(node, interface: str) -> Traffic:
    """The counters of an interface of a node on another server, read by its shell."""
    counters = parse_net_dev(node.cmd("cat /proc/net/dev"))
    if interface not in counters:
        raise KeyError(f"interface {interface} not found on {node.name} ({node.server})")
    return counters[interface]


class InterfaceCounters:
    """Reads every host interface and switch port of a running topologies.net.Network."""

    def __init__(self, network):
        spec = network.spec
        self._network = network
        # the hosts' own sends left whole: their counters need the other segments' headers
        self._segmenting = bool(getattr(network, "segmentation_offload", False))
        self._hosts = [(h.name, network.host(h.name).pid, host_interface(h.name))
                       for h in spec.hosts]
        self._ports = sorted((switch_interface(node, port), node) for link in spec.links
                             for node, port in ((link.node1, link.port1),
                                                (link.node2, link.port2))
                             if port is not None)

    def _remote(self, name: str):
        node = self._network.mininet.get(name)
        return node if getattr(node, "isRemote", False) else None

    def snapshot(self) -> Snapshot:
        hosts, ports = {}, {}
        for name, pid, interface in self._hosts:
            remote = self._remote(name)
            hosts[name] = (remote_traffic(remote, interface) if remote
                           else namespace_wire_traffic(pid, interface) if self._segmenting
                           else namespace_traffic(pid, interface))
        for port, switch in self._ports:
            remote = self._remote(switch)
            ports[port] = remote_traffic(remote, port) if remote else sysfs_traffic(port)
        return Snapshot(hosts, ports)
