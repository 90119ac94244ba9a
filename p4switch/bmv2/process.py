"""One running simple_switch: started on a bmv2 JSON, packets in and out over its nanomsg
``--packet-in`` socket, control over Thrift, its log read to know when it is done.

Packet I/O choice (measured on this machine, see docs/bmv2.md): ``--use-files`` replays pcap
files on a timer, so table writes cannot be placed between packets; veth pairs need root, a
network namespace and a minimum frame size, and the kernel adds packets of its own.  The
packet-in socket carries any packet (empty ones included) to any port number, in order, with
no root, and each packet can be run to completion before the next (``Tracker``), as our own
back ends do.

``SimpleSwitch.send(port, data)`` returns what the switch transmitted for that packet
(``[(port, bytes)]`` in transmit order) and the learning notifications it sent.
"""

import collections
import os
import shutil
import struct
import subprocess
import tempfile
import threading

from . import nanomsg
from .thrift import Clients, free_tcp_port, wait_listening
from .tracker import Tracker

PACKET_IN = 3                  # simple_switch's packet-in message types
PACKET_OUT = 4
_HEADER = struct.Struct("=iii")    # type, port, length (native byte order, as the switch's)
LEARN_TOPIC = b"LEA|"
LOG_LINES_KEPT = 40


class SwitchFailed(RuntimeError):
    """simple_switch did not start, died, or did not finish a packet (one line)."""


class SimpleSwitch:
    """simple_switch running ``json_path``; ``close()`` stops it and removes its sockets."""

    START_TIMEOUT_S = 20.0
    PACKET_TIMEOUT_S = 10.0
    LEARN_TIMEOUT_S = 0.5

    def __init__(self, toolchain, json_path, trace=False):
        from p4switch.p4lang import SIMPLE_SWITCH
        self.toolchain = toolchain
        self.tracker = Tracker()
        self.recent = collections.deque(maxlen=LOG_LINES_KEPT)
        self.dir = tempfile.mkdtemp(prefix="p4switch-bmv2-")
        self.proc = None
        self.clients = None
        self.packets = self.notifications = None
        self.trace = trace
        binary = toolchain.path(SIMPLE_SWITCH)
        for _ in range(3):                       # another process may take the free port
            self.thrift_port = free_tcp_port()
            packet_addr = f"ipc://{self.dir}/packets.ipc"
            self.notify_addr = f"ipc://{self.dir}/notifications.ipc"
            argv = [binary, "--packet-in", packet_addr, "--thrift-port", str(self.thrift_port),
                    "--notifications-addr", self.notify_addr, "--log-console",
                    "-L", "trace" if trace else "debug", json_path]
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, cwd=self.dir,
                                         env=toolchain.environment(), start_new_session=True)
            self.reader = threading.Thread(target=self._read_log, daemon=True)
            self.reader.start()
            if wait_listening(self.thrift_port, lambda: self.proc.poll() is None,
                              self.START_TIMEOUT_S):
                break
            self._stop_process()
        else:
            self.close()
            raise SwitchFailed(f"simple_switch did not start: {self.last_words()}")
        try:
            self.clients = Clients(self.thrift_port, toolchain.python_dir)
            self.packets = nanomsg.pair(packet_addr)
            self.notifications = nanomsg.subscriber(self.notify_addr)
        except Exception:
            self.close()
            raise

    # -- log -------------------------------------------------------------------------------
    def _read_log(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.recent.append(line)
            self.tracker.feed(line)
        self.tracker.close()

    def last_words(self):
        """simple_switch's last log line that says something, for an error message."""
        for line in reversed(self.recent):
            if line.strip():
                return line.strip()
        code = self.proc.poll() if self.proc else None
        return f"exit status {code}" if code is not None else "no output"

    # -- packets -----------------------------------------------------------------------------
    def send(self, port, data):
        """Run one packet to completion: ([(port, bytes)] transmitted, [learn messages])."""
        if self.proc.poll() is not None:
            raise SwitchFailed(f"simple_switch exited: {self.last_words()}")
        self.tracker.sent()
        self.packets.send(_HEADER.pack(PACKET_IN, port, len(data)) + bytes(data))
        if not self.tracker.wait_idle(self.PACKET_TIMEOUT_S):
            try:
                code = self.proc.wait(1)
            except subprocess.TimeoutExpired:
                raise SwitchFailed(f"simple_switch did not finish a packet on port {port} "
                                   f"within {self.PACKET_TIMEOUT_S:g} s: "
                                   f"{self.last_words()}") from None
            raise SwitchFailed(f"simple_switch died (exit status {code}) on a packet on port "
                               f"{port}: {self.last_words()}")
        if self.trace:
            self.tracker.wait_learned(self.LEARN_TIMEOUT_S)
        transmitted, learn_messages = self.tracker.take()
        out = [self._receive_packet() for _ in range(transmitted)]
        learned = [self._receive_learn() for _ in range(learn_messages)]
        return out, learned

    def _receive_packet(self):
        while True:
            message = self.packets.recv(int(self.PACKET_TIMEOUT_S * 1000))
            if message is None:
                raise SwitchFailed("simple_switch logged a packet it did not send")
            kind, port, length = _HEADER.unpack_from(message)
            if kind == PACKET_OUT:
                return port, message[_HEADER.size:_HEADER.size + length]

    def _receive_learn(self):
        while True:
            message = self.notifications.recv(int(self.PACKET_TIMEOUT_S * 1000))
            if message is None:
                raise SwitchFailed("simple_switch logged a learning notification it did "
                                   "not send")
            if message.startswith(LEARN_TOPIC):
                return message

    # -- end ---------------------------------------------------------------------------------
    def _stop_process(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(2)
        if self.proc.stdout:
            self.proc.stdout.close()

    def close(self):
        for sock in (self.packets, self.notifications):
            if sock is not None:
                sock.close()
        self.packets = self.notifications = None
        if self.clients is not None:
            self.clients.close()
            self.clients = None
        self._stop_process()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
