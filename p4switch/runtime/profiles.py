"""Action profiles and action selectors (v1model `action_profile` / `action_selector`).

A table whose `implementation` is a profile holds no actions in its entries: each entry
points at a member (an action with its arguments) or, for a selector, at a group of members,
one of which is picked per packet by hashing the table's `selector` key fields (the hash
modulo the group size, as bmv2 does). Members and groups are shared by every table using
the profile, and are managed through `Switch.action_profile(name)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import AlreadyExists, InvalidArgument, NotFound, ResourceExhausted
from .names import resolve_name


@dataclass
class Member:
    member_id: int
    action: str                      # full action name
    params: dict[str, int]


@dataclass
class Group:
    group_id: int
    members: list[int] = field(default_factory=list)


class ActionProfile:
    """Members (and, with a `selector` hash, groups) of one action profile/selector."""

    def __init__(self, name: str, size: int | None, selector=None, output_width=None):
        self.name = name
        self.size = size or 1024
        self.selector = selector                 # fields -> int, or None for a profile
        self.output_width = output_width
        self.actions: dict[str, list[tuple[str, int]]] = {}   # name -> params of its tables
        self.members: dict[int, Member] = {}
        self.groups: dict[int, Group] = {}
        self.references: dict[tuple[str, int], int] = {}      # ("member"/"group", id) -> uses

    # -- members ---------------------------------------------------------------------------

    def _check_action(self, action: str, params: dict) -> tuple[str, dict]:
        try:
            full = resolve_name(action, self.actions, "action")
        except NotFound:
            raise InvalidArgument(f"{self.name}: {action!r} is not an action of its "
                                  "tables") from None
        params = dict(params or {})
        for pname, width in self.actions[full]:
            value = params.get(pname)
            if not isinstance(value, int) or value < 0 or value >> width:
                raise InvalidArgument(f"{self.name}: action {full} parameter {pname} "
                                      f"= {value!r} is missing or wider than {width} bits")
        unknown = set(params) - {p for p, _ in self.actions[full]}
        if unknown:
            raise InvalidArgument(f"{self.name}: unknown parameter(s) {', '.join(unknown)}")
        return full, params

    def insert_member(self, member_id: int, action: str, params: dict | None = None) -> None:
        if member_id in self.members:
            raise AlreadyExists(f"{self.name}: member {member_id} exists")
        if len(self.members) >= self.size:
            raise ResourceExhausted(f"{self.name} is full ({self.size} members)")
        self.members[member_id] = Member(member_id, *self._check_action(action, params))

    def modify_member(self, member_id: int, action: str, params: dict | None = None) -> None:
        self.member(member_id)
        self.members[member_id] = Member(member_id, *self._check_action(action, params))

    def delete_member(self, member_id: int) -> None:
        self.member(member_id)
        if self.references.get(("member", member_id)) or any(
                member_id in g.members for g in self.groups.values()):
            raise InvalidArgument(f"{self.name}: member {member_id} is still in use")
        del self.members[member_id]

    def member(self, member_id: int) -> Member:
        return self._existing(self.members, member_id, "member")

    def _existing(self, items: dict, key: int, what: str):
        """`items[key]`, NotFound when there is no such member or group."""
        try:
            return items[key]
        except KeyError:
            raise NotFound(f"{self.name}: no {what} {key}") from None

    # -- groups ----------------------------------------------------------------------------

    def _check_group_members(self, members) -> list[int]:
        if self.selector is None:
            raise InvalidArgument(f"{self.name} is an action profile: it has no groups")
        members = list(members)
        for m in members:
            self.member(m)
        return members

    def insert_group(self, group_id: int, members=()) -> None:
        if group_id in self.groups:
            raise AlreadyExists(f"{self.name}: group {group_id} exists")
        self.groups[group_id] = Group(group_id, self._check_group_members(members))

    def modify_group(self, group_id: int, members) -> None:
        self.group(group_id).members = self._check_group_members(members)

    def delete_group(self, group_id: int) -> None:
        self.group(group_id)
        if self.references.get(("group", group_id)):
            raise InvalidArgument(f"{self.name}: group {group_id} is still in use")
        del self.groups[group_id]

    def group(self, group_id: int) -> Group:
        return self._existing(self.groups, group_id, "group")

    # -- data plane ------------------------------------------------------------------------

    def choose(self, kind: str, ref_id: int, fields) -> Member | None:
        """The member an entry's reference designates for this packet (None: empty group)."""
        if kind == "member":
            return self.members.get(ref_id)
        group = self.groups.get(ref_id)
        if group is None or not group.members:
            return None
        h = self.selector(fields)
        if self.output_width:
            h &= (1 << self.output_width) - 1
        return self.members.get(group.members[h % len(group.members)])
