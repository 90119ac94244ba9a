"""Connection setup of the host algorithms' TCP transport (hosts/transport.py), seen from the
kernel: a rank accepts its lower peers while it is still connecting to a higher one, and its
listener leaves room for every handshake.

At 1,024 ranks a rank accepted only after its last connect; finished handshakes waited in the
kernel's accept queue for minutes, the queue (sized to the lower peers) overflowed into SYN
cookies, and two connections were lost without either side noticing (docs/scaling.md)."""

import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np

from hosts.transport import LISTEN_BACKLOG, SEND_BUFFER_BYTES, Transport

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_hosts_ring import free_ports  # noqa: E402


def listener_queue(port):
    """(connections waiting to be accepted, backlog) of the listener on `port`, from ss."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True,
                         text=True, check=True).stdout.split()
    return (int(out[1]), int(out[2])) if out else None


def somaxconn():
    with open("/proc/sys/net/core/somaxconn") as handle:
        return int(handle.read())


def test_a_rank_accepts_lower_peers_while_a_higher_one_is_not_up_yet():
    ports = free_ports(3)
    peers = [("127.0.0.1", port) for port in ports]
    ranks = [Transport(rank, peers, {0: [1], 1: [0, 2], 2: [1]}[rank], f"rank {rank}",
                       timeout_s=20) for rank in range(3)]
    errors = []

    def connect(rank):
        try:
            ranks[rank].connect()
        except BaseException as exc:        # reported by the assertion below
            errors.append(exc)

    middle = threading.Thread(target=connect, args=(1,))
    middle.start()
    first = threading.Thread(target=connect, args=(0,))
    first.start()
    first.join(10)
    # Rank 1 is still retrying its connect to rank 2, which does not listen yet; rank 0's
    # connection must not wait in the kernel's queue meanwhile.
    deadline = time.monotonic() + 10
    while listener_queue(ports[1]) != (0, min(LISTEN_BACKLOG, somaxconn())):
        assert time.monotonic() < deadline, listener_queue(ports[1])
        time.sleep(0.05)
    assert middle.is_alive() and not first.is_alive() and errors == []

    last = threading.Thread(target=connect, args=(2,))
    last.start()
    for thread in (middle, last):
        thread.join(20)
    assert errors == [] and not middle.is_alive() and not last.is_alive()
    try:
        ranks[0].post(1, np.arange(5, dtype=np.int32))
        ranks[2].post(1, np.arange(7, dtype=np.int32) * 3)
        from_0, from_2 = np.zeros(5, np.int32), np.zeros(7, np.int32)
        ranks[1].receive(0, from_0)
        ranks[1].receive(2, from_2)
        assert from_0.tolist() == list(range(5))
        assert from_2.tolist() == [3 * i for i in range(7)]
    finally:
        for rank in ranks:
            rank.close()


def test_a_failed_connect_closes_the_listener_and_the_accepted_peers():
    ports = free_ports(3)
    peers = [("127.0.0.1", port) for port in ports]
    middle = Transport(1, peers, [0, 2], "rank 1", timeout_s=1.5)
    first = Transport(0, peers, [1], "rank 0", timeout_s=5)
    failure = []

    def connect_middle():
        try:
            middle.connect()
        except Exception as exc:
            failure.append(str(exc))

    thread = threading.Thread(target=connect_middle)
    thread.start()
    first.connect()
    thread.join(10)
    assert failure == [f"rank 1: could not connect to rank 2 at 127.0.0.1:{ports[2]} "
                       f"within 1.5s"]
    assert listener_queue(ports[1]) is None
    try:
        got = first.sockets[1].recv(1)        # rank 1 closed its accepted end
    except ConnectionResetError:
        got = b""
    assert got == b""
    first.close()


def connected_pair(timeout_s=20):
    peers = [("127.0.0.1", port) for port in free_ports(2)]
    ranks = [Transport(rank, peers, [1 - rank], f"rank {rank}", timeout_s=timeout_s)
             for rank in range(2)]
    accepting = threading.Thread(target=ranks[1].connect)
    accepting.start()
    ranks[0].connect()
    accepting.join(10)
    return ranks


def test_a_graceful_close_waits_until_the_peer_has_closed_after_reading_everything():
    """ps's root at 1,024 ranks closed right after handing its sums to the kernel; two ranks
    never got theirs (the kernel dropped the orphaned sockets after a few retransmissions).
    A graceful close keeps the socket until the peer has ended its side."""
    root, leaf = connected_pair()
    # small enough for the kernel's buffers to take it whole (SEND_BUFFER_BYTES caps ours)
    vector = np.arange(SEND_BUFFER_BYTES // 16, dtype=np.int32)
    root.post(1, vector)
    root.flush()
    closing = threading.Thread(target=root.close, kwargs={"graceful": True})
    closing.start()
    time.sleep(0.5)
    assert closing.is_alive()             # the leaf has not read, let alone closed
    got = np.zeros_like(vector)
    leaf.receive(0, got)
    assert np.array_equal(got, vector)
    leaf.close(graceful=True)             # the root's side is ended already: nothing to wait for
    assert leaf.peers_not_closed == 0
    closing.join(20)
    assert not closing.is_alive() and root.peers_not_closed == 0


def test_a_graceful_close_gives_up_at_the_timeout_on_a_peer_that_never_closes():
    root, leaf = connected_pair(timeout_s=0.5)
    started = time.monotonic()
    root.close(graceful=True)
    assert time.monotonic() - started >= 0.5 and root.peers_not_closed == 1   # it gave up
    leaf.close()


def test_every_connection_caps_its_send_buffer_on_both_ends():
    """Four connections crossing one shaped uplink grew their windows past its queue and lost
    segments; each connection's send buffer (the kernel reports twice what was asked) caps
    what it has in flight, and a vector larger than it still arrives whole."""
    root, leaf = connected_pair()
    try:
        for transport in (root, leaf):
            for sock in transport.sockets.values():
                assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == \
                    2 * SEND_BUFFER_BYTES
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        vector = np.arange(4 * SEND_BUFFER_BYTES, dtype=np.int32)
        root.post(1, vector)
        vector_sent = vector.copy()
        vector[:] = -1                  # posted: the rest goes out from the transport's copy
        sending = threading.Thread(target=root.flush)   # the root's rank, as if elsewhere
        sending.start()
        got = np.zeros_like(vector)
        leaf.receive(0, got)
        sending.join(20)
        assert np.array_equal(got, vector_sent) and not sending.is_alive()
    finally:
        root.close()
        leaf.close()
