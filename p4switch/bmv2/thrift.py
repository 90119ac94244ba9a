"""bmv2's Thrift runtime API, as simple_switch serves it: the ``standard`` service (tables,
action profiles, counters, meters, registers, value sets, learning), ``simple_switch``
(mirroring sessions) and ``simple_pre_lag`` (multicast), multiplexed on one TCP port.

The client stubs are bmv2's own Python modules (the bundle's lib/python3: bm_runtime,
sswitch_runtime), with the ``thrift`` package (Debian's python3-thrift); both are imported
here, at run time, so that the rest of p4switch does not need them.
"""

import socket
import sys
import time


class ThriftUnavailable(RuntimeError):
    """bmv2's Thrift client modules or the thrift package cannot be imported (one line)."""


def _import_stubs(python_dir):
    if python_dir and python_dir not in sys.path:
        sys.path.append(python_dir)
    try:
        from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
        from thrift.transport import TSocket, TTransport
        from bm_runtime.standard import Standard
        from bm_runtime.standard import ttypes as standard_types
        from bm_runtime.simple_pre_lag import SimplePreLAG
        from sswitch_runtime import SimpleSwitch
        from sswitch_runtime import ttypes as sswitch_types
    except ImportError as exc:
        raise ThriftUnavailable(
            f"bmv2's Thrift client cannot be imported ({exc}); it needs python3-thrift and "
            f"bmv2's lib/python3 modules") from None
    return locals()


class Clients:
    """Connected Thrift clients: ``standard``, ``sswitch``, ``pre``; ``types`` and
    ``sswitch_types`` are the generated ttypes modules (match params, options, errors)."""

    def __init__(self, port, python_dir=None, host="127.0.0.1", timeout_s=10.0):
        stubs = _import_stubs(python_dir)
        self.types = stubs["standard_types"]
        self.sswitch_types = stubs["sswitch_types"]
        raw = stubs["TSocket"].TSocket(host, port)
        raw.setTimeout(int(timeout_s * 1000))
        self.transport = stubs["TTransport"].TBufferedTransport(raw)
        protocol = stubs["TBinaryProtocol"].TBinaryProtocol(self.transport)
        mux = stubs["TMultiplexedProtocol"].TMultiplexedProtocol
        self.standard = stubs["Standard"].Client(mux(protocol, "standard"))
        self.sswitch = stubs["SimpleSwitch"].Client(mux(protocol, "simple_switch"))
        self.pre = stubs["SimplePreLAG"].Client(mux(protocol, "simple_pre_lag"))
        self.transport.open()

    def close(self):
        try:
            self.transport.close()
        except Exception:  # noqa: BLE001 - closing a dead connection
            pass


def free_tcp_port():
    """A TCP port on 127.0.0.1 nothing listens on now (the switch binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, alive, timeout_s):
    """True once something accepts on 127.0.0.1:port; False when ``alive()`` turns false or
    ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not alive():
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.01)
    return False


def error_text(exc):
    """One line for a Thrift exception from bmv2: its class and error code's name."""
    code = getattr(exc, "code", None)
    name = None
    module = sys.modules.get(type(exc).__module__)
    kind = type(exc).__name__.replace("Invalid", "").replace("Operation", "")
    enum = getattr(module, f"{kind}OperationErrorCode", None) if module else None
    if enum is not None and code is not None:
        name = enum._VALUES_TO_NAMES.get(code)
    detail = name or (f"code {code}" if code is not None else str(exc) or "error")
    return f"{type(exc).__name__} {detail}"
