"""Mininet switch node classes that run a P4 target process per switch.

BuiltinP4Switch runs our own target (`python -m p4switch run`), Bmv2Switch runs bmv2's
simple_switch_grpc.  Both build their command lines from `common_arguments`, so device ids,
port numbers, interface names, gRPC addresses, logs and pcaps are the same whichever target
is chosen.  The process runs in the root namespace on the switch's veth ends, with no program
(`--no-p4`) unless one is given: the controller pushes the pipeline over P4Runtime.

bmv2 comes from the p4lang toolchain (p4switch/p4lang.py: $P4LANG_HOME, ../shared/p4lang,
PATH) and runs with its environment; each instance has its own Thrift port (register reads
and writes: controller/bmv2_registers.py) and its own nanomsg notifications socket, so any
number of them run side by side.  `--switch auto` is the built-in switch: having bmv2
installed never changes which switch a command runs; bmv2 runs on `--switch bmv2` only.

A SwitchGroup runs several builtin switches in one `python -m p4switch group` process (each
with its own ports, device id and P4Runtime server; p4switch/device/group.py), which large
fabrics need for memory.  The members' `process` is then that one process; a member whose
group process died is restarted alone, as a process of its own.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Optional

from mininet.node import Switch

from contracts.jobs import SWITCH_KINDS       # --switch's choices: the job contract's
from p4switch import p4lang
from topologies.impairment import stats_path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BMV2_EXECUTABLE = p4lang.SIMPLE_SWITCH_GRPC
BMV2_FIRST_THRIFT_PORT = 9090
# what --switch bmv2 needs of the p4lang toolchain (the compiler and the switch)
BMV2_TOOLS = (p4lang.P4C, p4lang.SIMPLE_SWITCH_GRPC)
# bmv2's time per aggregation packet it takes in, its share of the result's multicast
# included: about 0.2 + 0.016 K ms (star:4, 432 rounds of 4 packets at K = 1, 16, 64, 256:
# 0.39, 0.80, 1.88, 7.50 s with no retransmission, 2-core machine; docs/bmv2.md).  The
# ina workers' retransmission timeout is scaled by it (jobs.modes.switch_window_ms).
BMV2_PACKET_MS = (0.2, 0.016)
# The built-in switch keeps up with the links, but with every worker and switch on one
# machine a packet through a switch costs about 11 us of CPU, the workers' share included
# (leafspine:2,1,4, C back end: 5.7-6.9 us of a worker's and 10.0-12.1 us of the switches'
# CPU per worker round, 8 worker rounds putting 12 packets through switches;
# docs/results/workers/engine_leafspine.json), spread over the machine's cores.  Only large
# jobs notice: at fattree:16 a window of 1,024 workers took longer than the first timeout, and
# spurious retransmissions (about four per packet) tripled the allreduce's time.
BUILTIN_PACKET_CPU_MS = 0.011
# bmv2 keeps this many bytes in front of a packet for its deparser to grow it into: a
# packet may leave at most that much longer than it came (bm::PacketBuffer::push asserts,
# and the switch process aborts, beyond it).
BMV2_HEADROOM_BYTES = 512
START_TIMEOUT_S = 60.0          # the builtin target imports grpc and friends at start
STOP_TIMEOUT_S = 5.0


class SwitchStartError(RuntimeError):
    """A switch process exited or never opened its gRPC port."""


def python_executable() -> str:
    venv = os.path.join(REPO, ".venv", "bin", "python")
    return venv if os.path.exists(venv) else sys.executable


@dataclass(frozen=True)
class SwitchLaunch:
    """Everything a switch process needs, independent of the target."""
    name: str
    device_id: int
    grpc_port: int
    ports: tuple                  # ((port number, interface name), ...) sorted by port
    program: Optional[str] = None   # None: start empty and wait for SetForwardingPipelineConfig
    log_file: Optional[str] = None
    pcap_dir: Optional[str] = None
    impairments: tuple = ()       # --impair specs (built-in target only; topologies.impairment)
    impair_stats: Optional[str] = None   # --impair-stats file
    status_file: Optional[str] = None    # --status-file (built-in target): what really runs
    segmentation_offload: bool = False   # TCP sends cross whole (built-in target; net.py)

    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


def common_arguments(launch: SwitchLaunch) -> list:
    """Flags both targets accept with the same meaning."""
    args = ["--device-id", str(launch.device_id)]
    for port, interface in launch.ports:
        args += ["-i", f"{port}@{interface}"]
    if launch.log_file:
        args += ["--log-file", launch.log_file]
    if launch.pcap_dir:
        # one token: bmv2's --pcap has an optional value, which its option parser only takes
        # when attached with "="
        args += [f"--pcap={launch.pcap_dir}"]
    return args


def program_argument(launch: SwitchLaunch) -> list:
    return [launch.program] if launch.program else ["--no-p4"]


def impairment_arguments(launch: SwitchLaunch) -> list:
    args = [f"--impair={spec}" for spec in launch.impairments]
    if launch.impair_stats:
        args += ["--impair-stats", launch.impair_stats]
    return args


def builtin_command(launch: SwitchLaunch) -> list:
    status = ["--status-file", launch.status_file] if launch.status_file else []
    offload = ["--segmentation-offload"] if launch.segmentation_offload else []
    return ([python_executable(), "-m", "p4switch", "run"] + program_argument(launch)
            + common_arguments(launch) + impairment_arguments(launch) + status + offload
            + ["--grpc-server-addr", launch.grpc_address])


def bmv2_thrift_port(device_id: int) -> int:
    """bmv2 also serves its Thrift runtime API; one port per switch, so several can run at
    once.  Register reads and writes go there (controller/bmv2_registers.py)."""
    return BMV2_FIRST_THRIFT_PORT + device_id


def builtin_packet_ms(cores: int) -> float:
    """The machine's time for one packet through a built-in switch (BUILTIN_PACKET_CPU_MS)."""
    return BUILTIN_PACKET_CPU_MS / max(cores, 1)


def bmv2_packet_ms(k: int) -> float:
    """bmv2's time for one aggregation packet of K values (BMV2_PACKET_MS)."""
    base, per_value = BMV2_PACKET_MS
    return base + per_value * k


def bmv2_notifications_addr(launch: SwitchLaunch) -> str:
    """A nanomsg socket of this switch's own: bmv2's default,
    ipc:///tmp/bmv2-<device id>-notifications.ipc, is shared by every instance with that
    device id on the machine (another network, another test)."""
    return f"ipc://{bmv2_notifications_path(launch.grpc_port)}"


def bmv2_notifications_path(grpc_port: int) -> str:
    return os.path.join(tempfile.gettempdir(), f"ina-bmv2-{os.getpid()}-{grpc_port}.ipc")


def bmv2_executable() -> str:
    """simple_switch_grpc of the p4lang toolchain; p4lang.ToolchainMissing (one line) if absent."""
    return p4lang.require((BMV2_EXECUTABLE,)).path(BMV2_EXECUTABLE)


def bmv2_command(launch: SwitchLaunch, executable: Optional[str] = None) -> list:
    """simple_switch_grpc as the P4 tutorials start it: ports, device id, Thrift port, its own
    notifications socket, the program or --no-p4, and after "--" the target's own gRPC
    server address.  bmv2 cannot impair its ports: its links get impaired in the kernel
    instead (topologies.impairment)."""
    if launch.impairments:
        raise ValueError(f"{launch.name}: bmv2 has no --impair; its links are impaired by tc")
    if launch.segmentation_offload:
        raise ValueError(f"{launch.name}: bmv2 reads frames with libpcap, without the kernel's "
                         "segmentation header: no segmentation offload")
    thrift = ["--thrift-port", str(bmv2_thrift_port(launch.device_id))]
    notifications = ["--notifications-addr", bmv2_notifications_addr(launch)]
    flush = ["--log-flush"] if launch.log_file else []
    return ([executable or bmv2_executable()] + common_arguments(launch) + flush + thrift
            + notifications + program_argument(launch)
            + ["--", "--grpc-server-addr", launch.grpc_address])


def port_accepts(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


class P4ProcessSwitch(Switch):
    """A Mininet switch whose data plane is one P4 target process; subclasses set
    `command_for` (SwitchLaunch -> argv)."""

    def __init__(self, name, device_id: int, grpc_port: int, program: Optional[str] = None,
                 output_dir: Optional[str] = None, trace_log: bool = False,
                 pcap_dir: Optional[str] = None, impairments: tuple = (),
                 segmentation_offload: bool = False, **params):
        """output_dir: keep the process output in <output_dir>/<name>.out (else a temp file,
        removed at stop) and, with trace_log, its packet trace in <output_dir>/<name>.log.
        impairments: --impair specs for the built-in target; their counters go to
        <output_dir>/<name>.impair.json."""
        Switch.__init__(self, name, **params)
        if trace_log and not output_dir:
            raise ValueError(f"{name}: a trace log needs an output directory")
        self.device_id = device_id
        self.grpc_port = grpc_port
        self.program = program
        self.output_dir = output_dir
        self.trace_log = trace_log
        self.pcap_dir = pcap_dir
        self.impairments = tuple(impairments)
        self.segmentation_offload = segmentation_offload
        self.process: Optional[subprocess.Popen] = None
        self.output_path: Optional[str] = None
        self._temp_output = False
        self.group: Optional["SwitchGroup"] = None    # set before start: run in a group

    # -- launch description ------------------------------------------------------------

    def launch(self) -> SwitchLaunch:
        ports = tuple(sorted((port, intf.name) for port, intf in self.intfs.items()
                             if intf.name != "lo"))
        return SwitchLaunch(
            name=self.name, device_id=self.device_id, grpc_port=self.grpc_port,
            ports=ports, program=self.program,
            log_file=(os.path.join(self.output_dir, f"{self.name}.log") if self.trace_log
                      else None),
            pcap_dir=self.pcap_dir, impairments=self.impairments,
            impair_stats=self.impair_stats_path(), status_file=self.status_path(),
            segmentation_offload=self.segmentation_offload)

    def status_path(self) -> Optional[str]:
        """Where the switch says what really runs (p4switch run --status-file; None: no
        output directory)."""
        return os.path.join(self.output_dir, f"{self.name}.status.json") if self.output_dir \
            else None

    def running_status(self) -> dict:
        """What the switch wrote in its status file ({} if it wrote none or it is unreadable)."""
        try:
            with open(self.status_path()) as f:
                status = json.load(f)
        except (TypeError, OSError, ValueError):
            return {}
        return status if isinstance(status, dict) else {}

    def running_backend(self) -> str:
        """The data plane that runs the program: "c" or "python" for the built-in switch (from
        its status file; "unknown" if it wrote none); Bmv2Switch says "bmv2"."""
        return self.running_status().get("backend", "unknown")

    def running_threads(self) -> Optional[int]:
        """The packet threads the built-in switch runs (its status file's "threads"; a status
        file without it is from a single-threaded switch: 1); None if it wrote no status."""
        status = self.running_status()
        return int(status.get("threads", 1)) if status else None

    def impair_stats_path(self) -> Optional[str]:
        """Where the switch writes its impairment counters (None: no impairments or no
        output directory)."""
        if not (self.impairments and self.output_dir):
            return None
        return stats_path(self.output_dir, self.name)

    def command(self) -> list:
        return type(self).command_for(self.launch())

    # -- Mininet hooks -----------------------------------------------------------------

    def start(self, controllers):
        """Start the target process; `wait_ready` (or Mininet's batchStartup) waits for it."""
        if port_accepts(self.grpc_port):
            raise SwitchStartError(f"{self.name}: 127.0.0.1:{self.grpc_port} is already in use "
                                   "(another switch or network running?)")
        for directory in (self.output_dir, self.pcap_dir):
            if directory:
                os.makedirs(directory, exist_ok=True)
        if self.group is not None:       # batchStartup starts the group's process
            self.output_path = self.group.output_path
            return
        if self.output_dir:
            self.output_path = os.path.join(self.output_dir, f"{self.name}.out")
        else:
            fd, self.output_path = tempfile.mkstemp(prefix=f"ina-{self.name}-", suffix=".out")
            os.close(fd)
            self._temp_output = True
        self._spawn("wb")

    def environment(self) -> Optional[dict]:
        """The process's environment (None: ours)."""
        return None

    def _spawn(self, output_mode: str) -> None:
        with open(self.output_path, output_mode) as output:
            self.process = subprocess.Popen(self.command(), cwd=REPO, stdin=subprocess.DEVNULL,
                                            stdout=output, stderr=subprocess.STDOUT,
                                            start_new_session=True, env=self.environment())

    def has_died(self) -> bool:
        """The process was started and has exited (not stopped by us: stop clears it)."""
        process = self.process
        return process is not None and process.poll() is not None

    def restart_process(self, abort=None) -> int:
        """Start the process again with the same command line (ports, device id, gRPC
        address), its output appended to the same file, and wait for its gRPC port.
        Returns the exit code of the process it replaces.  abort: a threading.Event that
        ends the wait early (raises SwitchStartError)."""
        old = self.process
        if old is None or old.poll() is None:
            raise SwitchStartError(f"{self.name}: no dead switch process to restart")
        self._spawn("ab")
        self.wait_ready(abort)
        return old.returncode

    @classmethod
    def batchStartup(cls, switches):
        """Called by Mininet.start after every start(): the groups' processes start, then
        all processes boot in parallel."""
        groups = []
        for switch in switches:
            if switch.group is not None and switch.group not in groups:
                groups.append(switch.group)
        for group in groups:
            group.spawn()
        for switch in switches:
            switch.wait_ready()
        return switches

    def wait_ready(self, abort=None):
        """Wait until the gRPC server answers (`grpc_ready`); raise if the process dies, if
        `abort` (a threading.Event) is set, or after START_TIMEOUT_S."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if abort is not None and abort.is_set():
                raise SwitchStartError(f"{self.name}: start abandoned (network stopping)")
            if self.process.poll() is not None:
                raise SwitchStartError(f"{self.process_label()} exited with code "
                                       f"{self.process.returncode}: {self.last_output_line()}")
            if self.grpc_ready():
                return
            time.sleep(0.1)
        raise SwitchStartError(f"{self.not_ready()} after {START_TIMEOUT_S:.0f} s: "
                               f"{self.last_output_line()}")

    # what wait_ready asks and says (a switch on another server answers through a forward)
    def grpc_ready(self) -> bool:
        return port_accepts(self.grpc_port)

    def process_label(self) -> str:
        return f"{self.name}: switch process"

    def not_ready(self) -> str:
        return f"{self.name}: gRPC port {self.grpc_port} not open"

    def last_output_line(self) -> str:
        try:
            with open(self.output_path, errors="replace") as f:
                lines = [l.strip() for l in f if l.strip()]
        except OSError:
            return "(no output)"
        return lines[-1] if lines else "(no output)"

    def signal_stop(self):
        """SIGTERM the process group (no wait), so that many switches stop in parallel."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop_process(self):
        """Stop the process (SIGKILL after STOP_TIMEOUT_S) and drop its temp output; idempotent."""
        self.signal_stop()
        process, self.process = self.process, None
        if process is not None:
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
        if self._temp_output and self.output_path:
            try:
                os.unlink(self.output_path)
            except FileNotFoundError:
                pass
            self._temp_output = False

    @classmethod
    def batchShutdown(cls, switches):
        """Called by Mininet.stop: signal every process first, then wait for each."""
        stop_all(switches)
        return switches

    def stop(self, deleteIntfs=True):
        self.stop_process()
        Switch.stop(self, deleteIntfs)

    def terminate(self):
        self.stop_process()
        Switch.terminate(self)


class BuiltinP4Switch(P4ProcessSwitch):
    """Our own target: `python -m p4switch run`."""
    command_for = staticmethod(builtin_command)
    impairs_links = True          # --impair: link impairments without netem


class Bmv2Switch(P4ProcessSwitch):
    """bmv2's simple_switch_grpc, from the p4lang toolchain, run with its environment."""
    command_for = staticmethod(bmv2_command)
    impairs_links = False         # its links are impaired by tc (topologies.impairment)

    def running_backend(self) -> str:
        return "bmv2"

    def running_threads(self) -> Optional[int]:
        return None               # bmv2's own thread pool: not ours to count

    @property
    def thrift_port(self) -> int:
        return bmv2_thrift_port(self.device_id)

    def environment(self) -> Optional[dict]:
        return p4lang.require((BMV2_EXECUTABLE,)).environment()

    def stop_process(self):
        super().stop_process()
        try:
            os.unlink(bmv2_notifications_path(self.grpc_port))
        except FileNotFoundError:
            pass


class SwitchGroup:
    """Builtin switches served by one `python -m p4switch group` process.  Its output goes to
    <output_dir>/<first member>.group.out (else a temp file, removed by `remove_output`)."""

    def __init__(self, members: list, output_dir: Optional[str] = None, env: Optional[dict] = None):
        if not members:
            raise ValueError("a switch group needs members")
        self.members = list(members)
        self.env = dict(env or {})
        self.process: Optional[subprocess.Popen] = None
        first = self.members[0].name
        if output_dir:
            os.makedirs(output_dir, exist_ok=True)
            self.output_path = os.path.join(output_dir, f"{first}.group.out")
            self._temp_output = False
        else:
            fd, self.output_path = tempfile.mkstemp(prefix=f"ina-{first}-", suffix=".group.out")
            os.close(fd)
            self._temp_output = True
        for member in self.members:
            member.group = self

    def command(self) -> list:
        """`p4switch group` with every member's `p4switch run` arguments, cut by '---'."""
        args = [python_executable(), "-m", "p4switch", "group"]
        for i, member in enumerate(self.members):
            run_args = member.command()
            if run_args[1:4] != ["-m", "p4switch", "run"]:
                raise ValueError(f"{member.name}: only builtin switches can be grouped")
            args += (["---"] if i else []) + run_args[4:]
        return args

    def spawn(self) -> subprocess.Popen:
        with open(self.output_path, "wb") as output:
            self.process = subprocess.Popen(self.command(), cwd=REPO, stdin=subprocess.DEVNULL,
                                            stdout=output, stderr=subprocess.STDOUT,
                                            start_new_session=True,
                                            env=dict(os.environ, **self.env))
        for member in self.members:
            member.process = self.process
        return self.process

    def remove_output(self) -> None:
        if self._temp_output:
            try:
                os.unlink(self.output_path)
            except FileNotFoundError:
                pass
            self._temp_output = False


def group_switches(switches: list, per_process: int, output_dir: Optional[str] = None,
                   env: Optional[dict] = None) -> list:
    """SwitchGroups of up to per_process consecutive switches (a last one may be smaller)."""
    return [SwitchGroup(switches[i:i + per_process], output_dir, env)
            for i in range(0, len(switches), per_process)]


def stop_all(switches) -> None:
    switches = [s for s in switches if isinstance(s, P4ProcessSwitch)]
    for switch in switches:
        switch.signal_stop()
    for switch in switches:
        switch.stop_process()
    for switch in switches:
        if switch.group is not None:
            switch.group.remove_output()




def resolve_switch_kind(kind: str) -> str:
    """'builtin' or 'bmv2'.  'auto' is the built-in switch, whatever is installed: the p4lang
    toolchain on PATH (or beside the repository, as in CI) must not switch a command, or
    the test suite, to bmv2 behind the user's back.  'bmv2' needs simple_switch_grpc and
    p4c-bm2-ss (p4switch.p4lang finds them); ValueError (one line) if either is missing."""
    if kind not in SWITCH_KINDS:
        raise ValueError(f"unknown switch {kind!r}: choose builtin, bmv2 or auto")
    if kind == "auto":
        return "builtin"
    if kind == "bmv2":
        try:
            problem = p4lang.missing(BMV2_TOOLS)
        except p4lang.ToolchainMissing as e:     # $P4LANG_HOME set to a place without them
            problem = str(e)
        if problem:
            raise ValueError(f"--switch bmv2: {problem} (use --switch builtin)")
    return kind


def switch_class(kind: str) -> type:
    return {"builtin": BuiltinP4Switch, "bmv2": Bmv2Switch}[resolve_switch_kind(kind)]
