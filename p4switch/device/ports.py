"""Switch ports as raw AF_PACKET sockets bound to network interfaces.

Each port receives every frame arriving on its interface, except frames the host itself
transmits there (PACKET_OUTGOING), which includes the frames this switch sends. The kernel
takes VLAN tags out of received frames; `receive_frame` puts them back from PACKET_AUXDATA,
so the pipeline sees the frame as it was on the wire.

With segmentation offload (`RawPort(..., offload=True)`) the socket carries a virtio-net
header (PACKET_VNET_HDR): a TCP send a host left whole is cut here into the segments that go
on the wire, and partial checksums are finished (p4switch/device/segments.py), so the Python
loop, its pcaps, traces and impairments see wire frames; frames go out with an empty header.
"""
import collections
import select
import socket
import struct
import subprocess
from typing import Callable

from contracts import offloads

from . import segments

ETH_P_ALL = 0x0003
_RECV_BUFFER = 65536 + 64
_SOCKET_BUFFER = 4 * 1024 * 1024
SOL_PACKET = 263              # linux/socket.h; not in Python's socket module
_PACKET_AUXDATA = 8
# struct tpacket_auxdata: status, len, snaplen, mac, net, vlan_tci, vlan_tpid
_AUXDATA = struct.Struct("=IIIHHHH")
_TP_STATUS_VLAN_VALID = 0x10
_TP_STATUS_VLAN_TPID_VALID = 0x40
_ETH_P_8021Q = 0x8100
_PACKET_VNET_HDR = 15
# what a port with segmentation offload leaves on, and what it turns off: checksum and
# segmentation offloads on transmit (a TCP send stays whole through the switch), none on
# receive (GRO would merge what the hosts sent), VLAN tags in the frame
OFFLOADS_SEGMENTING = offloads.SEGMENTING + offloads.VLAN_NONE
OFFLOADS_NONE = offloads.NONE + offloads.VLAN_NONE


def enable_vlan_auxdata(sock: socket.socket) -> None:
    """Ask the kernel to report the VLAN tags it takes out of received frames."""
    sock.setsockopt(SOL_PACKET, _PACKET_AUXDATA, 1)


_ANCILLARY_SPACE = socket.CMSG_SPACE(_AUXDATA.size)


def receive_frame(sock: socket.socket) -> tuple[bytes, int]:
    """(frame with its VLAN tag restored, packet type) from a raw socket with auxdata on."""
    data, ancillary, _, address = sock.recvmsg(_RECV_BUFFER, _ANCILLARY_SPACE)
    return with_vlan_tag(data, ancillary), address[2]


def with_vlan_tag(data: bytes, ancillary) -> bytes:
    """The frame `data` with the VLAN tag the kernel took out (reported in `ancillary`, the
    received control messages) put back after the MAC addresses."""
    for level, kind, payload in ancillary:
        if level == SOL_PACKET and kind == _PACKET_AUXDATA \
                and len(payload) >= _AUXDATA.size:
            status, _, _, _, _, tci, tpid = _AUXDATA.unpack_from(payload)
            if status & _TP_STATUS_VLAN_VALID and len(data) >= 12:
                if not status & _TP_STATUS_VLAN_TPID_VALID:
                    tpid = _ETH_P_8021Q
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data


class PortError(Exception):
    """An interface that cannot be opened as a switch port."""


def _set_buffers(sock: socket.socket) -> None:
    """Large socket buffers absorb bursts the Python pipeline cannot keep up with; as root the
    FORCE variants go beyond net.core.rmem_max/wmem_max."""
    for forced, plain in ((33, socket.SO_RCVBUF), (32, socket.SO_SNDBUF)):  # SO_*BUFFORCE
        try:
            sock.setsockopt(socket.SOL_SOCKET, forced, _SOCKET_BUFFER)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, plain, _SOCKET_BUFFER)


class RawPort:
    """One switch port: a port number and a raw socket on an interface."""

    def __init__(self, number: int, interface: str, offload: bool = False):
        self.number = number
        self.interface = interface
        self.offload = offload
        self.pending: collections.deque = collections.deque()   # segments not yet received
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(f"opening a raw socket for {interface} needs root "
                            "(CAP_NET_RAW)") from None
        try:
            _set_buffers(self.sock)
            enable_vlan_auxdata(self.sock)
            if offload:
                self.sock.setsockopt(SOL_PACKET, _PACKET_VNET_HDR, 1)
            self.sock.bind((interface, ETH_P_ALL))
        except OSError as e:
            self.sock.close()
            raise PortError(f"cannot open interface {interface}: {e.strerror}") from None
        self.sock.setblocking(False)
        # Frames are received into one buffer per port: recvmsg would allocate (and then
        # shrink) a buffer of the largest frame size for every frame.
        self._buffer = bytearray(_RECV_BUFFER)
        self._view = memoryview(self._buffer)

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self) -> bytes | None:
        """The next frame that arrived on the wire; b"" for a frame this host sent out of the
        interface (to be ignored); None when nothing is waiting."""
        if self.pending:
            return self.pending.popleft()
        try:
            size, ancillary, _, address = self.sock.recvmsg_into((self._buffer,),
                                                                 _ANCILLARY_SPACE)
        except BlockingIOError:
            return None
        except OSError as e:
            # e.g. ENETDOWN while the link is down; reading clears the error, the port stays.
            raise PortError(f"port {self.number} ({self.interface}): {e.strerror}") from None
        if address[2] == socket.PACKET_OUTGOING:
            return b""
        # The kernel takes a VLAN tag out of every tagged frame, whatever the offloads, so
        # the auxdata is looked at for every frame.
        if not self.offload:
            return with_vlan_tag(bytes(self._view[:size]), ancillary)
        header = bytes(self._view[:segments.VNET_HDR_SIZE])
        received = header + with_vlan_tag(bytes(self._view[segments.VNET_HDR_SIZE:size]),
                                          ancillary)
        try:
            frames = segments.wire_frames(received)
        except segments.SegmentationError as e:
            raise PortError(f"port {self.number} ({self.interface}): {e}") from None
        self.pending.extend(frames[1:])
        return frames[0]

    def send(self, frame: bytes) -> str | None:
        """Send a frame; returns why it was dropped, or None."""
        try:
            self.sock.send(segments.NO_VNET_HDR + frame if self.offload else frame)
        except BlockingIOError:
            return "socket buffer full"      # dropped, as on a congested link
        except OSError as e:
            return e.strerror                # e.g. frame larger than the MTU, link down
        return None

    def close(self) -> None:
        self.sock.close()


def disable_offloads(interface: str, segmenting: bool = False) -> str | None:
    """Turn off checksum, segmentation and VLAN offloads so the socket sees frames as they are
    on the wire: real sizes, real checksums, VLAN tags in place; `segmenting`: leave transmit
    checksum and segmentation offload on (OFFLOADS_SEGMENTING). Returns an error text when
    ethtool is missing or fails."""
    try:
        result = subprocess.run(
            ["ethtool", "-K", interface,
             *(OFFLOADS_SEGMENTING if segmenting else OFFLOADS_NONE)],
            capture_output=True, text=True)
    except FileNotFoundError:
        return "ethtool not found; offloads left as they are"
    if result.returncode != 0:
        return result.stderr.strip() or f"ethtool exited with {result.returncode}"
    return None


class PortSet:
    """All ports of the switch, polled together."""

    def __init__(self, ports: list[RawPort]):
        self.by_number = {p.number: p for p in ports}
        self._by_fd = {p.fileno(): p for p in ports}
        self._wakeups: dict[int, Callable[[], None]] = {}
        self._poll = select.poll()
        for port in ports:
            self._poll.register(port.fileno(), select.POLLIN)

    def add_wakeup(self, fd: int, clear: Callable[[], None]) -> None:
        """Also end `wait` when `fd` becomes readable (another thread has work for the loop);
        `clear()` is called then to reset it."""
        self._wakeups[fd] = clear
        self._poll.register(fd, select.POLLIN)

    def wait(self, timeout_ms: int) -> list[RawPort]:
        """Ports with frames waiting (after at most timeout_ms milliseconds)."""
        ready = [p for p in self.by_number.values() if p.pending]   # segments cut already
        try:
            events = self._poll.poll(0 if ready else timeout_ms)
        except InterruptedError:
            return ready
        for fd, _ in events:
            if fd in self._wakeups:
                self._wakeups[fd]()
            elif self._by_fd[fd] not in ready:
                ready.append(self._by_fd[fd])
        return ready

    def close(self) -> None:
        for port in self.by_number.values():
            port.close()
