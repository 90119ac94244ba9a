"""P4Runtime action profiles and selectors: ActionProfileMember and ActionProfileGroup
entities, and the table-entry actions that point into a profile (a member id, a group id, or
a one-shot action set).

Members and groups live in the switch's `ActionProfile` (runtime/profiles.py), shared by the
tables the P4Info lists in `table_ids`. A group member's `weight` is carried out by listing
the member that many times in the runtime group, so the selector's hash (modulo the list's
length) picks it in proportion; the sum of weights is held to `max_group_size` when the
P4Info sets one (`sum_of_weights` semantics). `watch_port` is kept and read back; this switch
has no port liveness, so it never removes a member.

A one-shot action set (P4Runtime 9.2.3) makes hidden members and a group in the profile,
with ids from ONE_SHOT_BASE up that reads of members and groups leave out; the entry reads
back as the action set it was written with, and the hidden objects go when the entry goes.
"""
import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .errors import P4RuntimeError, invalid, not_found

Update = p4runtime_pb2.Update
ONE_SHOT_BASE = 1 << 32      # above every id a controller can give (uint32)


class ActionProfileEntities:
    """Mixed into EntityStore (which provides index, datapath, _decode_action_message)."""

    def _profiles_init(self):
        if not hasattr(self, "_groups"):
            self._groups: dict[tuple, list] = {}        # (profile id, group id) -> members
            self._one_shot: dict[tuple, tuple] = {}     # entry key -> (action set, ids)
            self._next_hidden = ONE_SHOT_BASE

    def _profile(self, profile_id: int) -> p4info_pb2.ActionProfile:
        try:
            return self.index.action_profiles[profile_id]
        except KeyError:
            raise not_found(f"no action profile with id {profile_id} in the P4Info") from None

    def profile_of_table(self, table) -> p4info_pb2.ActionProfile | None:
        if not table.implementation_id:
            return None
        return self._profile(table.implementation_id)

    def _member_action(self, profile, action_message) -> tuple[str, dict]:
        """(action name, params) of a member's action: an action of the profile's tables."""
        if not profile.table_ids:
            raise invalid(f"action profile {profile.preamble.name} has no table")
        table = self.index.table(profile.table_ids[0])
        return self._decode_action_message(table, action_message, for_default=False)

    # ---- members -------------------------------------------------------------------------

    def _write_action_profile_member(self, update_type, m) -> None:
        self._profiles_init()
        profile = self._profile(m.action_profile_id)
        name = profile.preamble.name
        if update_type == Update.DELETE:
            self.datapath.call(lambda sw: sw.action_profile(name).delete_member(m.member_id))
            return
        action, params = self._member_action(profile, m.action)

        def apply(sw):
            ap = sw.action_profile(name)
            if update_type == Update.INSERT:
                ap.insert_member(m.member_id, action, params)
            else:
                ap.modify_member(m.member_id, action, params)
        self.datapath.call(apply)

    def _read_action_profile_member(self, wanted) -> list:
        def encode(profile, member_id, member):
            message = p4runtime_pb2.ActionProfileMember(
                action_profile_id=profile.preamble.id, member_id=member_id)
            self._encode_action(message.action, member.action, member.params)
            return message
        return self._read_profile_items(wanted, "member", wanted.member_id,
                                        lambda ap: ap.members, encode)

    def _read_profile_items(self, wanted, what: str, wanted_id: int, items_of, encode) -> list:
        """The members or groups (`what`; `items_of(runtime profile)` gives them by id) that
        a read asks for, as `encode(profile, id, item)` makes them: of the wanted profile or
        all, the wanted id or all (NOT_FOUND when it is not there). The one-shot ones that
        stand for table entries' actions are not shown."""
        profiles = ([self._profile(wanted.action_profile_id)] if wanted.action_profile_id
                    else list(self.index.action_profiles.values()))
        found = []
        for profile in profiles:
            items = self.datapath.call(
                lambda sw: dict(items_of(sw.action_profile(profile.preamble.name))))
            for item_id, item in sorted(items.items()):
                if item_id >= ONE_SHOT_BASE or (wanted_id and item_id != wanted_id):
                    continue
                found.append(encode(profile, item_id, item))
            if wanted_id and not found:
                raise not_found(f"{profile.preamble.name}: no {what} {wanted_id}")
        return found

    # ---- groups --------------------------------------------------------------------------

    def _group_list(self, profile, members) -> list[int]:
        """The runtime's member list for P4Runtime group members (weights as repeats)."""
        total, expanded, seen = 0, [], set()
        for member in members:
            if member.member_id in seen:
                raise invalid(f"member {member.member_id} is listed twice")
            seen.add(member.member_id)
            weight = member.weight or 1
            if weight < 0:
                raise invalid(f"member {member.member_id}: negative weight")
            total += weight
            expanded += [member.member_id] * weight
        if profile.max_group_size and total > profile.max_group_size:
            raise P4RuntimeError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, f"{profile.preamble.name}: the group's weights add up to {total}, more than "
                f"max_group_size {profile.max_group_size}")
        return expanded

    def _write_action_profile_group(self, update_type, g) -> None:
        self._profiles_init()
        profile = self._profile(g.action_profile_id)
        name = profile.preamble.name
        key = (profile.preamble.id, g.group_id)
        if update_type == Update.DELETE:
            self.datapath.call(lambda sw: sw.action_profile(name).delete_group(g.group_id))
            self._groups.pop(key, None)
            return
        if not profile.with_selector:
            raise invalid(f"{name} is an action profile without a selector: it has no groups")
        if g.max_size and profile.max_group_size and g.max_size > profile.max_group_size:
            raise invalid(f"group max_size {g.max_size} is over the profile's max_group_size "
                          f"{profile.max_group_size}")
        expanded = self._group_list(profile, g.members)

        def apply(sw):
            ap = sw.action_profile(name)
            if update_type == Update.INSERT:
                ap.insert_group(g.group_id, expanded)
            else:
                ap.modify_group(g.group_id, expanded)
        self.datapath.call(apply)
        self._groups[key] = [(m.member_id, m.weight or 1, m.watch_port) for m in g.members]

    def _read_action_profile_group(self, wanted) -> list:
        self._profiles_init()

        def encode(profile, group_id, _group):
            message = p4runtime_pb2.ActionProfileGroup(
                action_profile_id=profile.preamble.id, group_id=group_id)
            for member_id, weight, watch_port in self._groups.get(
                    (profile.preamble.id, group_id), []):
                message.members.add(member_id=member_id, weight=weight, watch_port=watch_port)
            return message
        return self._read_profile_items(wanted, "group", wanted.group_id,
                                        lambda ap: ap.groups, encode)

    # ---- table entries -------------------------------------------------------------------

    def write_profile_entry(self, update_type, table, match, priority, entry_key,
                            table_action) -> None:
        """Insert, modify or delete an entry of a table with an action profile."""
        self._profiles_init()
        name = table.preamble.name
        if update_type == Update.DELETE:
            self.datapath.call(lambda sw: sw.table(name).delete(match, priority))
            self.drop_one_shot(table, self._one_shot.pop(entry_key, None))
            return
        ref, hidden = self.profile_reference(table, table_action)

        def apply(sw):
            t = sw.table(name)
            if update_type == Update.INSERT:
                t.insert(match, priority=priority, **ref)
            else:
                t.modify(match, priority=priority, **ref)
        try:
            self.datapath.call(apply)
        except P4RuntimeError:
            self.drop_one_shot(table, hidden)
            raise
        if update_type == Update.MODIFY:
            self.drop_one_shot(table, self._one_shot.pop(entry_key, None))
        if hidden is not None:
            self._one_shot[entry_key] = hidden

    def profile_reference(self, table, table_action):
        """(Table.insert/modify keywords, member= or group=; the one-shot objects or None)
        for an entry of a table with an action profile; a one-shot action set makes its
        hidden members and group (drop_one_shot removes them)."""
        self._profiles_init()
        profile = self.profile_of_table(table)
        kind = table_action.WhichOneof("type")
        if kind == "action_profile_member_id":
            return {"member": table_action.action_profile_member_id}, None
        if kind == "action_profile_group_id":
            return {"group": table_action.action_profile_group_id}, None
        if kind != "action_profile_action_set":
            raise invalid(f"table {table.preamble.name} has an action profile: its entries "
                          "give a member, a group or an action set, not an action")
        actions = table_action.action_profile_action_set.action_profile_actions
        if not actions:
            raise invalid("an empty action set")
        decoded = [(self._member_action(profile, a.action), a.weight or 1, a.watch_port)
                   for a in actions]
        if not profile.with_selector and len(decoded) > 1:
            raise invalid(f"{profile.preamble.name} has no selector: an action set holds "
                          "one action")
        base = self._next_hidden
        self._next_hidden += len(decoded) + 1
        member_ids = list(range(base, base + len(decoded)))
        group_id = base + len(decoded)
        name = profile.preamble.name

        def make(sw):
            ap = sw.action_profile(name)
            for member_id, ((action, params), _, _) in zip(member_ids, decoded):
                ap.insert_member(member_id, action, params)
            if profile.with_selector:
                ap.insert_group(group_id, [m for m, (_, w, _) in zip(member_ids, decoded)
                                           for _ in range(w)])
        self.datapath.call(make)
        hidden = (table_action.action_profile_action_set,
                  (member_ids, group_id if profile.with_selector else None))
        return ({"group": group_id} if profile.with_selector else {"member": member_ids[0]}), hidden

    def drop_one_shot(self, table, held) -> None:
        """Remove the hidden members and group of a one-shot action set."""
        if held is None:
            return
        _, (member_ids, group_id) = held
        name = self.profile_of_table(table).preamble.name

        def drop(sw):
            ap = sw.action_profile(name)
            if group_id is not None:
                ap.delete_group(group_id)
            for member_id in member_ids:
                ap.delete_member(member_id)
        self.datapath.call(drop)

    def encode_profile_action(self, message: p4runtime_pb2.TableAction, table, row,
                              entry_key) -> None:
        """The action of a read entry of a table with an action profile."""
        self._profiles_init()
        held = self._one_shot.get(entry_key)
        if held is not None:
            message.action_profile_action_set.CopyFrom(held[0])
        elif row.member is not None:
            message.action_profile_member_id = row.member
        elif row.group is not None:
            message.action_profile_group_id = row.group

