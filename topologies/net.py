"""Build, start and tear down a Mininet network from a TopologySpec.

Hosts get their address in 10.0.0.0/16, receive offloads off and IPv6 off, transmit
checksum and segmentation offloads on where every switch takes a TCP send whole
(`segmentation_offload`, $INA_TSO: the built-in switch unless XDP, grouped or in cluster
mode) and off elsewhere, and reach each other in one of two ways (`host_addressing`): "gateway" (local networks, wherever the kernel
takes the accept program): one neighbour entry for the service address, their subnet routed
through it, a tc ingress program taking in frames sent to the service MAC
(topologies/hostaddr.py); "static" (cluster mode, or no bpf(2)): static ARP entries for every
other host and for the service address, n^2 in all.  Large local networks run their builtin
switches SWITCHES_PER_PROCESS to a process (`switches_per_process`, topologies.switches
SwitchGroup).  Commands started on hosts (`Network.popen`) go to the network's spawner first,
if it was handed one (`spawner`: fabric/spawner.py starts the hosts' commands from a zygote,
topologies/zygote.py, or as threads of worker groups); the network itself knows no
command.  A link with a bandwidth is shaped by a tc tbf on each of its interfaces
(topologies/shaping.py); delay, jitter, loss, duplication and reordering are
done by the built-in switch itself (`--impair`, counters in <output_dir>/<sw>.impair.json)
or, with bmv2, by tc netem under that tbf (topologies/impairment.py).  There is no OpenFlow
controller: each switch is a P4 target process (topologies.switches) that the P4Runtime
controller programs.  `Network.stop()` removes everything it made (processes started with
`Network.popen`, switch processes, veths, host namespaces), also after a failed start.

A switch process that dies while the network runs is restarted by a supervisor thread
(topologies/supervisor.py) unless `supervise=False`; `on_switch_restart(name)` is then
called to reprogram it (fabric/running.py sets it to the controller's recovery).

With `cluster` (topologies/cluster.py) the same network is placed over several servers with
Mininet's cluster mode: RemoteHosts, our switch processes started on their server with their
gRPC port forwarded here, and tunnels for the links that cross servers.
"""

from __future__ import annotations

import os
import subprocess
from typing import Optional

from mininet.link import Link
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import Host

from contracts import offloads
from contracts.cli import interrupts_deferred
from contracts.requests import FabricRequest
from contracts.wire import SERVICE_IP, SERVICE_MAC
from topologies import cluster as cluster_mode
from topologies import hostaddr, impairment, linkloss, shaping
from topologies.shaping import ShapedIntf
from topologies.spec import HOST_PREFIX_LEN, TopologySpec, parse_topology
from topologies.supervisor import SwitchSupervisor
from topologies.switches import (Bmv2Switch, BuiltinP4Switch, P4ProcessSwitch,
                                 bmv2_thrift_port, group_switches, port_accepts,
                                 resolve_switch_kind, stop_all, switch_class)

POPEN_STOP_TIMEOUT_S = 3.0
# Builtin switches of networks with GROUP_FROM_SWITCHES or more run SWITCHES_PER_PROCESS to a
# process, with receive rings of GROUP_RING_KB per port instead of the C back end's 8 MB
# (320 switches of 16 ports: 41 GB of rings otherwise).  docs/scaling.md has the figures.
GROUP_FROM_SWITCHES = 64
SWITCHES_PER_PROCESS = 16
GROUP_RING_KB = 512
HOST_ADDRESSING = ("auto", "gateway", "static")
# Shell commands sent to this many nodes before their answers are read.
PARALLEL_SHELL_COMMANDS = 64


class NetworkError(RuntimeError):
    """The network could not be built or configured (one-line message)."""


def requested_network(request: FabricRequest) -> tuple:
    """(spec, switch kind, cluster) of a contracts.requests.FabricRequest (cluster None
    without --cluster), checked against what that switch can impair and run; ValueError
    (one line) for a bad request."""
    spec = parse_topology(request.topo)
    kind = resolve_switch_kind(request.switch)
    spec = spec.with_link_defaults(**request.links.spec_defaults())
    impairment.check_target(spec, kind)
    cluster = (cluster_mode.cluster_of(request.cluster) if request.cluster is not None
               else None)
    if cluster is not None and kind != "builtin":
        raise ValueError("--cluster runs the builtin switch only: use --switch builtin")
    return spec, kind, cluster


def require_root(what: str = "this command") -> None:
    if os.geteuid() != 0:
        raise NetworkError(f"{what} needs root (network namespaces, veths): run it with sudo")


def host_interface(host_name: str) -> str:
    return f"{host_name}-eth0"


def switch_interface(switch_name: str, port: int) -> str:
    return f"{switch_name}-eth{port}"


def interface_names(spec: TopologySpec) -> list:
    """Every veth end the network creates (host ends exist in the root namespace briefly)."""
    names = [host_interface(h.name) for h in spec.hosts]
    for link in spec.links:
        for node, port in ((link.node1, link.port1), (link.node2, link.port2)):
            if port is not None:
                names.append(switch_interface(node, port))
    return names


def preflight(spec: TopologySpec, bmv2: bool = False) -> None:
    """Refuse to start over leftovers of another network instead of failing half-way
    (bmv2: its switches' Thrift ports must be free too)."""
    for name in interface_names(spec):
        if os.path.exists(f"/sys/class/net/{name}"):
            raise NetworkError(f"interface {name} already exists: another network is running "
                               f"or was not cleaned up (ip link del {name})")
    for switch in spec.switches:
        if port_accepts(switch.grpc_port):
            raise NetworkError(f"gRPC port {switch.grpc_port} for {switch.name} is already "
                               "in use: another network is running?")
    if not bmv2:
        return
    grpc_ports = {switch.grpc_port for switch in spec.switches}
    for switch in spec.switches:
        port = bmv2_thrift_port(switch.device_id)
        if port in grpc_ports:
            raise NetworkError(f"{len(spec.switches)} bmv2 switches: the Thrift port {port} of "
                               f"{switch.name} is another switch's gRPC port")
        if port_accepts(port):
            raise NetworkError(f"Thrift port {port} for {switch.name} is already in use: "
                               "another network (or bmv2) is running?")


def run_checked(node, command: str) -> str:
    """Run a shell command in a Mininet node; raise NetworkError when it fails."""
    return _checked_output(node, command, node.cmd(f"{command}; echo __rc=$?"))


def _checked_output(node, command: str, output: str) -> str:
    text, _, rc = output.rpartition("__rc=")
    if rc.strip() != "0":
        detail = " ".join(text.split())[-200:] or "no output"    # errors come last
        raise NetworkError(f"{node.name}: '{command[:80]}' failed: {detail}")
    return text


def run_all_checked(commands: list, batch: int = PARALLEL_SHELL_COMMANDS) -> list:
    """Run (node, shell command) pairs, each node's in order, up to `batch` nodes' shells
    working at once; their outputs, in the order given; raise NetworkError for the first
    that failed (after reading every answer of its batch, so no shell is left busy)."""
    queues: dict = {}
    for position, (node, command) in enumerate(commands):
        queues.setdefault(id(node), (node, []))[1].append((position, command))
    outputs: list = [None] * len(commands)
    rounds = max((len(q) for _, q in queues.values()), default=0)
    for index in range(rounds):
        part = [(node, q[index]) for node, q in queues.values() if index < len(q)]
        for first in range(0, len(part), batch):
            chunk = part[first:first + batch]
            for node, (_, command) in chunk:
                node.sendCmd(f"{command}; echo __rc=$?")
            answers = [node.waitOutput() for node, _ in chunk]
            for (node, (position, command)), answer in zip(chunk, answers):
                outputs[position] = _checked_output(node, command, answer)
    return outputs


# Mininet talks to a host's shell through a pty, which cuts input lines beyond 4,095 bytes:
# 30 entries (~2,460 bytes) a line keeps networks of any size inside that.
ARP_ENTRIES_PER_COMMAND = 30


def static_arp_commands(spec: TopologySpec, host_name: str) -> list:
    """The shell commands giving a host its static ARP entries (every other host and the
    service address), ARP_ENTRIES_PER_COMMAND to a command.  The kernel flushes them,
    permanent ones too, when the interface's MAC address changes: run them again after such
    a change."""
    intf = host_interface(host_name)
    entries = [(h.ip, h.mac) for h in spec.hosts if h.name != host_name]
    entries.append((SERVICE_IP, SERVICE_MAC))
    return [" && ".join(f"ip neigh replace {ip} lladdr {mac} dev {intf} nud permanent"
                        for ip, mac in entries[first:first + ARP_ENTRIES_PER_COMMAND])
            for first in range(0, len(entries), ARP_ENTRIES_PER_COMMAND)]


# Offloads that would hand the software switch partial checksums or super-sized segments.
OFFLOADS_OFF = " ".join(offloads.NONE)
# Segmentation offload ($INA_TSO, default on where the switches take it: the built-in switch
# on this machine, not its XDP back end): the hosts' TCP sends leave whole, up to
# shaping.SEGMENTS_PER_SEND segments, and cross the switches as one frame (p4switch run
# --segmentation-offload), so a TCP byte costs the switches and the hosts' stacks a tenth of
# what it did (docs/native.md, "TCP through the switches").  Receive offloads stay off.
OFFLOADS_SEGMENTING = " ".join(offloads.SEGMENTING)
TSO_MODES = ("on", "off")


def tso_mode() -> str:
    mode = os.environ.get("INA_TSO", "on")
    if mode not in TSO_MODES:
        raise NetworkError(f"INA_TSO={mode!r}: choose one of {', '.join(TSO_MODES)}")
    return mode


def offload_command(interface: str, segmenting: bool) -> str:
    """Shell command setting a veth end's offloads (OFFLOADS_OFF or OFFLOADS_SEGMENTING)."""
    if not segmenting:
        return f"ethtool -K {interface} {OFFLOADS_OFF}"
    return (f"ethtool -K {interface} {OFFLOADS_SEGMENTING} && ip link set dev {interface} "
            f"gso_max_segs {shaping.SEGMENTS_PER_SEND}")
# NAPI on the hosts' veth ends ($INA_VETH_NAPI; docs/native.md, "veth NAPI"): "gro" gives the
# host end a NAPI poll (GRO on), "threaded" polls it in a kernel thread, so the host's input
# no longer runs inside the switch's send; "off": neither.  Switch ends stay without GRO (it
# would merge TCP segments into frames the switch cannot forward).
VETH_NAPI_MODES = ("off", "gro", "threaded")


def veth_napi_mode() -> str:
    mode = os.environ.get("INA_VETH_NAPI", "off")
    if mode not in VETH_NAPI_MODES:
        raise NetworkError(f"INA_VETH_NAPI={mode!r}: choose one of {', '.join(VETH_NAPI_MODES)}")
    return mode


def _in_own_sysfs(command: str) -> str:
    """`command` run with a sysfs of the current network namespace (a Mininet host's shell
    sees the root namespace's)."""
    return f"unshare -m sh -c 'umount -l /sys && mount -t sysfs none /sys && {command}'"


def napi_command(interface: str, mode: str) -> str:
    """Shell command putting veth end `interface` in NAPI `mode` (after OFFLOADS_OFF)."""
    if mode == "off":
        return "true"
    threaded = f"/sys/class/net/{interface}/threaded"
    return (f"ethtool -K {interface} gro on"
            + (f" && {_in_own_sysfs(f'echo 1 > {threaded}')}" if mode == "threaded" else ""))


def napi_state_command(interface: str) -> str:
    """Shell command printing `interface`'s GRO line of ethtool -k and its threaded flag."""
    return (f"ethtool -k {interface} | grep -m1 generic-receive-offload; "
            + _in_own_sysfs(f"cat /sys/class/net/{interface}/threaded"))
IPV6_OFF_KEYS = ("all", "default", "lo")


class Network:
    """One emulated network: `with Network(spec, ...) as net:` starts it and always stops it."""

    def __init__(self, spec: TopologySpec, switch: str = "auto", program: Optional[str] = None,
                 output_dir: Optional[str] = None, trace_logs: bool = False,
                 pcap_dir: Optional[str] = None, mininet_log_level: str = "critical",
                 supervise: bool = True, impair_seed: Optional[int] = None,
                 cluster: Optional["cluster_mode.Cluster"] = None,
                 host_addressing: str = "auto", switches_per_process: Optional[int] = None,
                 spawner=None):
        """output_dir: switch process output (<sw>.out) and, with trace_logs, packet traces
        (<sw>.log); pcap_dir: per-port pcaps.  program: start switches with it instead of
        empty (the controller normally pushes the pipeline).  supervise: restart switch
        processes that die (see `supervisor`, `on_switch_restart`).  impair_seed: seed of the
        built-in switches' impairment random streams (None: each switch picks one).
        cluster: place the network over these servers (topologies.cluster; the builtin
        switch only).  host_addressing: "gateway", "static" or "auto" (gateway unless in
        cluster mode or the accept program cannot be loaded; module docstring).
        switches_per_process: builtin switches per process (None: SWITCHES_PER_PROCESS from
        GROUP_FROM_SWITCHES switches on, else 1; always 1 with pcaps, trace logs,
        impairments, cluster mode or bmv2).  spawner: `popen` asks it first
        (`spawner.spawn(node, args, **options)`: a Popen-like process, or None to start a
        process of its own), never in cluster mode; stop() calls `spawner.close()`."""
        if host_addressing not in HOST_ADDRESSING:
            raise ValueError(f"host_addressing {host_addressing!r}: choose one of "
                             f"{', '.join(HOST_ADDRESSING)}")
        if switches_per_process is not None and switches_per_process < 1:
            raise ValueError("switches_per_process must be at least 1")
        self.spec = spec
        self.cluster = cluster
        self.switch_cls = switch_class(switch)
        if cluster is not None:
            if self.switch_cls is not BuiltinP4Switch:
                raise NetworkError("--cluster runs the builtin switch only (bmv2's Thrift "
                                   "and gRPC ports are not forwarded): use --switch builtin")
            self.switch_cls = cluster_mode.RemoteBuiltinP4Switch
        self.switch_impairs = self.switch_cls.impairs_links
        if not self.switch_impairs:
            impairment.check_netem_supported(spec)
        self.impair_args = (impairment.switch_impair_args(spec, impair_seed)
                            if self.switch_impairs else {})
        self.program = program
        self.output_dir = os.path.abspath(output_dir) if output_dir else None
        self.trace_logs = trace_logs
        self.pcap_dir = os.path.abspath(pcap_dir) if pcap_dir else None
        self.mininet_log_level = mininet_log_level
        self.mininet = None
        self._processes: list = []
        self.supervise = supervise
        self.supervisor: Optional[SwitchSupervisor] = None
        self.on_switch_restart = None     # callable(switch name) after a restart
        self.placement: dict = {}         # with cluster: {node name: server}
        self.host_addressing = self._resolve_addressing(host_addressing)
        self.switches_per_process = self._resolve_grouping(switches_per_process)
        self.spawner = spawner
        self.veth_napi = veth_napi_mode()
        self.segmentation_offload, self.no_segmentation_offload_because = \
            self._resolve_offload()

    def _resolve_offload(self) -> tuple[bool, Optional[str]]:
        """(segmentation offload on, why not): on wherever every switch takes it."""
        if tso_mode() == "off":
            return False, "INA_TSO=off"
        if self.switch_cls is Bmv2Switch:
            return False, "bmv2 reads frames with libpcap, without the segmentation header"
        if self.switch_cls is not BuiltinP4Switch:
            return False, "--cluster: tunnels between servers"
        if os.environ.get("P4SWITCH_BACKEND") == "xdp":
            return False, "the XDP back end takes no segmentation offload"
        if self.switches_per_process > 1:
            # a send takes a 16 KiB ring slot: GROUP_RING_KB would hold 32 frames a port
            return False, (f"{len(self.spec.switches)} switches run {self.switches_per_process}"
                           " to a process, with receive rings too small for whole sends")
        return True, None

    def _resolve_addressing(self, wanted: str) -> str:
        if wanted == "auto":
            if self.cluster is not None or os.geteuid() != 0:
                return "static"
            return "gateway" if hostaddr.available() else "static"
        if wanted == "gateway" and self.cluster is not None:
            raise NetworkError("host addressing 'gateway' needs every host on this machine "
                               "(its accept program is loaded here): not with --cluster")
        return wanted

    def _resolve_grouping(self, wanted: Optional[int]) -> int:
        groupable = (self.switch_cls is BuiltinP4Switch and not self.pcap_dir
                     and not self.trace_logs and not self.impair_args)
        if not groupable:
            return 1
        if wanted is None:
            return (SWITCHES_PER_PROCESS if len(self.spec.switches) >= GROUP_FROM_SWITCHES
                    else 1)
        return wanted

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> "Network":
        require_root("starting a network")
        preflight(self.spec, bmv2=self.switch_cls is Bmv2Switch)
        if self.cluster is not None:
            try:
                cluster_mode.check_servers(self.cluster, [d for d in (self.output_dir,
                                                                      self.pcap_dir) if d])
            except cluster_mode.ClusterError as e:
                raise NetworkError(str(e)) from None
        try:
            self._build()
            self._check_link_shaping()
            self._configure_hosts()
            self._configure_switch_interfaces()
            if not self.switch_impairs:
                self._attach_link_loss()
            self.mininet.start()       # starts every switch process, then waits for gRPC
            if self.supervise:
                self.supervisor = SwitchSupervisor(
                    [s for s in self.mininet.switches if isinstance(s, P4ProcessSwitch)],
                    on_restart=self._switch_restarted).start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Idempotent full teardown, which Ctrl-C waits for (cli.interrupts_deferred)."""
        with interrupts_deferred():
            self._stop()

    def _stop(self) -> None:
        self.stop_supervisor()
        for process in self._processes:
            _stop_process(process)
        self._processes.clear()
        if self.spawner is not None:
            self.spawner.close()
        net, self.mininet = self.mininet, None
        if net is None:
            return
        stop_all(net.switches)     # before the veths go, so no process sees its ports vanish
        net.stop()
        # a failed build can leave veths that Mininet did not yet register as links
        names = interface_names(self.spec)
        if self.cluster is not None:   # RemoteSSHLink's tap, left here if a tunnel failed
            names.append(cluster_mode.SSH_TUNNEL_TAP)
        for name in names:
            if os.path.exists(f"/sys/class/net/{name}"):
                subprocess.run(["ip", "link", "del", name], stderr=subprocess.DEVNULL)

    def stop_supervisor(self) -> None:
        """No more restarts from here on (the first step of stopping)."""
        if self.supervisor is not None:
            self.supervisor.stop()       # kept: its events stay readable after stop

    def _switch_restarted(self, name: str) -> None:
        if self.on_switch_restart is not None:
            self.on_switch_restart(name)

    def restart_events(self) -> list:
        """Every switch restart so far (topologies.supervisor.RestartEvent), also after stop."""
        return self.supervisor.events() if self.supervisor is not None else []

    def _loss_end(self, node: str, port: Optional[int]) -> tuple:
        """(network namespace file or None for ours, interface) of a link end."""
        if port is None:
            return f"/proc/{self.host(node).pid}/ns/net", host_interface(node)
        return None, switch_interface(node, port)

    def _attach_link_loss(self) -> None:
        """Lossy links of a switch that cannot drop frames itself get tc bpf loss programs on
        both ends' egress (topologies/linkloss.py)."""
        ends = impairment.lossy_ends(self.spec)
        if not ends:
            return
        try:
            with linkloss.loss_programs(rate for _, _, rate, _ in ends) as pinned:
                linkloss.attach([self._loss_end(node, port) + (pinned[rate],)
                                 for node, port, rate, _ in ends])
        except linkloss.LinkLossError as e:
            raise NetworkError(f"link loss: {e}") from None

    def impairment_counters(self, written_after: Optional[float] = None) -> dict:
        """{switch: {dropped, duplicated, reordered, delayed}} from the impairment stats files
        of the switches that impair links ({} without impairments or output directory).  The
        switches rewrite them every second (and once more, final, when stopped); with
        written_after (time.time()), wait for files written at or after it.  A restarted
        switch counts from 0 again."""
        if not self.switch_impairs:
            return self._link_loss_counters()
        if not (self.impair_args and self.output_dir):
            return {}
        paths = {name: impairment.stats_path(self.output_dir, name)
                 for name in sorted(self.impair_args)}
        return {name: impairment.counters_of(impairment.fresh_stats(path, written_after))
                for name, path in paths.items()}

    def _link_loss_counters(self) -> dict:
        """impairment_counters for links whose loss the kernel applies: the frames each
        switch's lossy links dropped ({} without loss or once stopped)."""
        ends = impairment.lossy_ends(self.spec)
        if not ends or self.mininet is None:
            return {}
        counters: dict = {}
        for node, port, _, switch in ends:
            totals = counters.setdefault(switch, dict.fromkeys(impairment.COUNTERS, 0))
            totals["dropped"] += linkloss.dropped(*self._loss_end(node, port))
        return counters

    def restarts(self) -> dict:
        """{switch: successful restarts}; {} when the network is not supervised."""
        return self.supervisor.restarts() if self.supervisor is not None else {}

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- access ------------------------------------------------------------------------

    def thrift_ports(self) -> Optional[dict]:
        """{switch name: bmv2 Thrift port} (registers: controller/bmv2_registers.py); None
        when the switches are not bmv2."""
        if self.switch_cls is not Bmv2Switch:
            return None
        return {s.name: bmv2_thrift_port(s.device_id) for s in self.spec.switches}

    def host(self, name: str):
        return self.mininet.get(name)

    def switch(self, name: str):
        return self.mininet.get(name)

    def switch_backends(self) -> dict:
        """{switch name: the data plane that runs its program}: "c" or "python" (what the
        built-in switch says it runs; "unknown" if it said nothing) or "bmv2"."""
        return {s.name: self.switch(s.name).running_backend() for s in self.spec.switches}

    def switch_threads(self) -> dict:
        """{switch name: the packet threads it runs} (the built-in switch's status file; None
        where no one recorded it: bmv2, or a switch that wrote no status)."""
        return {s.name: self.switch(s.name).running_threads() for s in self.spec.switches}

    def link_qdiscs(self) -> list:
        """The kernel's qdiscs on both ends of every link, as `tc qdisc show` lists them now:
        [{"link": [intf1, intf2], "qdiscs": {intf: [qdisc, ...]}}] (a shaped link shows its
        tbf, an unshaped veth "noqueue").  One tc call per namespace."""
        shown: dict = {}

        def qdiscs(intf) -> list:
            node = intf.node
            # the switches share their machine's namespace: one listing serves them all
            where = (id(node) if node.inNamespace
                     else ("root", getattr(node, "server", None)))
            if where not in shown:
                shown[where] = shaping.qdiscs_by_interface(run_checked(node, "tc qdisc show"))
            return shown[where].get(intf.name, [])

        return [{"link": [link.intf1.name, link.intf2.name],
                 "qdiscs": {intf.name: qdiscs(intf) for intf in (link.intf1, link.intf2)}}
                for link in self.mininet.links]

    def host_napi(self) -> dict:
        """{host interface: {"gro": "on"|"off", "threaded": "0"|"1"}} as the kernel has them
        now (veth_napi_mode)."""
        names = [host_interface(h.name) for h in self.spec.hosts]
        shown = run_all_checked([(self.host(h.name), napi_state_command(name))
                                 for h, name in zip(self.spec.hosts, names)])
        return {name: {"gro": text.split()[1], "threaded": text.split()[-1]}
                for name, text in zip(names, shown)}

    def switch_processes(self) -> dict:
        """{switch name: the name of the process it runs in}: its group's first member when
        it shares a process (switches_per_process), else its own name."""
        processes = {}
        for spec_switch in self.spec.switches:
            group = getattr(self.switch(spec_switch.name), "group", None)
            processes[spec_switch.name] = group.members[0].name if group else spec_switch.name
        return processes

    def popen(self, host_name: str, args: list, **kwargs) -> subprocess.Popen:
        """Start a process in a host's namespace; it is killed at stop() if still running."""
        node = self.host(host_name)
        if self.cluster is not None:
            process = cluster_mode.cluster_popen(node, args, **kwargs)
        else:
            process = (self.spawner.spawn(node, args, **kwargs)
                       if self.spawner is not None else None)
            if process is None:
                process = node.popen(args, **kwargs)
        self._processes.append(process)
        return process

    # -- build steps -------------------------------------------------------------------

    def _build(self):
        if self.cluster is None:
            return self._build_mininet()
        try:      # Mininet's cluster classes raise bare Exceptions with multi-line messages
            self._build_mininet()
        except NetworkError:
            raise
        except Exception as e:
            raise NetworkError("--cluster: building the network failed: "
                               + " ".join(str(e).split())[:300]) from None

    def _build_mininet(self):
        setLogLevel(self.mininet_log_level)   # tc problems are checked by _check_link_shaping

        options = dict(topo=None, switch=self.switch_cls, controller=None, build=False,
                       autoSetMacs=False, autoStaticArp=False)
        if self.cluster is None:
            net = Mininet(host=Host, link=Link, **options)
            where = {}
        else:
            net = self.cluster.mininet(**options)
            ips = net.serverIP
            self.placement = self.cluster.place(self.spec)
            where = {name: {"server": server, "serverIP": ips[server]}
                     for name, server in self.placement.items()}
        self.mininet = net
        for host in self.spec.hosts:
            net.addHost(host.name, ip=f"{host.ip}/{HOST_PREFIX_LEN}", mac=host.mac,
                        **where.get(host.name, {}))
        for sw in self.spec.switches:
            net.addSwitch(sw.name, cls=self.switch_cls, device_id=sw.device_id,
                          **where.get(sw.name, {}),
                          grpc_port=sw.grpc_port, program=self.program,
                          output_dir=self.output_dir, trace_log=self.trace_logs,
                          pcap_dir=self.pcap_dir,
                          impairments=self.impair_args.get(sw.name, ()),
                          segmentation_offload=self.segmentation_offload)
        for link in self.spec.links:
            options = impairment.tclink_options(link, netem=not self.switch_impairs)
            port1 = 0 if link.port1 is None else link.port1
            port2 = 0 if link.port2 is None else link.port2
            # a veth or (cluster) a tunnel; ShapedIntf shapes either (topologies/shaping.py)
            cls = Link if self.cluster is None else self.cluster.link_class
            if options:
                options = dict(options, intf=ShapedIntf)
            net.addLink(link.node1, link.node2, port1=port1, port2=port2, cls=cls, **options)
        net.build()
        if self.switches_per_process > 1:
            group_switches([net.get(sw.name) for sw in self.spec.switches],
                           self.switches_per_process, self.output_dir,
                           env={"P4IO_RING_KB": str(GROUP_RING_KB)})

    def _check_link_shaping(self):
        """Mininet only logs tc failures; a missing qdisc would silently change the experiment."""
        for link in self.mininet.links:
            params = getattr(link.intf1, "params", {})
            netem = any(key in params for key in ("delay", "jitter"))
            wanted = [kind for kind, needed in ((shaping.QDISC, "bw" in params),
                                                ("netem", netem)) if needed]
            if not wanted:
                continue
            for intf in (link.intf1, link.intf2):
                shown = run_checked(intf.node, f"tc qdisc show dev {intf.name}")
                for kind in wanted:
                    if f"qdisc {kind}" not in shown:
                        hint = (" (the kernel lacks sch_netem: with bmv2, link delay and "
                                "jitter are unavailable here (loss is not netem's); the "
                                "built-in switch impairs links itself: --switch builtin)"
                                if kind == "netem" else "")
                        raise NetworkError(f"link {link.intf1.name}-{link.intf2.name}: tc {kind} "
                                           f"qdisc could not be installed{hint}")

    def _configure_hosts(self):
        if self.host_addressing == "gateway":
            try:
                with hostaddr.accept_program() as pinned:
                    self._configure_host_interfaces(pinned)
            except hostaddr.HostAddressingError as e:
                raise NetworkError(f"host addressing: {e}") from None
        else:
            self._configure_host_interfaces(None)
        for spec_host in self.spec.hosts:
            for command in spec_host.commands:
                run_checked(self.host(spec_host.name), command)

    def _configure_host_interfaces(self, pinned: Optional[str]) -> None:
        """IPv6 and offloads off, then the addressing: the gateway (pinned: the accept
        program's path) or static ARP entries."""
        ipv6 = " ".join(f"net.ipv6.conf.{k}.disable_ipv6=1" for k in IPV6_OFF_KEYS)
        commands = []
        for spec_host in self.spec.hosts:
            node = self.host(spec_host.name)
            intf = host_interface(spec_host.name)
            setup = (f"sysctl -qw {ipv6} && {offload_command(intf, self.segmentation_offload)}"
                     f" && {napi_command(intf, self.veth_napi)}")
            if pinned is not None:
                setup += " && " + hostaddr.gateway_command(spec_host.ip, HOST_PREFIX_LEN, intf)
            commands.append((node, setup))
        run_all_checked(commands)
        if pinned is not None:
            hostaddr.attach_all([(f"/proc/{self.host(h.name).pid}/ns/net",
                                  host_interface(h.name))
                                 for h in self.spec.hosts], pinned)
        if pinned is None:
            for spec_host in self.spec.hosts:
                node = self.host(spec_host.name)
                for command in static_arp_commands(self.spec, spec_host.name):
                    run_checked(node, command)

    def _configure_switch_interfaces(self):
        commands = []
        for switch in self.mininet.switches:
            names = [intf.name for intf in switch.intfList() if intf.name != "lo"]
            for first in range(0, len(names), 16):      # lines well within the pty's 4,095
                commands.append((switch, " && ".join(
                    f"sysctl -qw net.ipv6.conf.{name}.disable_ipv6=1 && "
                    + offload_command(name, self.segmentation_offload)
                    for name in names[first:first + 16])))
        run_all_checked(commands)


def _stop_process(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=POPEN_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def describe(spec: TopologySpec) -> str:
    """One line per host and switch, for the run command's banner."""
    lines = [f"{h.name} {h.ip} {h.mac} on {'%s port %d' % spec.host_attachment(h.name)}"
             for h in spec.hosts]
    lines += [f"{s.name} device {s.device_id} grpc 127.0.0.1:{s.grpc_port}"
              for s in spec.switches]
    return "\n".join(lines)
