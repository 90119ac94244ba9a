"""nanomsg sockets through ctypes: the PAIR socket simple_switch's ``--packet-in`` binds, and a
SUB socket for its notifications (learning digests).

simple_switch links libnanomsg itself, so the library is on every machine that runs it; no
Python binding (nnpy) is needed.  Only what the bmv2 driver uses is bound: create, connect,
send, receive with a timeout, close.
"""

import ctypes
import ctypes.util
import errno
import os

AF_SP = 1
NN_PAIR = 16                # NN_PROTO_PAIR * 16
NN_SUB = 33                 # NN_PROTO_PUBSUB * 16 + 1
NN_SOL_SOCKET = 0
NN_SNDTIMEO = 4
NN_RCVTIMEO = 5
NN_SUB_SUBSCRIBE = 1
NN_MSG = ctypes.c_size_t(-1).value
NN_DONTWAIT = 1

_LIBRARY_NAMES = ("libnanomsg.so.5", "libnanomsg.so")


class NanomsgError(OSError):
    """A nanomsg call failed (the message names the call and the errno)."""


def _load():
    names = list(_LIBRARY_NAMES)
    found = ctypes.util.find_library("nanomsg")
    if found:
        names.append(found)
    for name in names:
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
        lib.nn_socket.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.nn_connect.argtypes = [ctypes.c_int, ctypes.c_char_p]
        lib.nn_send.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        lib.nn_recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        lib.nn_setsockopt.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                      ctypes.c_void_p, ctypes.c_size_t]
        lib.nn_freemsg.argtypes = [ctypes.c_void_p]
        lib.nn_close.argtypes = [ctypes.c_int]
        return lib
    return None


_lib = None


def library():
    """The loaded libnanomsg; NanomsgError (one line) when it is not installed."""
    global _lib
    if _lib is None:
        _lib = _load()
        if _lib is None:
            raise NanomsgError("libnanomsg (libnanomsg5) not found: simple_switch's packet "
                               "I/O needs it")
    return _lib


def _check(result, call):
    if result < 0:
        code = ctypes.get_errno()
        raise NanomsgError(code, f"{call}: {os.strerror(code)}")
    return result


class Socket:
    """One nanomsg socket, connected to ``address`` (``ipc:///path``)."""

    def __init__(self, protocol, address):
        self.lib = library()
        self.fd = _check(self.lib.nn_socket(AF_SP, protocol), "nn_socket")
        self.timeout_ms = None
        if protocol == NN_SUB:
            _check(self.lib.nn_setsockopt(self.fd, NN_SUB, NN_SUB_SUBSCRIBE, b"", 0),
                   "nn_setsockopt(NN_SUB_SUBSCRIBE)")
        _check(self.lib.nn_connect(self.fd, address.encode()), f"nn_connect({address})")

    def _set_timeout(self, option, ms):
        value = ctypes.c_int(ms)
        _check(self.lib.nn_setsockopt(self.fd, NN_SOL_SOCKET, option, ctypes.byref(value),
                                      ctypes.sizeof(value)), "nn_setsockopt(timeout)")

    def send(self, data, timeout_ms=5000):
        self._set_timeout(NN_SNDTIMEO, timeout_ms)
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        _check(self.lib.nn_send(self.fd, buf, len(data), 0), "nn_send")

    def recv(self, timeout_ms):
        """The next message, or None when none comes within ``timeout_ms`` (0: do not wait)."""
        flags = 0
        if timeout_ms <= 0:
            flags = NN_DONTWAIT
        elif timeout_ms != self.timeout_ms:
            self._set_timeout(NN_RCVTIMEO, int(timeout_ms))
            self.timeout_ms = timeout_ms
        pointer = ctypes.c_void_p()
        size = self.lib.nn_recv(self.fd, ctypes.byref(pointer), NN_MSG, flags)
        if size < 0:
            code = ctypes.get_errno()
            if code in (errno.EAGAIN, errno.ETIMEDOUT, errno.EINTR):
                return None
            raise NanomsgError(code, f"nn_recv: {os.strerror(code)}")
        try:
            return ctypes.string_at(pointer, size)
        finally:
            self.lib.nn_freemsg(pointer)

    def close(self):
        if self.fd is not None:
            self.lib.nn_close(self.fd)
            self.fd = None


def pair(address):
    return Socket(NN_PAIR, address)


def subscriber(address):
    return Socket(NN_SUB, address)
