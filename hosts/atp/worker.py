"""`python -m hosts atp`: one rank of an ATP allreduce, and with --serve (rank 0, on its
host) the job's parameter server (contracts/designs/atp.py).

The worker's fragments leave one UDP socket bound to 0.0.0.0:20000+job for the switches'
service address (10.0.255.254, 9300) with ECN-capable transport set (ECT(0)), so a link
queue that marks instead of dropping marks them; acknowledgements come back to the same
socket from that address, anything else is ignored.  The server has its own
socket at 24000+job, where the switches route what they pass on, and answers to the
service address; it runs in a thread of this process from before the start barrier until
every rank has left it (at most as long as a rank may still resend), or without a barrier
until nothing came for twice the longest timeout, so that a worker that lost an
acknowledgement gets it again.  The report is the in-network
worker's (hosts/ina/worker.py), with the window's cuts and marks, and on the serving rank
the server's counts ("server").
"""

from __future__ import annotations

import dataclasses
import select
import socket
import threading
import time

import numpy as np

from contracts.jobs import AtpWorker
from contracts.requests import k_refusal
from contracts.wire import (ATP_MAX_MEMBERS, ATP_UDP_PORT, atp_server_port,
                            worker_port)
from hosts import barrier, cli, vectors
from hosts.atp.engine import AtpConfig, AtpEngine, AtpStalled
from hosts.atp.server import ParameterServer
from hosts.ina.worker import ProgressPrinter

RECEIVE_BUFFER_BYTES = 4 << 20
ECT0 = 0x02                        # IPv4 ECN field: ECN-capable transport (0)


def open_socket(bind: str, port: int, label: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ECT0)
    try:
        sock.bind((bind, port))
    except OSError as exc:
        sock.close()
        raise cli.RunFailed(f"cannot bind UDP {bind}:{port} ({label}): {exc.strerror}") from None
    return sock


class ServerThread(threading.Thread):
    """The parameter server on its socket until `stop()`, or once `lingering` is set, until
    nothing came for `linger_s`."""

    def __init__(self, server: ParameterServer, sock: socket.socket, switch_ip: str,
                 linger_s: float):
        super().__init__(daemon=True, name="atp-server")
        self.server, self.sock, self.switch = server, sock, (switch_ip, ATP_UDP_PORT)
        self.stopping = threading.Event()
        self.lingering, self.linger_s = False, linger_s
        self.error = None

    def run(self):
        quiet_since = time.monotonic()
        try:
            while not self.stopping.is_set():
                ready, _, _ = select.select([self.sock], [], [], 0.1)
                if not ready:
                    if self.lingering and time.monotonic() - quiet_since > self.linger_s:
                        return
                    continue
                quiet_since = time.monotonic()
                data = self.sock.recv(65535)
                for ack in self.server.on_packet(data):
                    self.sock.sendto(ack, self.switch)
        except OSError as exc:
            self.error = f"parameter server: {exc.strerror}"

    def stop(self):
        self.stopping.set()
        self.join()
        self.sock.close()


def run_worker(engine: AtpEngine, sock: socket.socket, switch_ip: str, on_progress) -> dict:
    """Moves the engine's packets until it is done; returns the receive counts."""
    counts = {"packets_received": 0, "bytes_received": 0, "packets_foreign": 0}
    destination = (switch_ip, ATP_UDP_PORT)

    def send(payloads):
        for payload in payloads:
            sock.sendto(payload, destination)

    send(engine.start(time.monotonic()))
    while not engine.done:
        deadline = engine.next_deadline()
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([sock], [], [], wait)
        if ready:
            data, source = sock.recvfrom(65535)
            if source != destination:
                counts["packets_foreign"] += 1
            else:
                counts["packets_received"] += 1
                counts["bytes_received"] += len(data)
                send(engine.on_packet(data, time.monotonic()))
        send(engine.on_timer(time.monotonic()))
        on_progress(engine)
    return counts


def rack_sizes(text: str) -> tuple:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or any(not 1 <= s <= ATP_MAX_MEMBERS for s in sizes) \
            or len(sizes) > ATP_MAX_MEMBERS:
        raise cli.UsageError(f"--racks {text}: workers per rack, comma-separated, each "
                             f"1..{ATP_MAX_MEMBERS}, at most {ATP_MAX_MEMBERS} racks")
    return sizes


def main(argv: list[str]) -> int:
    args = AtpWorker.from_argv(argv)
    cli.check_rank(args.rank, args.world)
    racks = rack_sizes(args.racks)
    if sum(racks) != args.world:
        raise cli.UsageError(f"--racks {args.racks} holds {sum(racks)} workers, not --world "
                             f"{args.world}")
    if args.rack >= len(racks) or args.index >= racks[args.rack]:
        raise cli.UsageError(f"--rack {args.rack} --index {args.index} is not a worker of "
                             f"--racks {args.racks}")
    refusal = k_refusal(args.k)
    if refusal:
        raise cli.UsageError(refusal)
    if worker_port(args.job) > 65535 or atp_server_port(args.job) > 65535:
        raise cli.UsageError(f"--job {args.job} is too large for the ports 20000+job and "
                             "24000+job")
    data = cli.load_vector(args, np.dtype(np.int32))
    engine = AtpEngine(data, args.k, AtpConfig(
        job_id=args.job, index=args.index, rack=args.rack, aggregators=args.aggregators,
        window=args.window, timeout_s=args.timeout_ms / 1000,
        max_timeout_s=max(args.max_timeout_ms, args.timeout_ms) / 1000,
        max_retries=args.max_retries))
    label = f"job {args.job} rank {args.rank}"
    # How long another rank may still resend after this one is done: every resend of one
    # fragment at the longest timeout.  The server answers until then.
    resending_s = max(args.max_timeout_ms, args.timeout_ms) / 1000 * (args.max_retries + 1)
    server = None
    if args.serve:
        server = ServerThread(ParameterServer(args.job, racks, args.k),
                              open_socket(args.bind, atp_server_port(args.job), "server"),
                              args.switch_ip, linger_s=2 * max(args.max_timeout_ms,
                                                               args.timeout_ms) / 1000)
        server.start()
    sock = open_socket(args.bind, worker_port(args.job), "worker")
    failure, counts = None, {}
    try:
        started = barrier.wait_for_start(args)
        cpu_started = time.process_time()
        counts = run_worker(engine, sock, args.switch_ip, ProgressPrinter(label))
    except AtpStalled as exc:
        failure = str(exc)
    finally:
        sock.close()
        seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu_started
        barrier.wait_for_others(args, resending_s if server is not None
                                else barrier.DEPART_WAIT_S)
        if server is not None:
            if args.start_barrier:
                server.stop()
            else:
                server.lingering = True
                server.join()
                server.sock.close()
    if server is not None and server.error and not failure:
        failure = server.error
    verification = None
    if not failure and args.seed is not None:
        reference = vectors.collective_reference("allreduce", args.seed, args.rank,
                                                 args.world, args.elements, np.int32)
        verification = vectors.verify(engine.result(), reference, 0)
    report = build_report(args, engine, counts, seconds, verification, failure, server)
    report["cpu_seconds"] = cpu_seconds
    cli.write_json(args.json, report)
    if failure:
        raise cli.RunFailed(failure)
    if args.output:
        cli.save_output(args.output, engine.result())
    if engine.stats.overflow:
        raise cli.RunFailed(f"{label}: a sum does not fit int32 (the server's overflow bit)")
    cli.check_verified(label, verification)
    return 0


def build_report(args, engine, counts, seconds, verification, failure, server) -> dict:
    s = engine.stats
    report = {
        "job": args.job, "rank": args.rank, "world": args.world, "elements": args.elements,
        "dtype": args.dtype, "k": args.k, "window": args.window, "collective": "allreduce",
        "contributor": args.index, "rack": args.rack, "seconds": seconds, "engine": "python",
        "design": AtpWorker.DESIGN,
        "packets_sent": s.packets_sent, "bytes_sent": s.bytes_sent,
        "packets_received": counts.get("packets_received", 0),
        "bytes_received": counts.get("bytes_received", 0),
        "packets_foreign": counts.get("packets_foreign", 0),
        "retransmissions": s.retransmissions, "redone_rounds": 0,
        "packets_ignored": s.packets_ignored, "ecn_marks": s.ecn_marks,
        "window_cuts": s.window_cuts, "smallest_window": s.smallest_window,
        "correct": None if verification is None else verification.correct,
        "max_abs_err": None if verification is None else verification.max_abs_err,
        "overflow": s.overflow, "quantization": "int32", "error_bound": None,
        "error": failure}
    if server is not None:
        report["server"] = dataclasses.asdict(server.server.stats)
    return report
