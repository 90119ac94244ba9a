"""Servers the controller tests start on loopback: a free TCP port, and waiting until a
started process listens on it (or saying, in the failure, why it exited)."""

import socket
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, process, name: str, exit_output=lambda: "",
                   timeout: float = 30.0) -> None:
    """Until `process` accepts connections on 127.0.0.1:`port`; AssertionError with
    `exit_output()` if it exits first, or at the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{name} exited: {exit_output()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"{name} did not listen on port {port}")
