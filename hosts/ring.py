"""`python -m hosts ring`: the host-only baseline, ring allreduce over TCP.

The vector is cut into `world` segments.  Reduce-scatter: in step s (0..N-2) rank r sends
segment r-s to its right neighbour and adds segment r-s-1 from its left neighbour into its
own copy; afterwards rank r holds the full sum of segment r+1.  All-gather: in step s rank r
sends segment r+1-s and stores segment r-s as received.  Segments travel in chunks of
--chunk-bytes, and a sender thread runs alongside the receiving main thread: chunk i of a
step is forwarded as soon as chunk i of the previous step has arrived, so sending right and
receiving left overlap (pipelined, as NCCL and Gloo do).  float32 sums are done in float32 in
ring order; int32 sums are exact (wrap-around is reported as `overflow`).  Byte counts are
TCP payload bytes; "packets" are chunks; "retransmissions" are the segments the kernel
retransmitted on the connection to the right neighbour (TCP_INFO).
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from dataclasses import dataclass

import numpy as np

from hosts import cli, vectors
from hosts.quantize import FLOAT32_UNIT_ROUNDOFF

DEFAULT_CHUNK_BYTES = 1 << 16
CONNECT_TIMEOUT_S = 30.0
_RANK_HELLO = struct.Struct("!I")


def build_parser() -> cli.OneLineParser:
    parser = cli.OneLineParser(prog="python -m hosts ring",
                               description="Ring allreduce over TCP (host-only baseline).")
    add_arguments(parser)
    return parser


def add_arguments(parser) -> None:
    parser.add_argument("--rank", type=cli.non_negative_int, required=True)
    parser.add_argument("--world", type=cli.positive_int, required=True)
    parser.add_argument("--peers", required=True,
                        help="file of host:port lines, or a comma-separated list; rank r "
                             "listens on entry r")
    cli.add_vector_arguments(parser, vectors.DTYPES)
    parser.add_argument("--chunk-bytes", type=cli.positive_int, default=DEFAULT_CHUNK_BYTES)
    parser.add_argument("--timeout-s", type=cli.positive_float, default=CONNECT_TIMEOUT_S,
                        help="how long to wait for a peer to connect or to send data")


def parse_peers(text: str, world: int) -> list[tuple[str, int]]:
    """host:port per rank, from a file (one per line, '#' comments) or a comma list."""
    if os.path.isfile(text):
        with open(text) as handle:
            entries = [line.split("#", 1)[0].strip() for line in handle]
    else:
        entries = text.split(",")
    entries = [entry.strip() for entry in entries if entry.strip()]
    if len(entries) != world:
        raise cli.UsageError(f"--peers lists {len(entries)} entries, --world is {world}")
    return [_parse_address(entry) for entry in entries]


def _parse_address(entry: str) -> tuple[str, int]:
    host, sep, port = entry.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise cli.UsageError(f"peer entry {entry!r} is not host:port")
    return host, int(port)


@dataclass(frozen=True)
class RingPlan:
    """Rank r's transfers in order.

    sends[j] = (elements, prerequisite): the elements to send right, and the index in
    `receives` that must have arrived first (-1 for none).  receives[j] = (elements,
    reduce): the elements arriving from the left, added (reduce-scatter) or stored
    (all-gather).
    """

    sends: list[tuple[slice, int]]
    receives: list[tuple[slice, bool]]


def ring_plan(rank: int, world: int, elements: int, chunk_elements: int) -> RingPlan:
    """Steps 0..2N-3; the segment sent in step t is the one received in step t-1, chunked
    the same way, so chunk i of step t waits only for chunk i of step t-1."""
    bounds = np.linspace(0, elements, world + 1).astype(np.int64)

    def chunks(segment: int) -> list[slice]:
        start, stop = int(bounds[segment % world]), int(bounds[segment % world + 1])
        return [slice(lo, min(lo + chunk_elements, stop))
                for lo in range(start, stop, chunk_elements)]

    sends: list[tuple[slice, int]] = []
    receives: list[tuple[slice, bool]] = []
    previous_receive_start = None
    for step in range(2 * (world - 1)):
        reducing = step < world - 1
        s = step if reducing else step - (world - 1)
        send_segment = rank - s if reducing else rank + 1 - s
        receive_segment = rank - s - 1 if reducing else rank - s
        for i, part in enumerate(chunks(send_segment)):
            sends.append((part, -1 if previous_receive_start is None else previous_receive_start + i))
        previous_receive_start = len(receives)
        receives.extend((part, reducing) for part in chunks(receive_segment))
    return RingPlan(sends, receives)


class _ReceiveProgress:
    """How many receives have completed; the sender waits on it."""

    def __init__(self):
        self._done = 0
        self._aborted = False
        self._condition = threading.Condition()

    def advance(self) -> None:
        with self._condition:
            self._done += 1
            self._condition.notify_all()

    def abort(self) -> None:
        with self._condition:
            self._aborted = True
            self._condition.notify_all()

    def wait_for(self, index: int) -> bool:
        """Block until receive `index` is done; False if the run was aborted."""
        with self._condition:
            self._condition.wait_for(lambda: self._done > index or self._aborted)
            return not self._aborted


@dataclass
class RingStats:
    chunks_sent: int = 0
    chunks_received: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    overflow: bool = False
    tcp_retransmissions: int = 0


# struct tcp_info (linux/tcp.h): u32 tcpi_total_retrans at byte offset 100.
_TCP_INFO_TOTAL_RETRANS = struct.Struct("=100xI")


def tcp_retransmissions(sock: socket.socket) -> int:
    """Segments the kernel retransmitted on this connection so far (Linux TCP_INFO)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_TOTAL_RETRANS.size)
    return _TCP_INFO_TOTAL_RETRANS.unpack(info)[0]


class RingAllreduce:
    """One rank's ring allreduce over two TCP connections (left in, right out)."""

    def __init__(self, rank: int, world: int, peers: list[tuple[str, int]],
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, timeout_s: float = CONNECT_TIMEOUT_S):
        self.rank, self.world, self.peers = rank, world, peers
        self.chunk_bytes = chunk_bytes
        self.timeout_s = timeout_s
        self.stats = RingStats()
        self.left: socket.socket | None = None
        self.right: socket.socket | None = None

    # ---- connection setup -----------------------------------------------------------
    def connect(self) -> None:
        """Listen on our entry, connect to the right neighbour, accept the left one."""
        if self.world == 1:
            return
        listener = self._listen()
        try:
            self.right = self._connect_right()
            self.left = self._accept_left(listener)
        finally:
            listener.close()

    def _listen(self) -> socket.socket:
        host, port = self.peers[self.rank]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((host, port))
        except OSError as exc:
            listener.close()
            raise cli.RunFailed(f"ring rank {self.rank}: cannot listen on {host}:{port}: "
                                f"{exc.strerror}") from None
        listener.listen(2)
        return listener

    def _connect_right(self) -> socket.socket:
        right_rank = (self.rank + 1) % self.world
        address = self.peers[right_rank]
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                sock = socket.create_connection(address, timeout=self.timeout_s)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise cli.RunFailed(f"ring rank {self.rank}: could not connect to rank "
                                        f"{right_rank} at {address[0]}:{address[1]} within "
                                        f"{self.timeout_s:g}s") from None
                time.sleep(0.05)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(_RANK_HELLO.pack(self.rank))
        return sock

    def _accept_left(self, listener: socket.socket) -> socket.socket:
        left_rank = (self.rank - 1) % self.world
        listener.settimeout(self.timeout_s)
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            raise cli.RunFailed(f"ring rank {self.rank}: rank {left_rank} did not connect "
                                f"within {self.timeout_s:g}s") from None
        sock.settimeout(self.timeout_s)
        hello = bytearray(_RANK_HELLO.size)
        self._receive_exactly(sock, memoryview(hello), "the rank greeting")
        (peer_rank,) = _RANK_HELLO.unpack(hello)
        if peer_rank != left_rank:
            sock.close()
            raise cli.RunFailed(f"ring rank {self.rank}: expected rank {left_rank} to connect, "
                                f"got rank {peer_rank} (check --peers)")
        return sock

    def close(self) -> None:
        for sock in (self.left, self.right):
            if sock is not None:
                sock.close()

    # ---- the allreduce ----------------------------------------------------------------
    def allreduce(self, data: np.ndarray) -> np.ndarray:
        """Sum `data` over all ranks; call connect() first."""
        buffer = np.array(data, copy=True)
        if self.world == 1:
            return buffer
        chunk_elements = max(1, self.chunk_bytes // buffer.itemsize)
        plan = ring_plan(self.rank, self.world, len(buffer), chunk_elements)
        progress = _ReceiveProgress()
        sender_error: list[BaseException] = []
        sender = threading.Thread(target=self._send_all, name=f"ring-send-{self.rank}",
                                  args=(buffer, plan, progress, sender_error), daemon=True)
        sender.start()
        try:
            self._receive_all(buffer, plan, progress, sender_error)
        except BaseException:
            progress.abort()   # the sender must not wait for receives that never come
            raise
        finally:
            sender.join()
        if sender_error:
            raise sender_error[0]
        self.stats.tcp_retransmissions = tcp_retransmissions(self.right)
        return buffer

    def _send_all(self, buffer, plan: RingPlan, progress: _ReceiveProgress, errors) -> None:
        right_rank = (self.rank + 1) % self.world
        try:
            self.right.settimeout(self.timeout_s)
            for part, prerequisite in plan.sends:
                if prerequisite >= 0 and not progress.wait_for(prerequisite):
                    return
                view = memoryview(buffer[part]).cast("B")
                self.right.sendall(view)
                self.stats.chunks_sent += 1
                self.stats.bytes_sent += len(view)
        except OSError as exc:
            errors.append(cli.RunFailed(f"ring rank {self.rank}: sending to rank {right_rank} "
                                        f"failed: {exc.strerror or exc}"))
            # Unblock the receiving thread at once rather than after its timeout.
            self.left.shutdown(socket.SHUT_RDWR)

    def _receive_all(self, buffer, plan: RingPlan, progress: _ReceiveProgress, errors) -> None:
        scratch = np.empty(max((p.stop - p.start for p, _ in plan.receives), default=0),
                           dtype=buffer.dtype)
        for part, reduce in plan.receives:
            # In all-gather the chunk is final, so it lands directly in the result; the
            # sender is done with those elements (they went right before the sum came back).
            target = scratch[:part.stop - part.start] if reduce else buffer[part]
            view = memoryview(target).cast("B")
            try:
                self._receive_exactly(self.left, view, "data")
            except cli.RunFailed:
                if errors:
                    return
                raise
            if reduce:
                self._accumulate(buffer[part], target)
            self.stats.chunks_received += 1
            self.stats.bytes_received += len(view)
            progress.advance()

    def _accumulate(self, destination: np.ndarray, incoming: np.ndarray) -> None:
        if destination.dtype == np.int32:
            wide = destination.astype(np.int64) + incoming
            self.stats.overflow |= bool(np.any(wide != wide.astype(np.int32)))
            destination[:] = wide.astype(np.int32)   # wraps, as int32 hardware would
        else:
            np.add(destination, incoming, out=destination)

    def _receive_exactly(self, sock: socket.socket, view: memoryview, what: str) -> None:
        left_rank = (self.rank - 1) % self.world
        got = 0
        while got < len(view):
            try:
                n = sock.recv_into(view[got:])
            except socket.timeout:
                raise cli.RunFailed(f"ring rank {self.rank}: no {what} from rank {left_rank} "
                                    f"for {self.timeout_s:g}s") from None
            except OSError as exc:
                raise cli.RunFailed(f"ring rank {self.rank}: receiving from rank {left_rank} "
                                    f"failed: {exc.strerror or exc}") from None
            if n == 0:
                raise cli.RunFailed(f"ring rank {self.rank}: rank {left_rank} closed the "
                                    f"connection while {what} was expected")
            got += n


def float32_ring_bound(world: int, reference: vectors.Reference) -> np.ndarray:
    """Error bound of N-1 float32 additions in some order: gamma_{N-1} * sum |x|."""
    nu = (world - 1) * FLOAT32_UNIT_ROUNDOFF
    return nu / (1 - nu) * reference.magnitude


def load_vector(args, dtype) -> np.ndarray:
    if args.input is not None:
        try:
            return vectors.load_input(args.input, args.elements, dtype)
        except vectors.InputError as exc:
            raise cli.UsageError(str(exc)) from None
    return vectors.generate(args.seed, args.rank, args.world, args.elements, dtype)


def verify_result(args, dtype, result: np.ndarray) -> vectors.Verification | None:
    if args.seed is None:
        return None
    reference = vectors.Reference.from_seed(args.seed, args.world, args.elements, dtype)
    tolerance = 0 if dtype == np.int32 else float32_ring_bound(args.world, reference)
    return vectors.verify(result, reference, tolerance)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    cli.check_rank(args.rank, args.world)
    dtype = vectors.DTYPES[args.dtype]
    peers = parse_peers(args.peers, args.world)
    data = load_vector(args, dtype)
    ring = RingAllreduce(args.rank, args.world, peers, args.chunk_bytes, args.timeout_s)
    try:
        ring.connect()
        started = time.monotonic()
        result = ring.allreduce(data)
        seconds = time.monotonic() - started
    finally:
        ring.close()
    verification = verify_result(args, dtype, result)
    cli.write_json(args.json, build_report(args, ring.stats, seconds, verification))
    if args.output:
        cli.save_output(args.output, result)
    cli.check_verified(f"ring rank {args.rank}", verification)
    return 0


def build_report(args, stats: RingStats, seconds: float, verification) -> dict:
    return {
        "job": None, "rank": args.rank, "world": args.world, "elements": args.elements,
        "dtype": args.dtype, "transport": "tcp-ring", "chunk_bytes": args.chunk_bytes,
        "seconds": seconds,
        "packets_sent": stats.chunks_sent, "packets_received": stats.chunks_received,
        "bytes_sent": stats.bytes_sent, "bytes_received": stats.bytes_received,
        # segments TCP retransmitted towards the right neighbour (kernel TCP_INFO)
        "retransmissions": stats.tcp_retransmissions,
        "correct": None if verification is None else verification.correct,
        "max_abs_err": None if verification is None else verification.max_abs_err,
        "overflow": stats.overflow,
        "error": None,
    }
