"""Client arbitration (P4Runtime spec "Client Arbitration and Controller Replication").

Per (device, role), every open StreamChannel that sent a MasterArbitrationUpdate is a client
with an election id; the client with the highest election id is the primary and is the only one
allowed to write. Clients without an election id are backups forever. Whenever the primary of a
role changes, every client of that role is told its new status; a client that (re)arbitrates
without changing the primary hears back alone.
"""
import threading
from dataclasses import dataclass

import grpc
from p4.v1 import p4runtime_pb2

from .errors import P4RuntimeError, code_number


@dataclass
class Client:
    """One arbitrated stream."""
    stream: object          # opaque token identifying the StreamChannel
    role: str
    election_id: int | None  # None: no election id given, never primary


def election_id_value(message) -> int | None:
    """The 128-bit election id of a request, or None when the field is absent."""
    if not message.HasField("election_id"):
        return None
    return (message.election_id.high << 64) | message.election_id.low


def role_key(role: p4runtime_pb2.Role | None = None, name: str = "", role_id: int = 0) -> str:
    """A role is named (1.2+) or numbered (older clients); the default role is ''."""
    if role is not None:
        name, role_id = role.name, role.id
    return name or (str(role_id) if role_id else "")


class Arbitration:
    """Primary election for one device; safe to call from any gRPC thread."""

    def __init__(self, device_id: int):
        self.device_id = device_id
        self._clients: dict[object, Client] = {}
        self._lock = threading.Lock()

    def _primary(self, role: str) -> Client | None:
        candidates = [c for c in self._clients.values()
                      if c.role == role and c.election_id is not None]
        return max(candidates, key=lambda c: c.election_id, default=None)

    def arbitrate(self, stream, request: p4runtime_pb2.MasterArbitrationUpdate) -> list:
        """Register or update the client on `stream`. Returns [(stream, update)] to send."""
        if request.device_id != self.device_id:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                 f"device id {request.device_id} is not this switch "
                                 f"(device id {self.device_id})")
        if request.role.HasField("config"):
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                                 "role configs are not supported: every role has full access")
        role = role_key(request.role if request.HasField("role") else None)
        election_id = election_id_value(request)
        with self._lock:
            known = self._clients.get(stream)
            if known is not None and known.role != role:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                     "a stream cannot change its role")
            if election_id is not None and any(
                    c.role == role and c.election_id == election_id and c.stream is not stream
                    for c in self._clients.values()):
                raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT,
                                     f"election id {election_id} is already used by another "
                                     f"client of role '{role}'")
            before = self._primary(role)
            self._clients[stream] = Client(stream, role, election_id)
            after = self._primary(role)
            if before is not None and after is not None and before.stream is after.stream:
                return [(stream, self._update_for(self._clients[stream]))]
            return self._updates_for_role(role)

    def leave(self, stream) -> list:
        """Forget the client on `stream`; returns the updates to send if the primary changed."""
        with self._lock:
            client = self._clients.get(stream)
            if client is None:
                return []
            was_primary = self._primary(client.role) is client
            del self._clients[stream]
            return self._updates_for_role(client.role) if was_primary else []

    def is_primary(self, role: str, election_id: int | None) -> bool:
        """Whether a request with this role and election id comes from the primary client."""
        with self._lock:
            primary = self._primary(role)
            return (primary is not None and election_id is not None
                    and primary.election_id == election_id)

    def is_stream_primary(self, stream) -> bool:
        """Whether the client on `stream` is the primary of its role."""
        with self._lock:
            client = self._clients.get(stream)
            return client is not None and self._primary(client.role) is client

    def check_primary(self, role: str, election_id: int | None, what: str) -> None:
        if not self.is_primary(role, election_id):
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                                 f"{what}: the request's election id is not the primary's "
                                 f"for role '{role}'")

    def _updates_for_role(self, role: str) -> list:
        return [(c.stream, self._update_for(c))
                for c in self._clients.values() if c.role == role]

    def _update_for(self, client: Client) -> p4runtime_pb2.MasterArbitrationUpdate:
        primary = self._primary(client.role)
        update = p4runtime_pb2.MasterArbitrationUpdate(device_id=self.device_id)
        if client.role:
            update.role.name = client.role
        if primary is not None:
            update.election_id.high = primary.election_id >> 64
            update.election_id.low = primary.election_id & ((1 << 64) - 1)
        if primary is None:
            update.status.code = code_number(grpc.StatusCode.NOT_FOUND)
            update.status.message = "no primary client for this role"
        elif primary is client:
            update.status.code = code_number(grpc.StatusCode.OK)
            update.status.message = "you are the primary client"
        else:
            update.status.code = code_number(grpc.StatusCode.ALREADY_EXISTS)
            update.status.message = "another client is primary; you are a backup"
        return update
