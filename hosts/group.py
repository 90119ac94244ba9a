"""`python -m hosts.group FD`: one process that runs many `python -m hosts worker|allreduce`
commands, each in a thread of its own, in the network namespace of its own emulated host.

Why: a worker started as its own interpreter holds 17 MB of private memory, 7 MB when forked
from a zygote: 7-17 GB for 1,024 workers.  As a thread it holds its
vector, its engine and its socket, and the interpreter, numpy and the C engine are loaded
once per group.  The C engine's loop runs without the GIL (ctypes releases it), so the
threads of a group wait in ppoll side by side.

How a command runs in a thread:
* the thread joins the host's network namespace with setns(2) (a network namespace is a
  per-thread property); every socket it makes stays in that namespace.  It stays in the
  group's mount namespace: Linux refuses setns(CLONE_NEWNS) to a multi-threaded process,
  and a Mininet host's own mount namespace differs only by its /sys (mnexec mounts the
  network namespace's sysfs there), which these commands do not read;
* it runs hosts/__main__.py's `main` through the same `run_command` as the command line
  (one-line errors, exit status 2 for usage, 1 for a failed run), with its stdout and stderr
  on the files it was given (sys.stdout and sys.stderr are per-thread here);
* its report's "cpu_seconds" are its own thread's (time.process_time is the thread's clock
  in a group process; a ring rank's sender threads are not counted).

The control socket speaks the spawn protocol of contracts/spawn.py: requests (JSON, with
stdin, stdout and stderr passed by SCM_RIGHTS) in; {"id", "pid"} (pid: the thread's id) and
{"ended": id, "code"} out, by request id (thread ids are reused: the kernel gave a new
rank the id of a thread of the previous mode); and {"signal": id, "signum": N}: a thread
cannot be stopped from outside, so the command is reported ended with -N at once and its
thread left to end by itself (its engine gives up after its retries) or with the group.  The group ends when the
control socket closes.  What a thread cannot have is refused with exit status 2 and one
line on its stderr: another working directory or environment than the group's, a mount
namespace to join, or a command other than `hosts worker` and `hosts allreduce`.
"""

from __future__ import annotations

import gc
import io
import os
import socket
import sys
import threading
import time
import traceback

import contracts.cli
from contracts import spawn as protocol
from hosts import __main__ as entry
from hosts import cli

COMMANDS = protocol.GROUP_COMMANDS
THREAD_STACK_BYTES = 4 << 20
EXIT_USAGE = 2


class ThreadStreams(io.TextIOBase):
    """sys.stdout or sys.stderr of the group: each thread writes to its own file."""

    def __init__(self, default):
        self._local = threading.local()
        self._default = default

    def use(self, stream) -> None:
        self._local.stream = stream

    def _target(self):
        return getattr(self._local, "stream", None) or self._default

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def writable(self) -> bool:
        return True


class Group:
    def __init__(self, control: socket.socket):
        self.control = control
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._reported: set = set()       # request ids whose end was already reported
        self.stdout = ThreadStreams(sys.__stdout__)
        self.stderr = ThreadStreams(sys.__stderr__)

    def send(self, answer: bytes) -> None:
        with self._send_lock:
            try:
                self.control.sendall(answer)
            except OSError:
                pass                      # the launcher is gone; the group ends with it

    def report_end(self, request_id: int, code: int) -> None:
        with self._state_lock:
            if request_id in self._reported:
                return
            self._reported.add(request_id)
        self.send(protocol.ended(request_id, code))

    def refusal(self, request: dict):
        """Why this request cannot run as a thread of this group, or None."""
        args = list(request.get("args") or [])
        if request.get("module") != protocol.GROUP_PACKAGE or not args or args[0] not in COMMANDS:
            return (f"a worker group runs `python -m hosts {'|'.join(COMMANDS)}` only, "
                    f"not {request.get('module')} {' '.join(args[:1])}")
        if request.get("cwd") and os.path.realpath(request["cwd"]) != os.getcwd():
            return f"a worker group runs in {os.getcwd()}, not in {request['cwd']}"
        if request.get("env"):
            return "a worker group cannot give a command its own environment"
        if request.get("mntns"):
            return "a worker group cannot join a mount namespace (setns(2) refuses it to a " \
                   "process with several threads)"
        return None

    def run(self, request: dict, fds: list) -> None:
        """In the command's thread: announce it, join the namespace, run it, report."""
        self.send(protocol.started(request["id"], threading.get_native_id()))
        os.close(fds[0])              # no command here reads stdin
        out = open(fds[1], "w", buffering=1, closefd=False)
        err = out if fds[2] == fds[1] else open(fds[2], "w", buffering=1, closefd=False)
        self.stdout.use(out)
        self.stderr.use(err)
        code = 1
        try:
            refused = self.refusal(request)
            if refused:
                print(f"error: {refused}", file=sys.stderr)
                code = EXIT_USAGE
            else:
                if request.get("netns"):
                    protocol.join_namespaces([(request["netns"], protocol.CLONE_NEWNET)])
                code = cli.run_cli(entry.main, list(request["args"]))
        except SystemExit as exc:      # argparse's own exits
            code = protocol.exit_status(exc)
        except BaseException:          # noqa: BLE001 - as python would: traceback, exit 1
            traceback.print_exc()
            code = 1
        finally:
            for stream in {id(out): out, id(err): err}.values():
                try:
                    stream.flush()
                except OSError:
                    pass
            for fd in set(fds[1:]):
                os.close(fd)
            self.report_end(request["id"], code)

    def serve(self) -> None:
        while True:
            try:
                request, fds = protocol.receive(self.control)
            except OSError:
                request = None
            if request is None:
                return
            if "signal" in request:
                # the thread runs on; the caller sees it ended, as after a kill
                self.report_end(request["signal"], -int(request["signum"]))
                continue
            threading.Thread(target=self.run, args=(request, fds), daemon=True,
                             name=f"worker-{request['id']}").start()


def main(argv: list) -> int:
    """python -m hosts.group FD: serve the launcher on the control socket FD."""
    control = socket.socket(fileno=int(argv[0]))
    group = Group(control)
    sys.stdout, sys.stderr = group.stdout, group.stderr
    # run_command makes SIGTERM unwind like Ctrl-C, which only the main thread may set up;
    # here the group's own default (SIGTERM ends the group) stays
    contracts.cli.interrupt_on_sigterm = lambda: None
    time.process_time = time.thread_time       # each report counts its own thread
    threading.stack_size(THREAD_STACK_BYTES)
    gc.collect()
    group.serve()
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    os._exit(code)                 # without waiting for threads left running after a signal
