"""`python -m p4switch group`: several switch devices in one process.

    group RUN-ARGS [--- RUN-ARGS ...]

Each RUN-ARGS is a `p4switch run` command line (run.py: its ports, device id, P4Runtime
address, program or --no-p4, logs, pcaps, impairments): every member is the same Device with
its own P4Runtime server, datapath, ports and receive loop (one thread each) as it would be in
a process of its own.  What the members share is the interpreter: Python, gRPC and protobuf
(about 45 MB a process) once for all of them, and the Program of a device config that several
members are given (pipeline_config.load_program keeps the last one loaded), which a
fattree:16 (320 switches) could not afford once per switch.  With the C back end the frames
never take the interpreter's lock, so the members do not slow each other down; with the Python
back end, pcaps, traces or impairments they would all share one lock: run those as separate
processes.

Start-up errors end the process (exit 2 for a bad command line, 1 for a port or address it
cannot open) with one line naming the member's device id.  Runs until SIGTERM or SIGINT, then
stops every member (their gRPC servers in parallel) and exits 0.
"""
import sys
import threading

from contracts.cli import UsageError

from . import run
from .p4runtime_server import P4RuntimeService, serve
from .stopflag import StopFlag

SEPARATOR = "---"
STOP_GRACE_S = 0.5


def split_members(argv: list) -> list:
    """The members' command lines: argv cut at every SEPARATOR (empty parts refused)."""
    members, current = [], []
    for arg in argv + [SEPARATOR]:
        if arg == SEPARATOR:
            if not current:
                raise UsageError(f"an empty member (nothing between two {SEPARATOR!r}, or "
                                 "at an end)")
            members.append(current)
            current = []
        else:
            current.append(arg)
    return members


def parse_members(argv: list) -> list:
    """Every member's parsed `run` arguments; device ids and gRPC addresses must differ."""
    parsed = []
    for member in split_members(argv):
        try:
            parsed.append(run.parse_args(member))
        except UsageError as e:
            raise UsageError(f"member {len(parsed) + 1}: {e}") from None
    for key, what in ((lambda a: a.device_id, "device id"),
                      (lambda a: a.grpc_server_addr, "gRPC address")):
        seen = set()
        for args in parsed:
            if key(args) in seen:
                raise UsageError(f"two members have {what} {key(args)}")
            seen.add(key(args))
    return parsed


class Member:
    """One switch of the group: its Device, P4Runtime server and receive-loop thread."""

    def __init__(self, args, stopping: StopFlag):
        self.args = args
        self.log_stream = run._open_log(args)
        program = run.load_program(args) if args.program else None
        self.device = run.Device(args, self.log_stream, stopping)
        self.service = P4RuntimeService(args.device_id, self.device.datapath)
        if program is not None:
            self.service.start_with(program)
        try:
            self.server = serve(self.service, args.grpc_server_addr)
        except OSError:
            self.device.close()
            raise
        self.thread = threading.Thread(target=self.device.receive_loop, daemon=True,
                                       name=f"ports-{args.device_id}")

    def close(self) -> None:
        self.device.stop_impairments()
        self.device.close()
        if self.log_stream is not None and self.log_stream is not sys.stdout:
            self.log_stream.close()


def serve_group(parsed: list) -> int:
    stopping = StopFlag().set_on_signals()
    members = []
    try:
        for args in parsed:
            try:
                members.append(Member(args, stopping))
            except OSError as e:
                print(f"p4switch group: device {args.device_id}: {e}", file=sys.stderr,
                      flush=True)
                return 1
            except UsageError as e:
                print(f"p4switch group: device {args.device_id}: {e}", file=sys.stderr,
                      flush=True)
                return 2
        for member in members:
            member.thread.start()
        print(f"p4switch group: {len(members)} switches up (device ids "
              f"{', '.join(str(m.args.device_id) for m in members)})", flush=True)
        while not stopping.wait(0.5):
            pass
        return 0
    finally:
        stopping.set()
        stopped = [m.server.stop(grace=STOP_GRACE_S) for m in members]
        for event in stopped:
            event.wait()
        for member in members:
            if member.thread.is_alive():
                member.thread.join()
            member.close()


def main(argv: list) -> int:
    try:
        parsed = parse_members(argv)
    except UsageError as e:
        print(f"p4switch group: {e}", file=sys.stderr)
        return 2
    return serve_group(parsed)
