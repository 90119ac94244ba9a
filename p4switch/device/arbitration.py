"""Client arbitration (P4Runtime spec "Client Arbitration and Controller Replication").

Per (device, role), every open StreamChannel that sent a MasterArbitrationUpdate is a live
client with an election id (or none: a client without one is a backup forever). The server
remembers the highest election id it has seen for the role; a client whose election id is at
least that high becomes (or stays) primary, and only the primary may write. When the primary
downgrades itself or its stream ends, the role has no primary until a client arbitrates again
with a high enough election id. Whenever the primary changes, every client of the role hears
its new status; a client that arbitrates without changing the primary hears back alone.
"""
import threading
from dataclasses import dataclass, field

import grpc
from p4.v1 import p4runtime_pb2

from .errors import P4RuntimeError, code_number


@dataclass
class Client:
    """One arbitrated stream."""
    stream: object          # opaque token identifying the StreamChannel
    role: str
    election_id: int | None  # None: no election id given, never primary


@dataclass
class _RoleState:
    clients: dict = field(default_factory=dict)   # stream -> Client
    primary: Client | None = None
    highest_seen: int | None = None                # highest election id ever seen


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
        self._roles: dict[str, _RoleState] = {}
        self._stream_roles: dict[object, str] = {}
        self._lock = threading.Lock()

    def arbitrate(self, stream, request: p4runtime_pb2.MasterArbitrationUpdate) -> list:
        """Register or update the client on `stream`. Returns [(stream, update)] to send.
        Raises P4RuntimeError (the stream must end with that status) for a refused update."""
        role = role_key(request.role if request.HasField("role") else None)
        election_id = election_id_value(request)
        with self._lock:
            known_role = self._stream_roles.get(stream)
            self._check(stream, request, role, election_id, known_role)
            state = self._roles.setdefault(role, _RoleState())
            client = state.clients.get(stream)
            if client is None:
                client = state.clients[stream] = Client(stream, role, election_id)
                self._stream_roles[stream] = role
            client.election_id = election_id
            return self._elect(state, client)

    def _check(self, stream, request, role, election_id, known_role) -> None:
        new = known_role is None
        if request.device_id != self.device_id:
            raise P4RuntimeError(
                grpc.StatusCode.NOT_FOUND if new else grpc.StatusCode.FAILED_PRECONDITION,
                f"device id {request.device_id} is not this switch "
                f"(device id {self.device_id})")
        if not new and known_role != role:
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                 "a stream cannot change its role; open a new stream")
        if request.role.HasField("config"):
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT,
                                 "role configs are not supported: every role has full access")
        state = self._roles.get(role)
        if election_id is not None and state is not None and any(
                c.election_id == election_id and c.stream is not stream
                for c in state.clients.values()):
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"election id {election_id} is already used by another "
                                 f"client of role '{role}'")

    def _elect(self, state: _RoleState, client: Client) -> list:
        """Apply the election rules after `client` (re)arbitrated."""
        eid = client.election_id
        if eid is not None and (state.highest_seen is None or eid >= state.highest_seen):
            state.highest_seen = eid
            state.primary = client
            return self._updates_for_all(state)
        if state.primary is client:          # the primary downgraded itself
            state.primary = None
            return self._updates_for_all(state)
        return [(client.stream, self._update_for(state, client))]

    def leave(self, stream) -> list:
        """Forget the client on `stream`; returns the updates to send if it was primary."""
        with self._lock:
            role = self._stream_roles.pop(stream, None)
            if role is None:
                return []
            state = self._roles[role]
            client = state.clients.pop(stream)
            if state.primary is not client:
                return []
            state.primary = None
            return self._updates_for_all(state)

    def is_primary(self, role: str, election_id: int | None) -> bool:
        """Whether a request with this role and election id comes from the primary client."""
        with self._lock:
            state = self._roles.get(role)
            return (state is not None and state.primary is not None
                    and election_id is not None and state.primary.election_id == election_id)

    def is_stream_primary(self, stream) -> bool:
        """Whether the client on `stream` is the primary of its role."""
        with self._lock:
            role = self._stream_roles.get(stream)
            return role is not None and self._roles[role].primary is not None \
                and self._roles[role].primary.stream is stream

    def check_primary(self, role: str, election_id: int | None, what: str) -> None:
        if not self.is_primary(role, election_id):
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                                 f"{what}: the request's election id is not the primary's "
                                 f"for role '{role}'")

    def _updates_for_all(self, state: _RoleState) -> list:
        return [(c.stream, self._update_for(state, c)) for c in state.clients.values()]

    def _update_for(self, state: _RoleState,
                    client: Client) -> p4runtime_pb2.MasterArbitrationUpdate:
        update = p4runtime_pb2.MasterArbitrationUpdate(device_id=self.device_id)
        if client.role:
            update.role.name = client.role
        if state.highest_seen is not None:
            update.election_id.high = state.highest_seen >> 64
            update.election_id.low = state.highest_seen & ((1 << 64) - 1)
        if state.primary is None:
            update.status.code = code_number(grpc.StatusCode.NOT_FOUND)
            update.status.message = "no primary client for this role"
        elif state.primary is client:
            update.status.code = code_number(grpc.StatusCode.OK)
            update.status.message = "you are the primary client"
        else:
            update.status.code = code_number(grpc.StatusCode.ALREADY_EXISTS)
            update.status.message = "another client is primary; you are a backup"
        return update
