"""Minimal pcap (libpcap classic format, Ethernet link type) writer and reader.

The writer flushes after every record so a capture can be read while the switch runs.
"""
import struct
import time

PCAP_MAGIC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
SNAPLEN = 262144
_GLOBAL_HEADER = struct.Struct("<IHHiIII")
_RECORD_HEADER = struct.Struct("<IIII")


class PcapWriter:
    """Appends Ethernet frames with timestamps to a new pcap file."""

    def __init__(self, path: str):
        self._file = open(path, "wb")
        self._file.write(_GLOBAL_HEADER.pack(PCAP_MAGIC, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET))
        self._file.flush()

    def write(self, frame: bytes, timestamp: float | None = None) -> None:
        if timestamp is None:
            timestamp = time.time()
        seconds = int(timestamp)
        micros = int((timestamp - seconds) * 1_000_000)
        captured = frame[:SNAPLEN]
        self._file.write(_RECORD_HEADER.pack(seconds, micros, len(captured), len(frame)))
        self._file.write(captured)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_pcap(path: str) -> list[bytes]:
    """The frames of a pcap file written by PcapWriter (little-endian, microsecond format)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    if magic != PCAP_MAGIC:
        raise ValueError(f"{path}: not a little-endian microsecond pcap file")
    frames, offset = [], _GLOBAL_HEADER.size
    while offset + _RECORD_HEADER.size <= len(data):
        _, _, captured, _ = _RECORD_HEADER.unpack_from(data, offset)
        offset += _RECORD_HEADER.size
        frames.append(data[offset:offset + captured])
        offset += captured
    return frames
