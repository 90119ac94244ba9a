"""The running pipeline of the device: one Switch behind one lock, shared by the packet loop
and the gRPC threads.

Frames enter through `inject` (from a port, or from the CPU port for PacketOut); what the
pipeline emits goes to `transmit(port, frame)`, except what it sends to the CPU port, which
goes to the packet-in listener. Installing a new program replaces the Switch (fresh state).
"""
import contextlib
import gc
import logging
import threading
from typing import Callable

from p4switch.runtime.errors import SwitchError
from .errors import P4RuntimeError, code_from_name
from .trace import TraceLog

_log = logging.getLogger("p4switch.device.datapath")


class Datapath:
    """The Switch of the device, or none yet (--no-p4 before a pipeline arrives)."""

    def __init__(self, transmit: Callable[[int, bytes], None], cpu_port: int | None = None,
                 log: TraceLog | None = None, backend: str | None = None):
        self.lock = threading.RLock()
        self.backend = backend
        # Called with the new Switch before it replaces the old one (the device moves its
        # native packet loop to it, so the old one is out of use before it is freed).
        self.before_install: Callable | None = None
        self.transmit = transmit
        self.cpu_port = cpu_port
        self.log = log
        self.program = None
        self.switch = None
        # Set by the P4Runtime server: where packet-ins and digests go.
        self.on_packet_in: Callable[[bytes], None] | None = None
        self.on_digest: Callable[[str, list], None] | None = None

    def install(self, program) -> None:
        """Run `program` from now on, with all state fresh."""
        from p4switch import Switch
        switch = Switch(program, cpu_port=self.cpu_port, log=self.log, backend=self.backend)
        switch.packet_in = self._packet_in
        switch.on_digest = self._digest
        with self.lock:
            if self.before_install is not None:
                self.before_install(switch)
            self.program, self.switch = program, switch
        # The compiled program and its tables live until the next install: moving them out
        # of the collector's generations keeps collections from walking them while packets
        # run. (Unfrozen first, so a replaced program can be collected.)
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    def inject(self, port: int, frame: bytes, origin: str) -> int:
        """Process one frame arriving on `port` (from `origin`: an interface name, or the
        controller); returns how many frames were emitted (0 when there is no pipeline)."""
        with self.lock:
            return self.process(port, frame, origin)

    def process(self, port: int, frame: bytes, origin: str) -> int:
        """`inject` for a caller that holds the lock already (the packet loop takes it once
        per burst of frames)."""
        log = self.log
        if log is not None:
            log.begin_packet(f"received {len(frame)} bytes on port {port} ({origin})")
        try:
            if self.switch is None:
                if log is not None:
                    log("dropped: no pipeline has been set")
                return 0
            try:
                outputs = self.switch.process_packet(port, frame)
            except Exception as e:  # noqa: BLE001 - one bad packet must not stop the device
                message = f"dropped: the pipeline failed on this packet: {type(e).__name__}: {e}"
                if log is not None:
                    log(message)
                _log.warning("packet on port %d %s", port, message)
                return 0
            # Sent under the lock too: the packet loop and PacketOut share ports and pcaps.
            # Packets for the CPU port never appear here: the Switch hands them to packet_in.
            transmit = self.transmit
            for egress_port, data in outputs:
                transmit(egress_port, data)
            return len(outputs)
        finally:
            if log is not None:
                log.end_packet()

    @contextlib.contextmanager
    def batch(self):
        """Hold the lock over several `call`s (a Write's updates); a switch that loads its
        tables into C loads each changed table once, at the end (deferred_loads)."""
        with self.lock:
            deferred = getattr(self.switch, "deferred_loads", None)
            if deferred is None:
                yield
            else:
                with deferred():
                    yield

    def call(self, operation: Callable):
        """Run `operation(switch)` under the lock; runtime errors become P4Runtime errors."""
        with self.lock:
            if self.switch is None:
                raise P4RuntimeError(code_from_name("FAILED_PRECONDITION"),
                                     "no forwarding pipeline config has been set")
            try:
                return operation(self.switch)
            except SwitchError as e:
                raise P4RuntimeError(code_from_name(e.grpc_code), str(e)) from None

    def _packet_in(self, port: int, data: bytes) -> None:
        if self.on_packet_in is not None:
            self.on_packet_in(data)

    def _digest(self, name: str, values: list) -> None:
        if self.on_digest is not None:
            self.on_digest(name, values)
