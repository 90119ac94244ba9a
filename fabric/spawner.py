"""How the hosts' commands start: the spawner a topologies.net.Network is handed, as Mininet
is handed its node classes.  The network knows no command; this module knows the hosts
package's.

`HostsSpawner.spawn(node, args, **options)` takes `python -m hosts ...` commands:
- `worker` and `allreduce` (contracts/spawn.py GROUP_COMMANDS) run as threads of worker
  group processes (hosts/group.py), `worker_group_size` to a process: by default
  WORKERS_PER_GROUP from WORKER_GROUP_FROM_HOSTS hosts on, else never;
- with `fork_workers`, the others (and those when groups are off) are forked from a zygote
  that imported the hosts package once (topologies/zygote.py): their memory is shared until
  written.  Off unless asked for: compare at fattree:10 with 250 forked workers missed its
  start barrier, most likely because each waiting worker took one of the user's 128 inotify
  instances and the rest polled (hosts/barrier.py); worker groups share one.
Anything else, or a command with options neither takes, gets None: the network starts it as a
process of its own.  The network never calls a spawner in cluster mode.
"""
from __future__ import annotations

import subprocess
import sys
from typing import Optional

from contracts import spawn as protocol
from topologies.switches import REPO, python_executable
from topologies.zygote import Zygote

ZYGOTE_PRELOAD = ("hosts.__main__",)         # every `python -m hosts` command's modules
ZYGOTE_POPEN_OPTIONS = {"cwd", "stdin", "stdout", "stderr", "env"}
WORKER_GROUP_FROM_HOSTS = 64
WORKERS_PER_GROUP = 64


class WorkerGroup(Zygote):
    """A worker group process (hosts/group.py): `spawn` runs `python -m hosts worker|allreduce`
    as a thread of it, in the host's network namespace.  Same interface as Zygote; `pid` is
    the thread's id, and a signal ends the command for its caller at once (the thread itself
    runs on until its engine gives up, or until the group ends at close())."""

    def __init__(self, python: str = sys.executable, cwd: Optional[str] = None,
                 start_timeout_s: float = 60.0):
        super().__init__([], python=python, cwd=cwd, start_timeout_s=start_timeout_s)

    def _server_command(self, fd: int, modules: list) -> list:
        return [protocol.GROUP_MODULE, str(fd)]

    def signal(self, process, signum: int) -> None:
        with self._lock:
            try:
                self._socket.send(protocol.signal_request(process.request_id, signum))
            except OSError:
                pass


class HostsSpawner:
    """Starts the hosts package's commands in zygote children or worker group threads (see
    the module docstring); `close()` ends its zygote and groups (the network's stop)."""

    def __init__(self, hosts: int, fork_workers: bool = False,
                 worker_group_size: Optional[int] = None):
        """hosts: how many hosts the network has (the default group size depends on it);
        worker_group_size: None for the default, 0 for never."""
        self.fork_workers = bool(fork_workers)
        if worker_group_size is None:
            worker_group_size = WORKERS_PER_GROUP if hosts >= WORKER_GROUP_FROM_HOSTS else 0
        self.worker_group_size = worker_group_size
        self.zygote: Optional[Zygote] = None
        self.worker_groups: list = []

    def spawn(self, node, args: list, **options):
        """A Popen-like process for `args` on Mininet host `node`, or None when neither a
        group nor the zygote takes it."""
        if self._groupable(node, args, options):
            # the network namespace only: the host's mount namespace differs by its /sys
            return self._worker_group().spawn(f"/proc/{node.pid}/ns/net", None, args[2],
                                              args[3:], **options)
        if self._forkable(args, options):
            if self.zygote is None:
                self.zygote = Zygote(list(ZYGOTE_PRELOAD), python=python_executable(),
                                     cwd=REPO)
            return self.zygote.spawn(f"/proc/{node.pid}/ns/net", f"/proc/{node.pid}/ns/mnt",
                                     args[2], args[3:], **options)
        return None

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        for group in self.worker_groups:
            group.close()
        self.worker_groups.clear()

    def _groupable(self, node, args: list, options: dict) -> bool:
        """`python -m hosts worker|allreduce` without an environment of its own, on a host
        without private directories (a group thread keeps the group's mounts), with worker
        groups on."""
        return (self.worker_group_size > 0 and len(args) >= 4
                and args[3] in protocol.GROUP_COMMANDS and not options.get("env")
                and not getattr(node, "privateDirs", None)
                and self._forkable(args, options, when=True))

    def _worker_group(self) -> WorkerGroup:
        """A group with room for one more command (running commands count), or a new one."""
        for group in self.worker_groups:
            if group.running() < self.worker_group_size:
                return group
        group = WorkerGroup(python=python_executable(), cwd=REPO)
        self.worker_groups.append(group)
        return group

    def _forkable(self, args: list, options: dict, when: Optional[bool] = None) -> bool:
        """`python -m hosts ...` with options the zygote takes, when fork_workers is on."""
        return ((self.fork_workers if when is None else when) and len(args) >= 3
                and args[0] == python_executable()
                and args[1] == "-m" and args[2] == protocol.GROUP_PACKAGE
                and set(options) <= ZYGOTE_POPEN_OPTIONS
                and subprocess.PIPE not in (options.get(k) for k in ("stdin", "stdout",
                                                                      "stderr")))
