"""`python -m hosts worker`: one rank of an in-network allreduce over UDP, or of the other
collectives of contracts.jobs.COLLECTIVES (`--collective NAME`, hosts/ina/ina_collectives.py:
header flags per round, same protocol; the rooted collectives' root is rank 0, as the host
algorithms').

The protocol itself lives in hosts/ina/engine.py; this module only gets the input vector,
moves the engine's packets over a UDP socket bound to 0.0.0.0:20000+job (results come
back there), sends contributions to (switch_ip, 9100), verifies the result and writes
the JSON report.  `--bind` and `--switch-port` exist for loopback tests, where several
workers share one host and a test double plays the switch.  Packet and byte counts in the
report are UDP payloads (aggregation header + K values), retransmissions included.

By default the engine is the C twin of hosts/ina/engine.py (hosts/ina/engine_native.py), which runs
this module's whole loop in C; the report's "engine" says which one ran.  With the Python
engine, datagrams still move in batches: every waiting result is read with one recvmmsg and
the replies leave with one sendmmsg (hosts/ina/fastio.py, a small C helper built on first use);
without a C compiler, or with HOSTS_FASTIO=0, the Python engine and one recvfrom/sendto per
packet.
"""

from __future__ import annotations

import select
import socket
import sys
import time
from dataclasses import dataclass

import numpy as np

from contracts import collectives, designs
from contracts.jobs import InaWorker
from contracts.requests import k_refusal, window_refusal
from contracts.wire import MAX_CONTRIBUTORS, packet_size, worker_port
from hosts import barrier, cli, vectors
from contracts.collectives.base import ROOT
from hosts.ina import engine_native, fastio, ina_collectives
from hosts.ina.engine import AggregationEngine, AggregationStalled, EngineConfig, make_schedule
from hosts.ina.protocol import ProtocolError

RECEIVE_BUFFER_BYTES = 4 << 20
RECEIVE_SIZE = 65535            # any datagram whole: the engine ignores malformed ones
DRAIN_BATCH = 256               # datagrams handled before timers and progress are checked
PROGRESS_INTERVAL_S = 2.0


def build_parser() -> cli.OneLineParser:
    """The options are contracts.jobs.InaWorker's fields: the launchers write this command
    line from the same spec."""
    return InaWorker.parser()


@dataclass
class UdpStats:
    packets_received: int = 0
    bytes_received: int = 0
    packets_foreign: int = 0        # datagrams not from the switch's address: ignored


class UdpTransport:
    """Moves an engine's packets over one UDP socket until the engine is done."""

    def __init__(self, bind_ip: str, port: int, switch_addr: tuple[str, int],
                 batch_io: bool = True):
        """`batch_io`: move datagrams with recvmmsg/sendmmsg (hosts/ina/fastio.py) when its C
        helper is available; otherwise, or when False, one recvfrom/sendto per packet."""
        try:    # as recvfrom reports it, so that results can be told from foreign datagrams
            self.switch_addr = (socket.gethostbyname(switch_addr[0]), switch_addr[1])
        except OSError:
            raise cli.UsageError(f"--switch-ip {switch_addr[0]}: not an address") from None
        self._switch_key = (fastio.ipv4_key(self.switch_addr[0]), self.switch_addr[1])
        self.stats = UdpStats()
        self.batch_lib = fastio.load() if batch_io else None
        if batch_io and self.batch_lib is None:
            cli.announce_fallback("batch I/O (hosts/ina/fastio.c)", fastio.unavailable_reason(),
                                  "one recvfrom/sendto per packet")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
        try:
            self.sock.bind((bind_ip, port))
        except OSError as exc:
            self.sock.close()
            raise cli.RunFailed(f"cannot bind UDP {bind_ip}:{port}: {exc.strerror}") from None

    def close(self) -> None:
        self.sock.close()

    def run(self, engine, on_progress=None) -> None:
        """Until the engine is done: answer every waiting result at once, send what is due,
        and sleep in select() only when the socket is empty, until data or the next
        deadline (so a busy worker makes one receive and one send call per batch, or per
        packet without batch I/O).  The C engine runs this same loop in C."""
        if isinstance(engine, engine_native.NativeEngine):
            self._run_native(engine, on_progress)
            return
        if self.batch_lib is not None:
            batch = fastio.BatchSocket(self.batch_lib, self.sock,
                                       _slot_size(engine.schedule.k), DRAIN_BATCH)
            drain, send = (lambda: self._drain_batch(engine, batch),
                           lambda payloads: self._send_batch(batch, payloads))
        else:
            drain, send = (lambda: self._drain(engine)), self._send
        send(engine.start(time.monotonic()))
        while not engine.done:
            drained = drain()
            deadline = engine.next_deadline()
            if deadline is not None and deadline <= time.monotonic():
                send(engine.on_timer(time.monotonic()))
                deadline = engine.next_deadline()
            if on_progress:
                on_progress(engine)
            if drained and not engine.done:
                wait = max(0.0, deadline - time.monotonic()) if deadline is not None else None
                select.select([self.sock], [], [], wait)

    def _send_failed(self, exc: OSError) -> cli.RunFailed:
        return cli.RunFailed(f"cannot send to {self.switch_addr[0]}:{self.switch_addr[1]}: "
                             f"{exc.strerror}")

    def _receive_failed(self, exc: OSError) -> cli.RunFailed:
        return cli.RunFailed(f"cannot receive on UDP port {self.sock.getsockname()[1]}: "
                             f"{exc.strerror}")

    def _run_native(self, engine: engine_native.NativeEngine, on_progress) -> None:
        """The loop of `run` in C, back in Python every PROGRESS_INTERVAL_S for on_progress."""
        slot_size, start = _slot_size(engine.schedule.k), True
        try:
            while not engine.run_socket(self.sock.fileno(), *self._switch_key, DRAIN_BATCH,
                                        slot_size, PROGRESS_INTERVAL_S, start):
                start = False
                if on_progress:
                    on_progress(engine)
        except OSError as exc:
            raise (self._send_failed(exc) if exc.sending else self._receive_failed(exc)) from None
        finally:            # the engine counted what this transport saw: added, as _drain does
            counts, stats = engine.counters(), self.stats
            stats.packets_received += counts["packets_received"]
            stats.bytes_received += counts["bytes_received"]
            stats.packets_foreign += counts["packets_foreign"]

    def _drain_batch(self, engine: AggregationEngine, batch: fastio.BatchSocket) -> bool:
        """_drain with one recvmmsg for the datagrams and one sendmmsg for the replies."""
        try:
            lengths, addresses, ports = batch.receive()
        except OSError as exc:
            raise self._receive_failed(exc) from None
        switch_ip, switch_port = self._switch_key
        stats, slot, received, replies = self.stats, batch.slot_size, batch.received, []
        for i, length in enumerate(lengths):
            if addresses[i] != switch_ip or ports[i] != switch_port:
                stats.packets_foreign += 1       # as in _drain
                continue
            stats.packets_received += 1
            stats.bytes_received += length
            start = i * slot
            answer = engine.on_packet(received[start:start + min(length, slot)],
                                      time.monotonic())
            if answer:
                replies += answer
        if replies:
            self._send_batch(batch, replies)
        return len(lengths) < batch.batch

    def _send_batch(self, batch: fastio.BatchSocket, payloads: list[bytes]) -> None:
        if not payloads:
            return
        try:
            batch.send(payloads, *self._switch_key)
        except OSError as exc:
            raise self._send_failed(exc) from None

    def _drain(self, engine: AggregationEngine) -> bool:
        """Handle up to DRAIN_BATCH waiting datagrams; True when the socket ran empty."""
        recvfrom, switch_addr, stats = self.sock.recvfrom, self.switch_addr, self.stats
        for _ in range(DRAIN_BATCH):
            try:
                data, source = recvfrom(RECEIVE_SIZE, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return True
            if source != switch_addr:
                # Results come from the switch's service address and port only; anything
                # else reaching the job's port is another host's doing.
                stats.packets_foreign += 1
                continue
            stats.packets_received += 1
            stats.bytes_received += len(data)
            replies = engine.on_packet(data, time.monotonic())
            if replies:
                self._send(replies)
        return False

    def _send(self, payloads: list[bytes]) -> None:
        sendto, switch_addr = self.sock.sendto, self.switch_addr
        for payload in payloads:
            try:
                sendto(payload, switch_addr)
            except OSError as exc:
                raise self._send_failed(exc) from None


def _slot_size(k: int) -> int:
    """Bytes per datagram in the batch buffers: an aggregation packet and one byte more, so
    a longer datagram is seen cut and the engine ignores it (as it ignores it whole)."""
    return max(2048, -(-(packet_size(k) + 1) // 64) * 64)


class ProgressPrinter:
    """A line on stderr every few seconds, so long runs show they are alive."""

    def __init__(self, label: str):
        self.label = label
        self.next_time = time.monotonic() + PROGRESS_INTERVAL_S

    def __call__(self, engine: AggregationEngine) -> None:
        now = time.monotonic()
        if now < self.next_time:
            return
        self.next_time = now + PROGRESS_INTERVAL_S
        done, total = engine.progress
        print(f"{self.label}: {done}/{total} rounds ({100 * done // max(total, 1)}%), "
              f"{engine.stats.retransmissions} retransmissions", file=sys.stderr, flush=True)


def engine_config(args, shard_chunks: tuple = ()) -> EngineConfig:
    contributor = args.rank if args.contributor is None else args.contributor
    if contributor >= MAX_CONTRIBUTORS:
        raise cli.UsageError(f"--contributor {contributor} must be below {MAX_CONTRIBUTORS} "
                             "(pass --contributor when --rank is not the switch's index)")
    if worker_port(args.job) > 65535:
        raise cli.UsageError(f"--job {args.job} is too large: the worker port 20000+job "
                             "must be at most 65535")
    refusal = window_refusal(args.window) or k_refusal(args.k)
    if refusal:
        raise cli.UsageError(refusal)
    return EngineConfig(job_id=args.job, contributor=contributor, window=args.window,
                        timeout_s=args.timeout_ms / 1000,
                        max_timeout_s=max(args.max_timeout_ms, args.timeout_ms) / 1000,
                        max_retries=args.max_retries,
                        collective=args.collective, rank=args.rank,
                        root=ROOT, shard_chunks=shard_chunks,
                        # the previous round re-sent only to a design whose switches take it
                        redo_previous=designs.get(args.DESIGN).survives_restart)


def collective_result(args, dtype, engine: AggregationEngine) -> np.ndarray:
    """This rank's result of the collective (the part of it the rank holds)."""
    return ina_collectives.collective_result(args.collective,
                                             engine.result(), args.rank, args.world,
                                             args.elements, args.k, dtype, ROOT)


def error_bound(args, dtype, engine: AggregationEngine) -> np.ndarray | float:
    """Per result element: how far a float32 sum may be from the exact one (0 for copies)."""
    if dtype == np.int32 or not collectives.get(args.collective).sums:
        return 0
    return ina_collectives.collective_part(args.collective, engine.schedule.error_bound(),
                                           args.rank, args.world, args.elements, args.k, ROOT)


def verify_result(args, dtype, engine: AggregationEngine) -> vectors.Verification | None:
    """This rank's result against vectors.collective_reference (shared with the host
    algorithms): exact for int32 and for float32 copies, within the block floating point
    bound for float32 sums."""
    if args.seed is None:
        return None
    reference = vectors.collective_reference(args.collective,
                                             args.seed, args.rank, args.world, args.elements,
                                             dtype)
    return vectors.verify(collective_result(args, dtype, engine), reference,
                          error_bound(args, dtype, engine))


def main(argv: list[str], spec=InaWorker) -> int:
    """One rank; `spec`: the command's worker spec (InaWorker, or SwitchMLWorker: the same
    engine towards another design's switches)."""
    args = spec.from_argv(argv)
    cli.check_rank(args.rank, args.world)
    dtype = vectors.DTYPES[args.dtype]
    data = cli.load_vector(args, dtype)
    data, shard_chunks = ina_collectives.engine_input(args.collective, data, args.world, args.k)
    config = engine_config(args, shard_chunks)
    try:
        schedule = make_schedule(data, args.k, args.world, args.window)
    except ValueError as exc:          # e.g. NaN or infinity in a float32 input
        raise cli.UsageError(f"input cannot be aggregated: {exc}") from None
    engine = engine_native.make_engine(schedule, config)
    label = f"job {args.job} rank {args.rank}"
    transport = UdpTransport(args.bind, worker_port(args.job), (args.switch_ip, args.switch_port))
    failure = None
    try:
        started = barrier.wait_for_start(args)      # the common start instant, or go's wake
        cpu_started = time.process_time()
        transport.run(engine, ProgressPrinter(label))
    except (AggregationStalled, ProtocolError) as exc:
        failure = str(exc)
    finally:
        transport.close()
    seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu_started
    barrier.wait_for_others(args)
    verification = None if failure else verify_result(args, dtype, engine)
    report = build_report(args, engine, transport.stats, seconds, verification, failure)
    report["design"] = spec.DESIGN
    report["cpu_seconds"] = cpu_seconds         # this process's, over the timed part
    cli.write_json(args.json, report)
    if failure:
        raise cli.RunFailed(failure)
    if args.output:
        cli.save_output(args.output, collective_result(args, dtype, engine))
    if engine.stats.overflow:
        raise cli.RunFailed(f"{label}: the switch saturated a sum (overflow flag set)")
    cli.check_verified(label, verification)
    return 0


def build_report(args, engine, transport_stats, seconds, verification, failure) -> dict:
    bound = None
    if args.dtype == "float32" and engine.done:
        bound = float(np.max(error_bound(args, np.dtype(np.float32), engine), initial=0))
    return {
        "job": args.job, "rank": args.rank, "world": args.world, "elements": args.elements,
        "dtype": args.dtype, "k": args.k, "window": args.window,
        "collective": args.collective,
        "contributor": engine.config.contributor, "seconds": seconds,
        "engine": "c" if isinstance(engine, engine_native.NativeEngine) else "python",
        "packets_sent": engine.stats.packets_sent,
        "packets_received": transport_stats.packets_received,
        "bytes_sent": engine.stats.bytes_sent, "bytes_received": transport_stats.bytes_received,
        "retransmissions": engine.stats.retransmissions,
        "redone_rounds": engine.stats.redone_rounds,
        "packets_ignored": engine.stats.packets_ignored,
        "packets_foreign": transport_stats.packets_foreign,
        "correct": None if verification is None else verification.correct,
        "max_abs_err": None if verification is None else verification.max_abs_err,
        "overflow": engine.stats.overflow,
        "quantization": engine.schedule.description,
        "error_bound": bound,
        "error": failure,
    }
