"""A TEST DOUBLE of the zygote's server side (run as `python -m reused_pid_zygote FD`): it
answers every request with the same pid 4242, as the kernel may once it has reused a pid
or a thread id, and reports a command ended at once when its first argument is "end"
(the others never end).  tests/topologies/test_zygote.py drives it."""

import json
import os
import socket
import sys


def main(fd: int) -> None:
    control = socket.socket(fileno=fd)
    while True:
        message, fds, _, _ = socket.recv_fds(control, 65536, 3)
        for descriptor in fds:
            os.close(descriptor)
        if not message:
            return
        request = json.loads(message)
        if "signal" in request:
            continue
        control.sendall(json.dumps({"id": request["id"], "pid": 4242}).encode() + b"\n")
        if request["args"][:1] == ["end"]:
            control.sendall(json.dumps({"ended": request["id"], "code": 3}).encode() + b"\n")


if __name__ == "__main__":
    main(int(sys.argv[1]))
