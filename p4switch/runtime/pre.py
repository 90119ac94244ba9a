"""The packet replication engine: multicast groups and clone sessions.

A multicast group is an ordered list of replicas `(egress_port, rid)`; a clone session is the
same plus a truncation length in bytes (0: no truncation). The traffic manager asks for the
replicas of a group or a session; the control plane edits them through `sw.pre`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import AlreadyExists, InvalidArgument, NotFound

MAX_PORT = (1 << 9) - 1


@dataclass(frozen=True)
class CloneSession:
    replicas: tuple[tuple[int, int], ...]
    truncate: int = 0
    class_of_service: int = 0


def _check_replicas(replicas, what: str) -> tuple[tuple[int, int], ...]:
    checked = []
    for replica in replicas:
        try:
            port, rid = replica
        except (TypeError, ValueError):
            raise InvalidArgument(f"{what}: replica {replica!r} is not (port, rid)") from None
        if not (isinstance(port, int) and 0 <= port <= MAX_PORT):
            raise InvalidArgument(f"{what}: egress port {port!r} is out of range")
        if not (isinstance(rid, int) and 0 <= rid < (1 << 16)):
            raise InvalidArgument(f"{what}: replica id {rid!r} is out of range")
        checked.append((port, rid))
    if len(set(checked)) != len(checked):
        raise InvalidArgument(f"{what}: duplicate replicas")
    return tuple(checked)


class PacketReplicationEngine:
    """Multicast groups and clone sessions of one switch."""

    def __init__(self):
        self.groups: dict[int, tuple[tuple[int, int], ...]] = {}
        self.sessions: dict[int, CloneSession] = {}

    # -- multicast groups ----------------------------------------------------------------

    def set_multicast_group(self, group_id: int, replicas) -> None:
        """Create or replace group `group_id` (1..65535) with replicas in order."""
        if not (isinstance(group_id, int) and 0 < group_id < (1 << 16)):
            raise InvalidArgument(f"multicast group id {group_id!r} is out of range 1..65535")
        self.groups[group_id] = _check_replicas(replicas, f"multicast group {group_id}")

    def insert_multicast_group(self, group_id: int, replicas) -> None:
        if group_id in self.groups:
            raise AlreadyExists(f"multicast group {group_id} exists")
        self.set_multicast_group(group_id, replicas)

    def modify_multicast_group(self, group_id: int, replicas) -> None:
        if group_id not in self.groups:
            raise NotFound(f"no multicast group {group_id}")
        self.set_multicast_group(group_id, replicas)

    def delete_multicast_group(self, group_id: int) -> None:
        if self.groups.pop(group_id, None) is None:
            raise NotFound(f"no multicast group {group_id}")

    def multicast_replicas(self, group_id: int) -> tuple[tuple[int, int], ...]:
        """The replicas of a group (empty for an unknown group, which drops the packet)."""
        return self.groups.get(group_id, ())

    # -- clone sessions ------------------------------------------------------------------

    def set_clone_session(self, session_id: int, replicas, truncate: int = 0,
                          class_of_service: int = 0) -> None:
        """Create or replace a clone session; `truncate` > 0 cuts clones to that many bytes."""
        if not (isinstance(session_id, int) and 0 < session_id < (1 << 32)):
            raise InvalidArgument(f"clone session id {session_id!r} is out of range")
        if not (isinstance(truncate, int) and truncate >= 0):
            raise InvalidArgument(f"clone session {session_id}: bad truncation {truncate!r}")
        self.sessions[session_id] = CloneSession(
            _check_replicas(replicas, f"clone session {session_id}"), truncate,
            class_of_service)

    def insert_clone_session(self, session_id: int, replicas, truncate: int = 0,
                             class_of_service: int = 0) -> None:
        if session_id in self.sessions:
            raise AlreadyExists(f"clone session {session_id} exists")
        self.set_clone_session(session_id, replicas, truncate, class_of_service)

    def modify_clone_session(self, session_id: int, replicas, truncate: int = 0,
                             class_of_service: int = 0) -> None:
        if session_id not in self.sessions:
            raise NotFound(f"no clone session {session_id}")
        self.set_clone_session(session_id, replicas, truncate, class_of_service)

    def delete_clone_session(self, session_id: int) -> None:
        if self.sessions.pop(session_id, None) is None:
            raise NotFound(f"no clone session {session_id}")

    def clone_session(self, session_id: int) -> CloneSession | None:
        return self.sessions.get(session_id)
