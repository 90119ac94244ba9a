"""Start `python -m MODULE ...` processes in host namespaces by forking one that has imported
MODULE already (a zygote), so that a thousand of them share their interpreter's and their
libraries' memory instead of each having its own.

A worker is about 17 MB of private memory after its imports (numpy most of it): 17 GB for
1,024 workers, more than the machine has with the switches.  Forked from a zygote that
imported it and froze its objects (gc.freeze), a worker's pages stay shared until it writes
them.  Which commands go to a zygote is the spawner's business (fabric/spawner.py); this
module knows no command.

    zygote = Zygote(["json.tool"])          # python -m topologies.zygote FD json.tool
    process = zygote.spawn("/proc/PID/ns/net", "/proc/PID/ns/mnt", "json.tool", ["in.json"],
                           cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=STDOUT)
    process.wait(timeout=10); process.kill(); process.returncode

The zygote is a single-threaded process reading requests on a Unix socket, in the protocol
of contracts/spawn.py (the standard streams passed along with SCM_RIGHTS); for each it forks
a child that joins the network and mount namespaces of the host (setns: the namespaces of the
host's Mininet shell), changes directory, takes the streams and runs the module as `python -m`
would (runpy).  It reaps its children and reports their exit status (as subprocess does: -N
for signal N).  `ZygoteProcess` offers what callers use of subprocess.Popen (pid, poll, wait,
send_signal, terminate, kill, returncode); signals go straight to the child's pid.  Exits are
reported under the request's id, never the pid, which the kernel may have given to a newer
command by then.  The zygote ends when its socket closes.

The launcher side, `Zygote`, also serves other servers of the same protocol: a subclass names
the server's module (`_server_command`) and how a signal reaches a command (`signal`), as
fabric/spawner.py's WorkerGroup does for the worker groups.
"""

from __future__ import annotations

import gc
import importlib
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Optional

from contracts import spawn as protocol

# -- the zygote process ----------------------------------------------------------------------

def _child(request: dict, fds: list, control: socket.socket) -> None:
    """In the forked child: namespaces, directory, streams, then the module.  Never returns."""
    code = 1
    try:
        control.close()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        os.setsid()
        protocol.join_namespaces([(request[key], kind) for key, kind in
                                  (("mntns", protocol.CLONE_NEWNS),
                                   ("netns", protocol.CLONE_NEWNET)) if request.get(key)])
        os.chdir(request.get("cwd") or "/")
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        os.environ.update(request.get("env") or {})
        gc.unfreeze()
        sys.argv = [request["module"]] + list(request["args"])
        # run afresh as __main__ what was preloaded as a module (its imports stay loaded)
        name = request["module"]
        if not hasattr(sys.modules.get(name), "__path__"):
            sys.modules.pop(name, None)
        sys.modules.pop(name + ".__main__", None)
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = protocol.exit_status(e)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
    except BaseException:       # noqa: BLE001 - report it as python would, exit 1
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(control: socket.socket) -> None:
    """The zygote's loop: requests in, {"id", "pid"} and {"ended": id, "code"} lines out."""
    signal.signal(signal.SIGCHLD, lambda *_: None)     # wakes select below
    children = {}                     # pid -> the request id it was started for
    while True:
        try:
            readable, _, _ = select.select([control], [], [], 0.05)
        except InterruptedError:
            readable = []
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            request_id = children.pop(pid, None)
            if request_id is None:
                continue
            control.sendall(protocol.ended(request_id, os.waitstatus_to_exitcode(status)))
        if not readable:
            continue
        request, fds = protocol.receive(control)
        if request is None:
            return
        pid = os.fork()
        if pid == 0:
            _child(request, fds, control)
        for fd in fds:
            os.close(fd)
        children[pid] = request["id"]
        control.sendall(protocol.started(request["id"], pid))


def main(argv: list) -> int:
    """python -m topologies.zygote FD MODULE...: import the modules, then serve on FD."""
    control = socket.socket(fileno=int(argv[0]))
    for name in argv[1:]:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    serve(control)
    return 0


# -- this side -------------------------------------------------------------------------------

class ZygoteError(RuntimeError):
    """The zygote did not start or answer (one line)."""


class Zygote:
    """A zygote process that preloaded `modules`; `spawn` forks processes from it."""

    def __init__(self, modules: list, python: str = sys.executable,
                 cwd: Optional[str] = None, start_timeout_s: float = 60.0):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [python, "-m"] + self._server_command(theirs.fileno(), modules),
            pass_fds=(theirs.fileno(),), cwd=cwd, stdin=subprocess.DEVNULL)
        theirs.close()
        self._socket = ours
        self._lock = threading.Lock()
        self._answers: dict = {}          # request id -> pid
        # request id -> exit code.  Not by pid: the kernel reuses pids and thread ids
        # (pid_max can be 32768), so a new command can get the id of one that has ended.
        self._codes: dict = {}
        self._changed = threading.Condition()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True, name="zygote")
        self._reader.start()
        self._start_timeout_s = start_timeout_s

    def _server_command(self, fd: int, modules: list) -> list:
        return ["topologies.zygote", str(fd)] + list(modules)

    def signal(self, process: "ZygoteProcess", signum: int) -> None:
        """Send a signal to a process it started."""
        try:
            os.kill(process.pid, signum)
        except ProcessLookupError:
            pass

    def running(self) -> int:
        """Commands started and not yet reported ended."""
        with self._changed:
            return self._started - len(self._codes)

    def _read(self) -> None:
        while True:
            try:
                data = self._socket.recv(65536)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self._closed = True
                    self._changed.notify_all()
                    return
                for answer in protocol.answers(data):
                    if "ended" in answer:
                        self._codes[answer["ended"]] = answer["code"]
                    else:
                        self._answers[answer["id"]] = answer["pid"]
                self._changed.notify_all()

    _closed = False
    _started = 0

    def spawn(self, netns: Optional[str], mntns: Optional[str], module: str, args: list,
              cwd: Optional[str] = None, stdin=None, stdout=None, stderr=None,
              env: Optional[dict] = None) -> "ZygoteProcess":
        """Fork `python -m module args` in those namespaces.  stdin/stdout/stderr: file
        objects, file descriptors, subprocess.DEVNULL, or (stderr) subprocess.STDOUT."""
        opened = []

        def fd_of(stream, mode):
            if stream is None or stream == subprocess.DEVNULL:
                fd = os.open(os.devnull, mode)
                opened.append(fd)
                return fd
            return stream if isinstance(stream, int) else stream.fileno()

        fds = [fd_of(stdin, os.O_RDONLY), fd_of(stdout, os.O_WRONLY)]
        fds.append(fds[1] if stderr == subprocess.STDOUT else fd_of(stderr, os.O_WRONLY))
        try:
            with self._lock:
                self._next_id += 1
                request_id = self._next_id
                message = protocol.request(request_id, netns, mntns, module, args, cwd, env)
                socket.send_fds(self._socket, [message], fds)
        finally:
            for fd in opened:
                os.close(fd)
        deadline = time.monotonic() + self._start_timeout_s
        with self._changed:
            while request_id not in self._answers:
                if self._closed or time.monotonic() > deadline:
                    raise ZygoteError(f"the zygote did not start {module} "
                                      f"({'it exited' if self._closed else 'no answer'})")
                self._changed.wait(0.5)
            self._started += 1
            return ZygoteProcess(self, self._answers.pop(request_id), request_id)

    def exit_code(self, request_id: int, timeout: Optional[float]) -> Optional[int]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while request_id not in self._codes:
                if self._closed:
                    return self._codes.get(request_id)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._changed.wait(0.5 if remaining is None else min(0.5, remaining))
            return self._codes[request_id]

    def close(self) -> None:
        """End the zygote (its children are ended by their callers)."""
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._socket.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class ZygoteProcess:
    """What callers use of subprocess.Popen, for a process the zygote forked."""

    def __init__(self, zygote: Zygote, pid: int, request_id: int):
        self._zygote = zygote
        self.pid = pid
        self.request_id = request_id      # what its exit is reported under
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.request_id, 0)
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.request_id, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            self._zygote.signal(self, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
