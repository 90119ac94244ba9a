"""Run a command in a private network namespace, so that its veths, switch interfaces
(s1-eth1, ...) and 127.0.0.1 gRPC ports never meet another network running on this machine.

`unshare --net --mount` gives the command its own network namespace and its own /sys (so that
/sys/class/net lists that namespace's interfaces); the loopback comes up first.  The command
runs in the background of a small shell that records its pid (for signals) and, once it has
ended, the interfaces left in the namespace (the teardown check) before the namespace -- and
everything in it -- disappears.
"""

import os
import shlex


def private_network_command(command: list, work_dir) -> list:
    """argv running `command` (stdin passed on) in a fresh network namespace; its pid goes
    to WORK_DIR/pid and the interfaces left after it ended to WORK_DIR/interfaces-after."""
    pid_file = os.path.join(str(work_dir), "pid")
    after_file = os.path.join(str(work_dir), "interfaces-after")
    script = (f"mount -t sysfs sysfs /sys && ip link set lo up || exit 97\n"
              f"exec 3<&0\n"
              f"{shlex.join(command)} <&3 &\n"
              f"echo $! > {shlex.quote(pid_file)}\n"
              f"wait $!\n"
              f"rc=$?\n"
              f"ls /sys/class/net > {shlex.quote(after_file)}\n"
              f"exit $rc\n")
    return ["unshare", "--net", "--mount", "sh", "-c", script]


def interfaces_after(work_dir) -> list:
    with open(os.path.join(str(work_dir), "interfaces-after")) as f:
        return sorted(f.read().split())


def command_pid(work_dir) -> int:
    with open(os.path.join(str(work_dir), "pid")) as f:
        return int(f.read())


def processes_mentioning(marker: str) -> list:
    """Pids of processes whose command line contains `marker` (e.g. a test's temporary
    directory, which the switch processes get as their pcap directory)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found
