"""Digest lists on the StreamChannel: one DigestList per digest the pipeline generates, with
the spec's duplicate suppression: data sent and not yet acknowledged (DigestListAck) is not
sent again until the digest's ack_timeout_ns has passed."""
import itertools
import threading
import time

from p4.v1 import p4data_pb2, p4runtime_pb2

from . import bytestrings


class DigestLists:
    """Builds DigestLists and remembers which data awaits an acknowledgement."""

    def __init__(self, clock=time.monotonic_ns):
        self._clock = clock
        self._list_ids = itertools.count(1)
        # (digest id, values) -> (list id, deadline of the ack)
        self._pending: dict[tuple, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def make(self, digest_id: int, values: list, ack_timeout_ns: int, as_tuple=False):
        """The DigestList to send for `values` (a struct's fields, or a tuple's elements
        with `as_tuple`), or None while the same data awaits an ack."""
        key = (digest_id, tuple(values))
        now = self._clock()
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None and now < pending[1]:
                return None
            list_id = next(self._list_ids)
            if ack_timeout_ns > 0:
                self._pending[key] = (list_id, now + ack_timeout_ns)
        data = p4data_pb2.P4Data()
        members = data.tuple.members if as_tuple else data.struct.members
        for value in values:
            members.add(bitstring=bytestrings.encode(value))
        return p4runtime_pb2.DigestList(digest_id=digest_id, list_id=list_id, data=[data],
                                        timestamp=time.time_ns())

    def ack(self, digest_id: int, list_id: int) -> None:
        """The client acknowledged a list: its data may be sent again."""
        with self._lock:
            for key in [k for k, (lid, _) in self._pending.items()
                        if k[0] == digest_id and lid == list_id]:
                del self._pending[key]

    def forget(self, digest_id: int) -> None:
        """The digest was reconfigured or disabled: nothing of it is pending any more."""
        with self._lock:
            for key in [k for k in self._pending if k[0] == digest_id]:
                del self._pending[key]
