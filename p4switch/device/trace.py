"""The device's packet trace: one line per event, `[time] [pkt N] message`, like bmv2's log.

The Switch calls the log with its trace events (parser states, tables hit or missed,
actions, ports); the device numbers packets as they arrive, so every line says which packet
it belongs to.
"""
import threading
import time


class TraceLog:
    """Trace lines to a text stream (stdout or a file), flushed at the end of each packet
    (`end_packet`) and by `flush` (the device's own lines), not line by line."""

    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()
        self._packet = 0

    def begin_packet(self, message: str) -> None:
        """Start the trace of the next packet."""
        with self._lock:
            self._packet += 1
        self(message)

    def __call__(self, message: str) -> None:
        now = time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1e6):06d}"
        with self._lock:
            self._stream.write(f"[{stamp}] [pkt {self._packet}] {message}\n")

    def end_packet(self) -> None:
        """The packet's trace is complete: let readers of the log see it."""
        self.flush()

    def flush(self) -> None:
        with self._lock:
            self._stream.flush()
