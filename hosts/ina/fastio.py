"""Batched UDP I/O for `python -m hosts worker`: recvmmsg/sendmmsg through hosts/ina/fastio.c.

`BatchSocket` receives every waiting datagram (up to a batch) with one recvmmsg into a flat
buffer of fixed-size slots, and sends a list of payloads with one sendmmsg, so the worker's
loop makes one call per batch instead of one recvfrom/sendto (and their bytes and address
tuples) per packet.  The C helper is built on first use with p4switch's build_shared and
kept in a cache keyed by the source's hash (P4SWITCH_CACHE, else ~/.cache/p4switch), so
later workers only load it.  Without a C compiler (or with HOSTS_FASTIO=0), `load()` returns
None and the worker keeps its plain socket calls.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct

import nativebuild

SOURCE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fastio.c")
ENVIRONMENT = "HOSTS_FASTIO"       # "0": never use the helper
MAX_BATCH = 256                    # FIO_MAX_BATCH in fastio.c

_loaded: dict = {}                 # "lib": the CDLL or None, "why": reason it is None


def _library_path() -> str:
    with open(SOURCE_PATH) as f:
        source = f.read()
    return nativebuild.build_shared("hosts-fastio", {"fastio.c": source})


def load():
    """The helper library, or None (then `unavailable_reason()` says why)."""
    if "lib" in _loaded:
        return _loaded["lib"]
    lib, why = None, None
    if os.environ.get(ENVIRONMENT, "1") == "0":
        why = f"disabled by {ENVIRONMENT}=0"
    else:
        try:
            lib = ctypes.CDLL(_library_path())
            pointer, c_int = ctypes.c_void_p, ctypes.c_int
            lib.fio_receiver_new.argtypes = [pointer, c_int, c_int]
            lib.fio_receiver_new.restype = pointer
            lib.fio_receiver_free.argtypes = [pointer]
            lib.fio_receiver_free.restype = None
            lib.fio_receive.argtypes = [pointer, c_int, pointer, pointer, pointer]
            lib.fio_receive.restype = c_int
            lib.fio_send.argtypes = [c_int, pointer, c_int, pointer, c_int, ctypes.c_uint,
                                     ctypes.c_ushort]
            lib.fio_send.restype = c_int
        except Exception as exc:   # no compiler, compile error, unloadable object: plain I/O
            lib, why = None, f"{type(exc).__name__}: {exc}"
    _loaded.update(lib=lib, why=why)
    return lib


def unavailable_reason() -> str | None:
    load()
    return _loaded["why"]


def ipv4_key(ip: str) -> int:
    """An IPv4 address as fio_receive reports sources and fio_send takes destinations."""
    return struct.unpack("=I", socket.inet_aton(ip))[0]


class BatchSocket:
    """recvmmsg/sendmmsg on `sock` (an AF_INET UDP socket) with buffers of `batch` slots of
    `slot_size` bytes.  Raises OSError like the socket calls it replaces."""

    def __init__(self, lib, sock: socket.socket, slot_size: int, batch: int):
        if not 1 <= batch <= MAX_BATCH:
            raise ValueError(f"batch must be in 1..{MAX_BATCH}, got {batch}")
        self.lib, self.sock, self.slot_size, self.batch = lib, sock, slot_size, batch
        self._receive = (ctypes.c_ubyte * (slot_size * batch))()
        self._send = (ctypes.c_ubyte * (slot_size * batch))()
        self.received = memoryview(self._receive).cast("B")
        self._outgoing = memoryview(self._send).cast("B")
        self._lengths = (ctypes.c_int * batch)()
        self._addresses = (ctypes.c_uint * batch)()
        self._ports = (ctypes.c_ushort * batch)()
        self._send_lengths = (ctypes.c_int * batch)()
        self._pointers = tuple(ctypes.addressof(a) for a in (
            self._receive, self._lengths, self._addresses, self._ports, self._send,
            self._send_lengths))
        self._receiver = lib.fio_receiver_new(self._pointers[0], slot_size, batch)
        if not self._receiver:
            raise MemoryError("no memory for the receive headers")

    def __del__(self):
        receiver, self._receiver = getattr(self, "_receiver", None), None
        if receiver:
            self.lib.fio_receiver_free(receiver)

    def receive(self) -> tuple[list, list, list]:
        """(lengths, source addresses, source ports) of the datagrams waiting, at most
        `batch`; datagram i is `received[i * slot_size:][:min(length, slot_size)]`."""
        lengths, addresses, ports = self._pointers[1:4]
        n = self.lib.fio_receive(self._receiver, self.sock.fileno(), lengths, addresses, ports)
        if n < 0:
            raise OSError(-n, os.strerror(-n))
        return self._lengths[:n], self._addresses[:n], self._ports[:n]

    def send(self, payloads: list, ip_key: int, port: int) -> None:
        """Send every payload (at most slot_size bytes each) to (ip, port), in order."""
        slot, out, lengths = self.slot_size, self._outgoing, self._send_lengths
        fd, send, send_lengths = self.sock.fileno(), self._pointers[4], self._pointers[5]
        for first in range(0, len(payloads), self.batch):
            chunk = payloads[first:first + self.batch]
            for i, payload in enumerate(chunk):
                size = len(payload)
                if size > slot:
                    raise ValueError(f"payload of {size} bytes exceeds the {slot}-byte slot")
                out[i * slot:i * slot + size] = payload
                lengths[i] = size
            sent = self.lib.fio_send(fd, send, slot, send_lengths, len(chunk), ip_key, port)
            if sent < 0:
                raise OSError(-sent, os.strerror(-sent))
