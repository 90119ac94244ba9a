"""`python -m p4switch run`: the switch as a network device.

    run (PROGRAM | --no-p4) -i PORT@IFACE [-i ...] [--device-id N]
        [--grpc-server-addr HOST:PORT] [--cpu-port N] [--pcap [DIR]]
        [--log-console | --log-file FILE] [-I DIR] [-D NAME=VALUE]
        [--impair PORT:rx|tx|both:KEY=VALUE,... [--impair ...]] [--impair-stats FILE]
        [--threads N] [-- TARGET OPTIONS]

PROGRAM is a P4-16 source (.p4) or a device config written by `p4switch compile -o`.
Spellings follow simple_switch_grpc: target options such as --grpc-server-addr and --cpu-port
may also come after `--`. Each port is a raw socket on an interface; the native packet loop
(C back end) runs --threads worker threads, each polling its share of the ports (default:
one per 4 cores, at most one per port); the Python loop polls them all on one thread. The
P4Runtime server listens on 127.0.0.1:9559 unless told otherwise.
--impair makes the switch impair its own links as tc netem would (loss, dup, reorder, delay,
jitter; impair.py and docs/impairments.md); --impair-stats FILE gets the impairment counters
as JSON every second and at shutdown. Runs until SIGTERM or SIGINT, then exits with code 0.
"""
import argparse
import functools
import json
import os
import sys
import threading
from typing import Callable

from contracts.cli import PlainMessageParser, UsageError

# gRPC's core would print its own multi-line bind errors; we report them in one line.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from .. import targets  # noqa: E402
from .datapath import Datapath  # noqa: E402
from .impair import SYNTAX as IMPAIR_SYNTAX, ImpairmentError, Impairments  # noqa: E402
from .impair import parse_impairments  # noqa: E402
from .pcap import PcapWriter  # noqa: E402
from .stopflag import StopFlag  # noqa: E402
from .trace import TraceLog  # noqa: E402
from .ports import PortError, PortSet, RawPort, disable_offloads  # noqa: E402

DEFAULT_GRPC_ADDRESS = "127.0.0.1:9559"
_POLL_MS = 200
_BURST = 64   # frames taken from one port before looking at the others


def _parser() -> argparse.ArgumentParser:
    p = PlainMessageParser(prog="python -m p4switch run", add_help=True)
    p.add_argument("program", nargs="?", help="P4-16 program (.p4) or compiled device config")
    p.add_argument("--no-p4", action="store_true",
                   help="start without a program; wait for one over P4Runtime")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach switch port PORT to network interface IFACE")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDRESS, metavar="HOST:PORT")
    p.add_argument("--cpu-port", type=int, default=None,
                   help="port number whose packets go to the controller (PacketIn/PacketOut)")
    p.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR",
                   help="write <iface>_in.pcap and <iface>_out.pcap per port into DIR")
    logs = p.add_mutually_exclusive_group()
    logs.add_argument("--log-console", action="store_true", help="trace packets on stdout")
    logs.add_argument("--log-file", metavar="FILE", help="trace packets into FILE")
    p.add_argument("--log-flush", action="store_true",
                   help="accepted for simple_switch compatibility: the log is flushed after "
                        "every packet anyway")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--keep-offloads", action="store_true",
                   help="leave the interfaces' checksum/segmentation offloads on")
    p.add_argument("--segmentation-offload", action="store_true",
                   help="a TCP send the hosts leave whole (TSO) crosses the switch as one frame "
                        "with its virtio-net header (C packet loop), or is cut into its wire "
                        "segments on arrival (Python loop); the ports keep transmit checksum "
                        "and segmentation offload on")
    p.add_argument("--impair", action="append", default=[], metavar=IMPAIR_SYNTAX,
                   help="impair a port's received (rx) or sent (tx) frames: loss, dup, reorder "
                        "(percent), delay, jitter (ms), limit (frames), seed; repeatable")
    p.add_argument("--backend", choices=targets.BACKENDS, default=None,
                   help="data plane: c (generated C, with packet I/O in C when no pcap, "
                        "trace or impairment is on), python (the reference), or auto: c "
                        "wherever it can run the program (default: $P4SWITCH_BACKEND, else "
                        "auto)")
    p.add_argument("--impair-stats", metavar="FILE",
                   help="write the impairment counters to FILE as JSON (every second and at "
                        "shutdown)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="datapath threads of the native packet loop, each receiving on its "
                        "share of the ports (default: $P4SWITCH_THREADS, else one per 4 "
                        "cores, at most one per port, at least one)")
    p.add_argument("--status-file", metavar="FILE",
                   help="write what runs to FILE as JSON at every pipeline install: the back "
                        "end that runs the program (c or python, and why not c), whether "
                        "packet I/O is in C and on how many threads")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse the command line; `--` only separates target options, which we take anywhere."""
    args = _parser().parse_args([a for a in argv if a != "--"])
    if args.threads is None and os.environ.get("P4SWITCH_THREADS"):
        text = os.environ["P4SWITCH_THREADS"]
        if not text.isdigit():
            raise UsageError(f"$P4SWITCH_THREADS {text!r} is not a number of threads")
        args.threads = int(text)
    if args.no_p4 == (args.program is not None):
        raise UsageError("give either a PROGRAM or --no-p4")
    args.ports = _parse_interfaces(args.interface)
    args.define_map = _parse_defines(args.defines)
    try:
        args.impairments = parse_impairments(args.impair, args.ports)
    except ImpairmentError as e:
        raise UsageError(str(e)) from None
    host, sep, port = args.grpc_server_addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--grpc-server-addr {args.grpc_server_addr!r} is not HOST:PORT")
    if args.cpu_port is not None and args.cpu_port in args.ports:
        raise UsageError(f"--cpu-port {args.cpu_port} is also an interface port")
    if args.threads is not None and not 1 <= args.threads <= MAX_THREADS:
        raise UsageError(f"--threads must be 1 to {MAX_THREADS}, not {args.threads}")
    return args


MAX_THREADS = 64          # P4IO_MAX_THREADS (p4switch/backend/c/runtime/io.h)


CORES_PER_THREAD = 4      # cores a switch leaves to the hosts and switches beside it


def default_threads(ports: int) -> int:
    """A datapath thread per CORES_PER_THREAD cores this process may run on, at most one per
    port (a port is received by one thread, so more threads than ports idle), at least one.
    On 2 cores a second thread made in-network aggregation slower (docs/native.md, "Threads"):
    the switches share the cores with the hosts, and every thread adds wake-ups."""
    cores = len(os.sched_getaffinity(0))
    return max(1, min(cores // CORES_PER_THREAD, ports, MAX_THREADS))


def _parse_interfaces(specs: list[str]) -> dict[int, str]:
    ports = {}
    for spec in specs:
        number, sep, interface = spec.partition("@")
        if not sep or not number.isdigit() or not interface:
            raise UsageError(f"interface {spec!r} is not PORT@IFACE")
        if int(number) in ports:
            raise UsageError(f"port {number} is given twice")
        ports[int(number)] = interface
    return ports


def _parse_defines(specs: list[str]) -> dict[str, str]:
    defines = {}
    for spec in specs:
        name, _, value = spec.partition("=")
        if not name:
            raise UsageError(f"-D {spec!r} is not NAME=VALUE")
        defines[name] = value if value else "1"
    return defines


def load_program(args):
    """The Program to start with: compiled from source, or a device config file."""
    import p4switch
    path = args.program
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    if path.endswith(".p4"):
        try:
            return p4switch.compile_file(path, include_dirs=args.include_dirs,
                                         defines=args.define_map)
        except p4switch.CompileError as e:
            raise UsageError(str(e)) from None
    with open(path, "rb") as f:
        data = f.read()
    try:
        return p4switch.load_device_config(data)
    except Exception as e:  # a file that is not a device config is bad input
        raise UsageError(f"{path}: not a P4 program or p4switch device config ({e})") from None


class Device:
    """Ports, pcaps, trace log, datapath and P4Runtime server of one running switch."""

    def __init__(self, args, log_stream, stopping: StopFlag):
        self.args = args
        self.stopping = stopping
        self.trace = TraceLog(log_stream) if log_stream is not None else None
        self.ports = self._open_ports(args.ports)
        self.pcaps_in, self.pcaps_out = self._open_pcaps(args.pcap)
        # A switch device defaults to "auto": the C back end wherever it can run the program.
        backend = getattr(args, "backend", None) or os.environ.get("P4SWITCH_BACKEND") or "auto"
        self.requested_backend = backend
        self.datapath = Datapath(self.transmit, cpu_port=args.cpu_port, log=self.trace,
                                 backend=backend)
        self.impairments = self._impairments(args)
        self.native = None               # NativePorts while the C back end moves the frames
        self.native_allowed = not (args.pcap or self.trace or args.impairments
                                   or args.impair_stats)
        self.threads = args.threads or default_threads(len(args.ports))
        if backend == "xdp" and args.segmentation_offload:
            self.close()
            raise UsageError("--backend xdp runs every frame in the kernel's XDP hook, which "
                             "takes no segmentation offload: not with --segmentation-offload")
        if backend == "xdp" and not self.native_allowed:
            self.close()
            raise UsageError("--backend xdp runs every frame in the kernel: --pcap, "
                             "--log-console, --log-file, --impair and --impair-stats are not "
                             "supported with it")
        self.datapath.before_install = self._before_install
        if self.impairments is None:
            # Nothing to look up per emitted frame: the pipeline's outputs go straight out.
            self.datapath.transmit = self._send_locked if self.pcaps_out or self.trace \
                else self._send_untraced

    # -- the native packet loop ---------------------------------------------------------------

    def _before_install(self, switch) -> None:
        """A new Switch is about to run (under the datapath lock): a C one with nothing
        needing Python per frame gets the native loop (started here, or handed the new
        pipeline); otherwise the Python loop serves the ports."""
        old = self.datapath.switch
        if getattr(old, "backend", None) == "xdp":
            old.close()                           # off the devices before the next one
        if getattr(switch, "backend", "python") == "xdp":
            if self.native is not None:
                self._stop_native()
            switch.attach(self.args.ports)        # frames never reach the Python loop
        elif getattr(switch, "backend", "python") == "c" and self.native_allowed:
            if self.native is None:
                self._start_native()
            self.native.set_pipeline(switch.process_function, switch.handle)
        else:
            if self.native is not None:
                self._stop_native()
            if self.args.threads and self.args.threads > 1:
                print(f"p4switch run: --threads {self.args.threads} applies to the native "
                      "packet loop only; the Python loop runs on one thread", file=sys.stderr,
                      flush=True)
        if self.args.status_file:
            self._write_status(switch)

    def _write_status(self, switch) -> None:
        """--status-file: what really runs, for the run's records (results.json), since
        "auto" says only what was asked for."""
        backend = getattr(switch, "backend", "python")
        status = {"device_id": self.args.device_id, "program": switch.program.name,
                  "backend": backend, "native_io": self.native is not None,
                  "threads": self.native.threads if self.native is not None else 1,
                  "segmentation_offload": bool(self.args.segmentation_offload),
                  "why_not_c": None if backend == "c" else
                  "--backend python" if self.requested_backend == "python" else targets.last_reason}
        temporary = self.args.status_file + ".tmp"
        with open(temporary, "w") as f:
            json.dump(status, f)
        os.replace(temporary, self.args.status_file)

    def _start_native(self) -> None:
        from p4switch.backend.c.io import NativePorts
        native = NativePorts(cpu_port=self.args.cpu_port, threads=self.threads,
                             offload=self.args.segmentation_offload)
        self.ports.close()                        # the native loop opens its own sockets
        self.ports = PortSet([])
        for number, interface in sorted(self.args.ports.items()):
            native.add_port(number, interface)
        native.start()
        self.native = native
        self.datapath.transmit = self._send_native
        threading.Thread(target=self._native_messages, args=(native,), daemon=True,
                         name="native-messages").start()

    def _stop_native(self) -> None:
        native, self.native = self.native, None
        native.close()
        self.ports = self._open_ports(self.args.ports)
        self.datapath.transmit = self._send_locked if self.pcaps_out or self.trace \
            else self._send_untraced

    def _send_native(self, port_number: int, frame: bytes) -> None:
        native = self.native
        if native is not None:
            native.send(port_number, frame)

    def _native_messages(self, native) -> None:
        """Frames the C pipeline sent to the CPU port (PacketIn) and its digests."""
        import select
        fd = native.cpu_fd()
        while self.native is native and not self.stopping.is_set():
            try:
                select.select([fd], [], [], 0.05)
            except (OSError, ValueError):
                return
            if self.native is not native:
                return
            with self.datapath.lock:
                while True:
                    frame = native.pop_cpu()
                    if frame is None:
                        break
                    self.datapath._packet_in(self.args.cpu_port, frame)
                switch = self.datapath.switch
                if switch is not None and hasattr(switch, "deliver_messages"):
                    switch.deliver_messages()

    def _impairments(self, args) -> Impairments | None:
        if not args.impairments and args.impair_stats is None:
            return None
        impairments = Impairments(args.impairments, self._impaired_frames_go_to,
                                  trace=self.trace, stats_path=args.impair_stats,
                                  device_id=args.device_id)
        if args.impair_stats is not None:
            try:
                impairments.write_stats(final=False)
            except OSError as e:
                raise UsageError(f"cannot write --impair-stats {args.impair_stats}: "
                                 f"{e.strerror}") from None
        self.ports.add_wakeup(impairments.timers.wakeup_fd, impairments.timers.clear_wakeup)
        return impairments

    def _impaired_frames_go_to(self, number: int, direction: str):
        """Where frames leaving an impairment go: into the pipeline (rx) or on the wire (tx)."""
        if direction == "rx":
            return functools.partial(self._ingress, number)
        return functools.partial(self._send, number)

    def _open_ports(self, specs: dict[int, str]) -> PortSet:
        opened = []
        try:
            for number, interface in sorted(specs.items()):
                opened.append(RawPort(number, interface, self.args.segmentation_offload))
                if not self.args.keep_offloads:
                    problem = disable_offloads(interface, self.args.segmentation_offload)
                    if problem and self.trace:
                        self.trace(f"offloads on {interface} left on: {problem}")
        except PortError as e:
            for port in opened:
                port.close()
            raise UsageError(str(e)) from None
        return PortSet(opened)

    def _open_pcaps(self, directory: str | None):
        if directory is None:
            return {}, {}
        os.makedirs(directory, exist_ok=True)
        pcap_in, pcap_out = {}, {}
        for number, port in self.ports.by_number.items():
            pcap_in[number] = PcapWriter(os.path.join(directory, f"{port.interface}_in.pcap"))
            pcap_out[number] = PcapWriter(os.path.join(directory, f"{port.interface}_out.pcap"))
        return pcap_in, pcap_out

    def transmit(self, port_number: int, frame: bytes) -> None:
        """Send a frame the pipeline emitted (called under the datapath lock), through the
        port's tx impairment if it has one."""
        link = self.impairments and self.impairments.link(port_number, "tx")
        if link:
            link.offer(frame)
        else:
            self._send_locked(port_number, frame)

    def _send(self, port_number: int, frame: bytes) -> None:
        """Put an impaired frame on the wire (delayed ones leave from the receive loop)."""
        with self.datapath.lock:    # the packet loop and PacketOut share ports and pcaps
            self._send_locked(port_number, frame)

    def _send_untraced(self, port_number: int, frame: bytes) -> None:
        """`_send_locked` without pcaps and trace: nothing records the frame or its drop."""
        port = self.ports.by_number.get(port_number)
        if port is not None:
            port.send(frame)

    def _send_locked(self, port_number: int, frame: bytes) -> None:
        """Put a frame on the wire; the pcap records what was sent."""
        port = self.ports.by_number.get(port_number)
        if port is None:
            if self.trace:
                self.trace(f"dropped {len(frame)} bytes for port {port_number}: "
                           "no interface on that port")
            return
        problem = port.send(frame)
        if problem is not None:
            if self.trace:
                self.trace(f"dropped {len(frame)} bytes on port {port_number}: {problem}")
            return
        writer = self.pcaps_out.get(port_number)
        if writer is not None:
            writer.write(frame)

    def receive_loop(self) -> None:
        """Poll the ports and feed every arriving frame to the pipeline (through the port's rx
        impairment if any) until stopped; between bursts, send the frames whose delay is over."""
        impairments = self.impairments
        lock = self.datapath.lock
        deliver = {number: self._deliver_function(number) for number in self.ports.by_number}
        while not self.stopping.is_set():
            timeout = impairments.timeout_ms(_POLL_MS) if impairments else _POLL_MS
            for port in self.ports.wait(timeout):
                to_pipeline = deliver[port.number]
                with lock:           # once per burst: gRPC threads wait at most one burst
                    for _ in range(_BURST):
                        try:
                            frame = port.receive()
                        except PortError as e:
                            self.report(str(e))
                            break
                        if frame is None:
                            break
                        if frame:
                            to_pipeline(frame)
                    if impairments:
                        impairments.service()
            if impairments:
                impairments.service()
            if self.trace:
                self.trace.flush()      # lines written outside packets (impairments, ...)

    def _deliver_function(self, number: int) -> Callable[[bytes], None]:
        """What the packet loop calls, holding the datapath lock, with each frame received
        on port `number`: the rx impairment, the pcap writer, or the pipeline itself."""
        link = self.impairments and self.impairments.link(number, "rx")
        if link:
            return link.offer
        if number in self.pcaps_in:
            return functools.partial(self._ingress, number)
        return functools.partial(self.datapath.process, number,
                                 origin=self.ports.by_number[number].interface)

    def report(self, message: str) -> None:
        """A problem worth a line even without a trace log."""
        print(f"p4switch run: {message}", file=sys.stderr, flush=True)
        if self.trace:
            self.trace(message)
            self.trace.flush()

    def _ingress(self, port_number: int, frame: bytes) -> None:
        """A frame enters the pipeline; the pcap records it as the pipeline gets it (after the
        rx impairment)."""
        writer = self.pcaps_in.get(port_number)
        if writer is not None:
            writer.write(frame)
        interface = self.ports.by_number[port_number].interface
        self.datapath.inject(port_number, frame, origin=interface)

    def stop_impairments(self) -> None:
        """Discard the frames still delayed or held; report the counters one line per port
        (the trace log gets them too) and write the final stats file."""
        if self.impairments is None:
            return
        lines = self.impairments.stop()
        if self.trace is None or self.args.log_file:
            for line in lines:
                print(line, flush=True)

    def close(self) -> None:
        switch = self.datapath.switch
        if getattr(switch, "backend", None) == "xdp":
            switch.close()
        if self.native is not None:
            native, self.native = self.native, None
            native.close()
        self.ports.close()
        for writer in list(self.pcaps_in.values()) + list(self.pcaps_out.values()):
            writer.close()


def _open_log(args):
    if args.log_console:
        return sys.stdout
    if args.log_file:
        try:
            return open(args.log_file, "a")    # flushed per packet by TraceLog
        except OSError as e:
            raise UsageError(f"cannot open log file {args.log_file}: {e.strerror}") from None
    return None


def run(args) -> int:
    from .p4runtime_server import P4RuntimeService, serve
    stopping = StopFlag().set_on_signals()
    program = load_program(args) if args.program else None
    log_stream = _open_log(args)
    device = Device(args, log_stream, stopping)
    service = P4RuntimeService(args.device_id, device.datapath)
    if program is not None:
        service.start_with(program)
    try:
        server = serve(service, args.grpc_server_addr)
    except OSError as e:
        device.close()
        print(f"p4switch run: {e}", file=sys.stderr)
        return 1
    if device.trace:
        ports = ", ".join(f"{n}@{p.interface}" for n, p in sorted(device.ports.by_number.items()))
        device.trace(f"device {args.device_id} up: ports [{ports}], P4Runtime on "
                     f"{args.grpc_server_addr}, "
                     f"{'program loaded' if program else 'waiting for a pipeline'}")
        device.trace.flush()
    try:
        device.receive_loop()
    finally:
        server.stop(grace=0.5).wait()
        device.stop_impairments()
        device.close()
        if log_stream is not None and log_stream is not sys.stdout:
            log_stream.close()
    return 0


def main(argv: list[str]) -> int:
    try:
        return run(parse_args(argv))
    except UsageError as e:
        print(f"p4switch run: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
