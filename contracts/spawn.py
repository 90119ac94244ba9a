"""The spawn protocol: how a launcher asks a process that has its modules imported already to
start `python -m MODULE ARGS...` commands, and hears how they end.

Two servers speak it: a zygote (topologies/zygote.py), which forks a child per command, and
a worker group (hosts/group.py, started as `python -m GROUP_MODULE FD`), which runs each
command as a thread.  The launchers are topologies.zygote.Zygote and fabric.spawner's
WorkerGroup.  Over one SOCK_SEQPACKET Unix socket (the server's end is file descriptor FD):

- a request is one JSON message {"id", "netns", "mntns", "module", "args", "cwd", "env"}
  with the command's stdin, stdout and stderr passed along by SCM_RIGHTS (at most MAX_FDS);
  netns and mntns are /proc/PID/ns/ paths to join (setns), or null;
- {"signal": id, "signum": N} (worker groups only): the command is reported ended with -N at
  once, since a thread cannot be stopped from outside;
- the server answers with JSON lines: {"id": id, "pid": pid} once the command started, and
  {"ended": id, "code": code} when it ended (code as subprocess gives it: -N for signal N).
  Ends are reported by request id, never by pid: the kernel reuses pids and thread ids.

The server ends when the socket closes.
"""
from __future__ import annotations

import ctypes
import json
import os
import socket
from typing import Optional

MAX_FDS = 3
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
# The worker group server and the commands it runs as threads (`python -m hosts worker|...`).
GROUP_MODULE = "hosts.group"
GROUP_PACKAGE = "hosts"
GROUP_COMMANDS = ("worker", "allreduce")


def request(request_id: int, netns: Optional[str], mntns: Optional[str], module: str,
            args: list, cwd: Optional[str], env: Optional[dict]) -> bytes:
    return json.dumps({"id": request_id, "netns": netns, "mntns": mntns, "module": module,
                       "args": list(args), "cwd": cwd, "env": env or {}}).encode()


def signal_request(request_id: int, signum: int) -> bytes:
    return json.dumps({"signal": request_id, "signum": signum}).encode()


def started(request_id: int, pid: int) -> bytes:
    return json.dumps({"id": request_id, "pid": pid}).encode() + b"\n"


def ended(request_id: int, code: int) -> bytes:
    return json.dumps({"ended": request_id, "code": code}).encode() + b"\n"


def receive(control: socket.socket) -> tuple:
    """(request dict, file descriptors) of the next message; (None, []) once the socket has
    closed (descriptors that came with the empty message are closed)."""
    message, fds, _, _ = socket.recv_fds(control, 65536, MAX_FDS)
    if not message:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(message), fds


def answers(data: bytes) -> list:
    """The answers in what the launcher read from the socket."""
    return [json.loads(line) for line in data.splitlines()]


def exit_status(exc: SystemExit) -> int:
    """The exit status python gives a SystemExit (a message: 1, printed by the caller)."""
    return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


def join_namespaces(namespaces: list) -> None:
    """setns(2) into each (path, CLONE_NEW...) of `namespaces`, all opened before any is
    joined (a joined mount namespace changes what the other paths name).  A network
    namespace is joined by the calling thread only."""
    libc = ctypes.CDLL(None, use_errno=True)
    opened = [(os.open(path, os.O_RDONLY), path, kind) for path, kind in namespaces]
    try:
        for fd, path, kind in opened:
            if libc.setns(fd, kind) != 0:
                errno = ctypes.get_errno()
                raise OSError(errno, f"setns {path}: {os.strerror(errno)}")
    finally:
        for fd, _, _ in opened:
            os.close(fd)
