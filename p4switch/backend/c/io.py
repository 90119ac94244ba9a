"""ctypes binding of the native packet I/O loop (runtime/io.c): AF_PACKET ports moved to and
from a C pipeline function by a C loop, with no Python per frame.

    ports = NativePorts(cpu_port=255)
    ports.add_port(1, "veth1")
    ports.set_pipeline(fn_address, pipeline_address)   # a p4io_process_fn and its context
    thread = ports.start()          # or threading.Thread(target=ports.run).start()
    ...
    ports.close()                   # stops the loop, waits for run() to return, frees it

run() blocks in C with the GIL released (with threads > 1 the loop's other workers run on
threads of their own). inject, send, set_pipeline, add_port, pop_cpu and stats may be called
from any thread while it runs.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading

from p4switch.backend.c import build

_STAT_NAMES = ("rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "tx_dropped", "rx_dropped")
_GLOBAL_NAMES = ("no_port_dropped", "cpu_dropped", "pipeline_dropped")
MAX_FRAME = 65600          # P4IO_MAX_FRAME in io.h
MAX_THREADS = 64           # P4IO_MAX_THREADS in io.h
_ERROR_SIZE = 256

_libraries: dict[tuple, ctypes.CDLL] = {}
_libraries_lock = threading.Lock()


class NativePortsError(Exception):
    """A port that cannot be opened, or a loop that cannot be created."""


def library(extra_flags=()) -> ctypes.CDLL:
    """The built and loaded I/O loop (once per set of extra compiler flags, e.g.
    build.SANITIZER_FLAGS: such an object needs libasan preloaded)."""
    key = tuple(extra_flags)
    with _libraries_lock:
        if key not in _libraries:
            path = build.build_shared("p4io", {"io.c": build.runtime_source("io.c")},
                                      extra_flags=key)
            _libraries[key] = _declare(build.load(path))
        return _libraries[key]


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    p, u32, i32, c_int = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32, ctypes.c_int
    data = ctypes.c_char_p
    signatures = {
        "p4io_create": (p, [ctypes.c_char_p, c_int]),
        "p4io_add_port": (c_int, [p, u32, ctypes.c_char_p, ctypes.c_char_p, c_int]),
        "p4io_set_tuning": (None, [p, u32, u32, u32]),
        "p4io_set_threads": (c_int, [p, u32]),
        "p4io_threads": (u32, [p]),
        "p4io_set_offload": (c_int, [p, c_int]),
        "p4io_offload": (c_int, [p]),
        "p4io_port_info": (c_int, [p, u32, ctypes.POINTER(u32)]),
        "p4io_set_cpu_port": (None, [p, i32]),
        "p4io_set_pipeline": (None, [p, p, p]),
        "p4io_run": (c_int, [p]),
        "p4io_stop": (None, [p]),
        "p4io_inject": (c_int, [p, u32, data, u32]),
        "p4io_send": (c_int, [p, u32, data, u32]),
        "p4io_cpu_fd": (c_int, [p]),
        "p4io_cpu_pop": (c_int, [p, p, u32, ctypes.POINTER(u32)]),
        "p4io_stats": (None, [p, u32, ctypes.POINTER(ctypes.c_uint64)]),
        "p4io_global_stats": (None, [p, ctypes.POINTER(ctypes.c_uint64)]),
        "p4io_destroy": (None, [p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


class NativePorts:
    """The switch's ports served by the native loop with `threads` worker threads (a port is
    received by one of them: the ports added 1st, (threads+1)-th, ... by the first).
    `extra_flags` selects a build of io.c (e.g. build.SANITIZER_FLAGS).  `offload`: every
    socket carries a virtio-net header, so a TCP send a host left whole crosses the switch as
    one frame (segmentation offload, io.h p4io_set_offload)."""

    def __init__(self, cpu_port: int | None = None, extra_flags=(), threads: int = 1,
                 offload: bool = False):
        self._lib = library(extra_flags)
        error = ctypes.create_string_buffer(_ERROR_SIZE)
        self._loop = self._lib.p4io_create(error, _ERROR_SIZE)
        if not self._loop:
            raise NativePortsError(error.value.decode(errors="replace"))
        if self._lib.p4io_set_threads(self._loop, threads) != 0:
            self._lib.p4io_destroy(self._loop)
            self._loop = None
            raise NativePortsError(f"threads must be 1 to {MAX_THREADS}, not {threads}")
        self.threads = threads
        self._lib.p4io_set_offload(self._loop, int(offload))
        self.offload = offload
        self._lock = threading.Lock()         # guards _loop against close()
        self._finished = threading.Event()    # run() has returned (or never ran)
        self._finished.set()
        self._pop_buffer = ctypes.create_string_buffer(MAX_FRAME)
        self._pop_length = ctypes.c_uint32()
        self.ports: dict[int, str] = {}
        self._ring_wanted = (os.environ.get("P4IO_RX") != "mmsg"
                             and os.environ.get("P4IO_RING_KB") != "0")
        if cpu_port is not None:
            self.set_cpu_port(cpu_port)

    def _handle(self):
        if not self._loop:
            raise ValueError("the native ports are closed")
        return self._loop

    def add_port(self, number: int, interface: str) -> None:
        """Open `interface` as port `number` (also while the loop runs)."""
        error = ctypes.create_string_buffer(_ERROR_SIZE)
        if self._lib.p4io_add_port(self._handle(), number, interface.encode(), error,
                                   _ERROR_SIZE) != 0:
            raise NativePortsError(error.value.decode(errors="replace"))
        self.ports[number] = interface
        ring, _ = self.port_info(number)
        if not ring and self._ring_wanted:
            print(f"native ports: port {number} ({interface}) receives with recvmmsg: no "
                  "PACKET_MMAP ring for its MTU", file=sys.stderr, flush=True)

    def port_info(self, number: int) -> tuple[bool, bool]:
        """(receives through a PACKET_MMAP ring, transmits bypassing the qdisc layer) of an
        open port; the bypass is on only with $P4IO_QDISC_BYPASS=1 and where the port's root
        qdisc was noqueue when it was opened, so a shaping qdisc is never skipped."""
        values = (ctypes.c_uint32 * 2)()
        if self._lib.p4io_port_info(self._handle(), number, values) != 0:
            raise KeyError(number)
        return bool(values[0]), bool(values[1])

    def set_tuning(self, ring_kb: int, nap_us: int, nap_min: int) -> None:
        """ring_kb: each port's receive ring in KiB (0: recvmmsg), for ports added later;
        nap_us, nap_min: under load (a wake-up found nap_min frames or more) sleep nap_us
        microseconds instead of waiting on the sockets (0: always wait). See io.h; the
        defaults come from $P4IO_RX, $P4IO_RING_KB, $P4IO_NAP_US, $P4IO_NAP_MIN, else
        8192, 50, 2."""
        self._lib.p4io_set_tuning(self._handle(), ring_kb, nap_us, nap_min)
        self._ring_wanted = ring_kb > 0

    def set_cpu_port(self, cpu_port: int | None) -> None:
        """Frames the pipeline emits to `cpu_port` go to pop_cpu (None: no CPU port)."""
        self._lib.p4io_set_cpu_port(self._handle(), -1 if cpu_port is None else cpu_port)

    def set_pipeline(self, fn_ptr: int | None, pipeline_ptr: int | None) -> None:
        """The pipeline as raw addresses: a p4io_process_fn and its first argument (None or
        0: drop every frame). When this returns the previous pipeline is no longer in use."""
        self._lib.p4io_set_pipeline(self._handle(), fn_ptr or None, pipeline_ptr or None)

    def run(self) -> None:
        """Serve the ports until stop() (blocks; call it from a thread of its own)."""
        loop = self._handle()
        self._finished.clear()
        try:
            if self._lib.p4io_run(loop) != 0:
                raise OSError("the native packet loop failed in poll()")
        finally:
            self._finished.set()

    def start(self, name: str = "native-ports") -> threading.Thread:
        """run() on a new daemon thread, which is returned."""
        self._handle()
        self._finished.clear()      # before the thread starts, so close() waits for it
        thread = threading.Thread(target=self._run_started, name=name, daemon=True)
        thread.start()
        return thread

    def _run_started(self) -> None:
        try:
            self._lib.p4io_run(self._loop)
        finally:
            self._finished.set()

    def stop(self) -> None:
        """Make run() return (soon); a stopped loop stays stopped."""
        if self._loop:
            self._lib.p4io_stop(self._loop)

    def inject(self, port: int, frame: bytes) -> bool:
        """Run `frame` through the pipeline as if it came in on `port` (a PacketOut); False
        when the pipeline dropped it for an internal error or there is no pipeline."""
        return self._lib.p4io_inject(self._handle(), port, frame, len(frame)) == 0

    def send(self, port: int, frame: bytes) -> bool:
        """Put `frame` straight on `port`'s wire; False when it was dropped."""
        return self._lib.p4io_send(self._handle(), port, frame, len(frame)) == 0

    def cpu_fd(self) -> int:
        """A file descriptor readable while frames wait for pop_cpu (do not read it: pop
        until None)."""
        return self._lib.p4io_cpu_fd(self._handle())

    def pop_cpu(self) -> bytes | None:
        """The oldest frame the pipeline sent to the CPU port, or None."""
        with self._lock:
            loop = self._handle()
            got = self._lib.p4io_cpu_pop(loop, self._pop_buffer, len(self._pop_buffer),
                                         ctypes.byref(self._pop_length))
            if got < 0:
                self._pop_buffer = ctypes.create_string_buffer(self._pop_length.value)
                got = self._lib.p4io_cpu_pop(loop, self._pop_buffer, len(self._pop_buffer),
                                             ctypes.byref(self._pop_length))
            if got <= 0:
                return None
            return self._pop_buffer.raw[:self._pop_length.value]

    def stats(self, port: int) -> dict[str, int]:
        """Counters of one port (all zero for a port that is not open); rx_dropped is what
        the kernel dropped for want of room, and frames too large to receive."""
        values = (ctypes.c_uint64 * 6)()
        self._lib.p4io_stats(self._handle(), port, values)
        return dict(zip(_STAT_NAMES, values))

    def global_stats(self) -> dict[str, int]:
        """Frames emitted to a port with no interface, dropped on a full CPU queue, and
        dropped by the pipeline (or for want of one)."""
        values = (ctypes.c_uint64 * 3)()
        self._lib.p4io_global_stats(self._handle(), values)
        return dict(zip(_GLOBAL_NAMES, values))

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop, wait for run() to return, close the sockets and free the loop."""
        with self._lock:
            if not self._loop:
                return
            self._lib.p4io_stop(self._loop)
            if not self._finished.wait(timeout):
                raise RuntimeError("the native packet loop did not stop")
            self._lib.p4io_destroy(self._loop)
            self._loop = None

    def __enter__(self) -> NativePorts:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
