"""TCP between the ranks of a host-only allreduce (`python -m hosts allreduce`, `hosts ring`).

One TCP connection per pair of ranks that exchange data, used in both directions.  Rank r
listens on its --peers entry, connects to every peer of higher rank and meanwhile, on a
thread, accepts every peer of lower rank; the connecting side first sends its rank (4 bytes,
network order), which the accepting side checks.  There is no other framing: both ends know
from the schedule how many bytes come next (hosts/schedules.py), so a message is its raw
array bytes.

Sending never blocks the caller: `post(peer, array)` hands the kernel what the connection
takes now and keeps a copy of the rest, which goes out while the rank waits in a later
`receive` or `flush` (one poll over the connection it reads and every one with bytes to
send), so a rank can send to several peers and receive from others at once (like MPI's
buffered sends; the schedules are deadlock-free under that model).  `receive` blocks until
the bytes arrive.  One thread does it all: a sender thread per peer, as before, handed
Python's lock back and forth for every chunk (star:4, 1,000,000 int32, unshaped, three runs
each: the ring took 0.036-0.044 s with them, 0.033-0.039 s without).  Byte counts are TCP
payload bytes; retransmissions are the segments the kernel retransmitted on this rank's
connections (TCP_INFO).
"""

from __future__ import annotations

import os
import random
import select
import selectors
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from contracts.jobs import CONNECT_TIMEOUT_S
from hosts import cli

CONNECT_RETRY_FIRST_S = 0.05     # pause after a refused connect, doubled up to the next
CONNECT_RETRY_MAX_S = 1.0
LISTEN_BACKLOG = 4096             # the kernel caps it at net.core.somaxconn
# Each connection's send buffer, as asked of the kernel (which doubles it and then no longer
# tunes it).  It caps the bytes a connection has in flight: four of them crossing a leaf's
# uplink at once (butterfly, Rabenseifner on leafspine:2,1,4) otherwise grew their windows
# past the link's queue (topologies/shaping.py, 1.5 MB) and lost segments, 312-426 resent a
# run, 1.11-1.21x the fabric's bound at 100 Mbit/s; with it, none and 1.05-1.08x
# (docs/results/baselines.md).  A window this size still fills a link far faster than the
# emulated ones at their round trips.
SEND_BUFFER_BYTES = 128 * 1024
_RANK_HELLO = struct.Struct("!I")
# struct tcp_info (linux/tcp.h): u32 tcpi_total_retrans at byte offset 100.
_TCP_INFO_TOTAL_RETRANS = struct.Struct("=100xI")


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


def _tune(sock: socket.socket) -> None:
    """Every data connection: no Nagle delay (a schedule's messages go at once), and the
    send buffer of SEND_BUFFER_BYTES."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)


def tcp_retransmissions(sock: socket.socket) -> int:
    """Segments the kernel retransmitted on this connection so far (Linux TCP_INFO)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_TOTAL_RETRANS.size)
    return _TCP_INFO_TOTAL_RETRANS.unpack(info)[0]


@dataclass
class TransportStats:
    """A rank's traffic over its connections: messages and payload bytes each way, and the
    segments the kernel retransmitted.  The simulator's ranks count the same
    (simulation/host_algorithms.py)."""
    messages_sent: int = 0
    messages_received: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    tcp_retransmissions: int = 0


class Transport:
    """Rank `rank`'s connections to `peer_ranks` (see the module docstring).  `label` starts
    every error message, e.g. "ring rank 2"."""

    def __init__(self, rank: int, peers: list[tuple[str, int]], peer_ranks, label: str,
                 timeout_s: float = CONNECT_TIMEOUT_S):
        self.rank, self.peers, self.label = rank, peers, label
        self.peer_ranks = sorted(set(peer_ranks) - {rank})
        self.timeout_s = timeout_s
        self.stats = TransportStats()
        self.sockets: dict[int, socket.socket] = {}
        self._unsent: dict[int, deque] = {}     # per peer: what the kernel did not take yet
        self._closed = False          # close() is called again from a `finally`
        self.peers_not_closed = 0     # graceful close: peers still open at the timeout

    # ---- connection setup -------------------------------------------------------------
    def connect(self) -> None:
        """Listen on our entry; accept the lower peers on a thread while connecting to the
        higher ones."""
        if not self.peer_ranks:
            return
        lower = [p for p in self.peer_ranks if p < self.rank]
        listener = self._listen(len(lower)) if lower else None
        accepted: dict[int, socket.socket] = {}
        accept_errors: list[BaseException] = []

        def accept_lower():
            try:
                for _ in lower:
                    peer, sock = self._accept(listener, lower, accepted)
                    accepted[peer] = sock
            except BaseException as exc:      # re-raised on the calling thread below
                accept_errors.append(exc)

        # Accepting only after the last connect left finished handshakes in the kernel's
        # queue for minutes at 1,024 ranks: the queue overflowed into SYN cookies, which
        # expire, and a peer's connection was lost without either side seeing it.
        acceptor = threading.Thread(target=accept_lower, daemon=True,
                                    name=f"accept-{self.rank}") if lower else None
        done = False
        try:
            if acceptor is not None:
                acceptor.start()
            for peer in self.peer_ranks:
                if peer > self.rank:
                    self.sockets[peer] = self._connect(peer)
            if acceptor is not None:
                acceptor.join()
            if accept_errors:
                raise accept_errors[0]
            done = True
        finally:
            if listener is not None:
                if acceptor is not None and acceptor.is_alive():
                    try:
                        listener.shutdown(socket.SHUT_RDWR)     # wakes the blocked accept
                    except OSError:
                        pass
                    acceptor.join()
                listener.close()
            if not done:
                for sock in accepted.values():
                    sock.close()
        self.sockets.update(accepted)
        for peer in self.peer_ranks:
            self.sockets[peer].setblocking(False)
            self._unsent[peer] = deque()

    def _listen(self, lower_peers: int) -> socket.socket:
        host, port = self.peers[self.rank]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((host, port))
        except OSError as exc:
            listener.close()
            raise cli.RunFailed(f"{self.label}: cannot listen on {host}:{port}: "
                                f"{exc.strerror}") from None
        # The backlog also bounds the half-open handshakes; past it Linux answers with SYN
        # cookies, so leave room for every retried SYN of every lower peer.
        listener.listen(max(LISTEN_BACKLOG, lower_peers))
        return listener

    def _connect(self, peer: int) -> socket.socket:
        address = self.peers[peer]
        deadline = time.monotonic() + self.timeout_s
        pause = CONNECT_RETRY_FIRST_S
        while True:
            try:
                sock = socket.create_connection(address, timeout=self.timeout_s)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise cli.RunFailed(f"{self.label}: could not connect to rank {peer} at "
                                        f"{address[0]}:{address[1]} within "
                                        f"{self.timeout_s:g}s") from None
                # Back off: a thousand ranks retrying every 50 ms while the last ones are
                # launched flood the emulated switches with SYNs and resets.
                time.sleep(pause * random.uniform(0.5, 1.0))
                pause = min(2 * pause, CONNECT_RETRY_MAX_S)
        _tune(sock)
        sock.sendall(_RANK_HELLO.pack(self.rank))
        return sock

    def _accept(self, listener: socket.socket, expected: list,
                accepted: dict) -> tuple[int, socket.socket]:
        waiting = [p for p in expected if p not in accepted]
        listener.settimeout(self.timeout_s)
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            raise cli.RunFailed(f"{self.label}: rank {waiting[0]} did not connect within "
                                f"{self.timeout_s:g}s") from None
        sock.settimeout(self.timeout_s)
        _tune(sock)
        hello = bytearray(_RANK_HELLO.size)
        self._receive_exactly(sock, memoryview(hello), waiting[0], "the rank greeting")
        (peer,) = _RANK_HELLO.unpack(hello)
        if peer not in waiting:
            sock.close()
            raise cli.RunFailed(f"{self.label}: expected rank "
                                f"{' or '.join(map(str, waiting))} to connect, got rank {peer} "
                                f"(check --peers)")
        return peer, sock

    # ---- data ---------------------------------------------------------------------------
    def post(self, peer: int, data: np.ndarray) -> None:
        """Send `data` to `peer` without waiting: what the kernel does not take now is
        copied and sent while this rank waits later."""
        view = memoryview(np.ascontiguousarray(data)).cast("B")
        unsent = self._unsent[peer]
        sent = 0 if unsent else self._send_some(peer, view)
        if sent < len(view):
            unsent.append(memoryview(bytes(view[sent:])))   # the caller's buffer may change
        self.stats.messages_sent += 1
        self.stats.bytes_sent += len(view)

    def receive(self, peer: int, target: np.ndarray) -> None:
        """Fill the contiguous array `target` with the next bytes from `peer`."""
        view = memoryview(target).cast("B")

        def wait(deadline):
            self._wait(peer, deadline, f"no data from rank {peer} for")
        self._receive_exactly(self.sockets[peer], view, peer, "data", wait)
        self.stats.messages_received += 1
        self.stats.bytes_received += len(view)

    def flush(self) -> None:
        """Wait until every posted message has been handed to the kernel."""
        deadline = time.monotonic() + self.timeout_s
        while any(self._unsent.values()):
            stuck = next(peer for peer, unsent in self._unsent.items() if unsent)
            self._wait(None, deadline, f"sending to rank {stuck} failed: timed out after")
        self.stats.tcp_retransmissions = sum(tcp_retransmissions(s)
                                             for s in self.sockets.values())

    def _send_some(self, peer: int, view: memoryview) -> int:
        """Bytes of `view` the kernel took for `peer` without blocking."""
        sent = 0
        while sent < len(view):
            try:
                sent += self.sockets[peer].send(view[sent:])
            except BlockingIOError:
                break
            except OSError as exc:
                raise cli.RunFailed(f"{self.label}: sending to rank {peer} failed: "
                                    f"{exc.strerror or exc}") from None
        return sent

    def _send_unsent(self, peer: int) -> None:
        unsent = self._unsent[peer]
        while unsent:
            sent = self._send_some(peer, unsent[0])
            if sent < len(unsent[0]):
                unsent[0] = unsent[0][sent:]
                return
            unsent.popleft()

    def _wait(self, reading, deadline: float, what: str) -> None:
        """Until `reading`'s connection (a peer, or None) has bytes, sending meanwhile to
        every peer whose connection takes them; RunFailed past `deadline`."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise cli.RunFailed(f"{self.label}: {what} {self.timeout_s:g}s")
        poller = select.poll()           # not select(): ps's root has a socket per rank
        peer_of = {}
        for peer, unsent in self._unsent.items():
            if unsent or peer == reading:
                fd = self.sockets[peer].fileno()
                peer_of[fd] = peer
                poller.register(fd, (select.POLLOUT if unsent else 0)
                                | (select.POLLIN if peer == reading else 0))
        for fd, events in poller.poll(left * 1000):
            if events & (select.POLLOUT | select.POLLERR | select.POLLHUP) \
                    and self._unsent[peer_of[fd]]:
                self._send_unsent(peer_of[fd])

    def _receive_exactly(self, sock: socket.socket, view: memoryview, peer: int,
                         what: str, wait=None) -> None:
        """Fill `view` from `sock`: a blocking socket with its timeout (the rank greeting),
        or a non-blocking one, calling wait(deadline) while it has no byte."""
        got, deadline = 0, time.monotonic() + self.timeout_s
        while got < len(view):
            try:
                n = sock.recv_into(view[got:])
            except BlockingIOError:
                wait(deadline)
                continue
            except socket.timeout:
                raise cli.RunFailed(f"{self.label}: no {what} from rank {peer} for "
                                    f"{self.timeout_s:g}s") from None
            except OSError as exc:
                raise cli.RunFailed(f"{self.label}: receiving from rank {peer} failed: "
                                    f"{exc.strerror or exc}") from None
            if n == 0:
                raise cli.RunFailed(f"{self.label}: rank {peer} closed the connection while "
                                    f"{what} was expected")
            got += n
            deadline = time.monotonic() + self.timeout_s     # a timeout is one of silence

    def close(self, graceful: bool = False) -> None:
        """Close the connections.  `graceful`, after a run that
        succeeded and was flushed: first end our side of every connection and wait, up to
        the timeout, until each peer has ended its side too, i.e. has all it needed from us.
        A socket closed at once with data in flight is left to the kernel, which gives it a
        few retransmissions (tcp_orphan_retries) and then drops it without a word: at 1,024
        ranks ps's rank 0 finished, and two ranks never got the sum it had sent them."""
        if self._closed:
            return
        self._closed = True
        if graceful:
            self._wait_for_peers_to_close()
        for sock in self.sockets.values():
            sock.close()

    def _wait_for_peers_to_close(self) -> None:
        open_sockets = selectors.DefaultSelector()   # epoll: ps's root has a socket per rank
        for sock in self.sockets.values():
            try:
                sock.shutdown(socket.SHUT_WR)
                sock.setblocking(False)
                open_sockets.register(sock, selectors.EVENT_READ)
            except (OSError, ValueError):
                pass                                  # already reset or closed
        deadline = time.monotonic() + self.timeout_s
        with open_sockets:
            while open_sockets.get_map() and (left := deadline - time.monotonic()) > 0:
                for key, _ in open_sockets.select(left):
                    try:
                        ended = not key.fileobj.recv(65536)
                    except BlockingIOError:
                        ended = False
                    except OSError:
                        ended = True
                    if ended:
                        open_sockets.unregister(key.fileobj)
            self.peers_not_closed = len(open_sockets.get_map())
