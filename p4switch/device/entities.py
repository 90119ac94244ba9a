"""P4Runtime entities <-> the Switch API: Write updates and Read requests.

Table entries (every match kind, priorities, default entries, direct counters and meters),
counters, meters, registers, multicast groups, clone sessions and digest configs. Every
update is checked completely before it touches the switch, so a refused update leaves the
state as it was. Reads follow the spec's wildcards (an unset id or index reads them all).
"""
import logging

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime.tables import LPM, Exact, Optional, Range, Ternary
from . import bytestrings
from .errors import P4RuntimeError, invalid, not_found, unimplemented
from .p4info_index import P4InfoIndex, register_width

Update = p4runtime_pb2.Update
_log = logging.getLogger("p4switch.device.entities")
MatchType = p4info_pb2.MatchField
_PRIORITY_KINDS = (MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL)
_MATCH_ONEOF = {MatchType.EXACT: "exact", MatchType.LPM: "lpm", MatchType.TERNARY: "ternary",
                MatchType.RANGE: "range", MatchType.OPTIONAL: "optional"}


def _update_name(update_type: int) -> str:
    return Update.Type.Name(update_type)


class EntityStore:
    """Applies Write updates and answers Reads for one running pipeline."""

    def __init__(self, index: P4InfoIndex, datapath):
        self.index = index
        self.datapath = datapath
        self._enabled_digests: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        self._entry_metadata: dict[tuple, bytes] = {}

    # ---- dispatch --------------------------------------------------------------------------

    def write(self, update: p4runtime_pb2.Update) -> P4RuntimeError | None:
        """Apply one update; returns the error (state unchanged) or None."""
        try:
            if update.type == Update.UNSPECIFIED:
                raise invalid("update type is UNSPECIFIED")
            kind = update.entity.WhichOneof("entity")
            handler = getattr(self, f"_write_{kind}", None)
            if handler is None:
                raise unimplemented(f"writing {kind or 'an empty entity'} is not supported")
            handler(update.type, getattr(update.entity, kind))
            return None
        except P4RuntimeError as e:
            return e
        except Exception as e:  # noqa: BLE001 - a bug here must not take the server down
            _log.exception("update failed unexpectedly")
            return P4RuntimeError(grpc.StatusCode.INTERNAL, f"internal error: {e}")

    def read(self, entity: p4runtime_pb2.Entity) -> list:
        kind = entity.WhichOneof("entity")
        handler = getattr(self, f"_read_{kind}", None)
        if handler is None:
            raise unimplemented(f"reading {kind or 'an empty entity'} is not supported")
        return [self._wrap(kind, item) for item in handler(getattr(entity, kind))]

    @staticmethod
    def _wrap(kind: str, message) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        getattr(entity, kind).CopyFrom(message)
        return entity

    def digest_enabled(self, digest_id: int) -> bool:
        return digest_id in self._enabled_digests

    # ---- table entries ---------------------------------------------------------------------

    def _needs_priority(self, table) -> bool:
        kinds = [f.match_type for f in table.match_fields]
        return any(k in _PRIORITY_KINDS for k in kinds) or kinds.count(MatchType.LPM) > 1

    def _decode_match(self, table, field_matches) -> dict:
        """{field name: match value} from FieldMatches, wildcards left out."""
        fields = {f.id: f for f in table.match_fields}
        match, seen = {}, set()
        for fm in field_matches:
            info = fields.get(fm.field_id)
            if info is None:
                raise invalid(f"table {table.preamble.name} has no match field id {fm.field_id}")
            if fm.field_id in seen:
                raise invalid(f"match field {info.name} given twice")
            seen.add(fm.field_id)
            expected = _MATCH_ONEOF.get(info.match_type)
            given = fm.WhichOneof("field_match_type")
            if expected is None:
                raise unimplemented(f"match field {info.name}: match kind not supported")
            if given != expected:
                raise invalid(f"match field {info.name} is {expected}, got {given}")
            value = self._decode_field(info, getattr(fm, given))
            if value is not None:
                match[info.name] = value
        for info in table.match_fields:
            if info.match_type == MatchType.EXACT and info.name not in match:
                raise invalid(f"exact match field {info.name} is missing")
        return match

    @staticmethod
    def _decode_field(info, fm):
        """One match value, or None for an explicit don't-care (which the spec lets us drop)."""
        width, what = info.bitwidth, f"match field {info.name}"
        if info.match_type == MatchType.EXACT:
            return Exact(bytestrings.decode(fm.value, width, what))
        if info.match_type == MatchType.LPM:
            value = bytestrings.decode(fm.value, width, what)
            if not 0 <= fm.prefix_len <= width:
                raise invalid(f"{what}: prefix length {fm.prefix_len} out of 0..{width}")
            if value & ((1 << (width - fm.prefix_len)) - 1):
                raise invalid(f"{what}: bits beyond the /{fm.prefix_len} prefix are set")
            return LPM(value, fm.prefix_len) if fm.prefix_len else None
        if info.match_type == MatchType.TERNARY:
            value = bytestrings.decode(fm.value, width, what)
            mask = bytestrings.decode(fm.mask, width, what + " mask")
            if value & ~mask:
                raise invalid(f"{what}: value has bits outside the mask")
            return Ternary(value, mask) if mask else None
        if info.match_type == MatchType.RANGE:
            low = bytestrings.decode(fm.low, width, what + " low")
            high = bytestrings.decode(fm.high, width, what + " high")
            if low > high:
                raise invalid(f"{what}: low {low} is above high {high}")
            return None if (low, high) == (0, (1 << width) - 1) else Range(low, high)
        return Optional(bytestrings.decode(fm.value, width, what))

    def _entry_key(self, table, entry: p4runtime_pb2.TableEntry) -> tuple[dict, int | None]:
        """(match, priority) as the Switch takes them, with the spec's priority rules."""
        match = self._decode_match(table, entry.match)
        if self._needs_priority(table):
            if entry.priority <= 0:
                raise invalid(f"table {table.preamble.name} needs a priority > 0")
            return match, entry.priority
        if entry.priority != 0:
            raise invalid(f"table {table.preamble.name} takes no priority "
                          "(only ternary, range or optional matches do)")
        return match, None

    def _decode_action(self, table, table_action, for_default: bool) -> tuple[str, dict]:
        kind = table_action.WhichOneof("type")
        if kind is None:
            raise invalid("the entry has no action")
        if kind != "action":
            raise unimplemented(f"{kind}: action profiles/selectors are not supported")
        action_message = table_action.action
        action = self.index.table_action(table, action_message.action_id)
        scope = next(r.scope for r in table.action_refs if r.id == action.preamble.id)
        if for_default and scope == p4info_pb2.ActionRef.TABLE_ONLY:
            raise invalid(f"action {action.preamble.name} cannot be a default action")
        if not for_default and scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
            raise invalid(f"action {action.preamble.name} is only a default action")
        params_by_id = {p.id: p for p in action.params}
        params = {}
        for param in action_message.params:
            info = params_by_id.get(param.param_id)
            if info is None:
                raise invalid(f"action {action.preamble.name} has no parameter id "
                              f"{param.param_id}")
            if info.name in params:
                raise invalid(f"parameter {info.name} given twice")
            params[info.name] = bytestrings.decode(
                param.value, info.bitwidth, f"parameter {info.name}")
        missing = [p.name for p in action.params if p.name not in params]
        if missing:
            raise invalid(f"action {action.preamble.name}: missing parameter(s) "
                          f"{', '.join(missing)}")
        return action.preamble.name, params

    def _write_table_entry(self, update_type: int, entry: p4runtime_pb2.TableEntry) -> None:
        table = self.index.table(entry.table_id)
        name = table.preamble.name
        if entry.idle_timeout_ns:
            raise unimplemented("idle timeouts are not supported")
        if entry.is_default_action:
            self._write_default_entry(update_type, table, entry)
            return
        match, priority = self._entry_key(table, entry)
        direct_counter = self.index.direct_counter_of_table.get(table.preamble.id)
        direct_meter = self.index.direct_meter_of_table.get(table.preamble.id)
        if entry.HasField("counter_data") and direct_counter is None:
            raise invalid(f"table {name} has no direct counter")
        if entry.HasField("meter_config") and direct_meter is None:
            raise invalid(f"table {name} has no direct meter")
        key = (table.preamble.id, _match_identity(match), priority)
        if update_type == Update.DELETE:
            self.datapath.call(lambda sw: sw.table(name).delete(match, priority))
            self._entry_metadata.pop(key, None)
            return
        action, params = self._decode_action(table, entry.action, for_default=False)
        if entry.HasField("meter_config"):
            _check_meter_config(entry.meter_config)

        def apply(sw):
            t = sw.table(name)
            if update_type == Update.INSERT:
                row = t.insert(match, action, params, priority)
            else:
                row = t.modify(match, action, params, priority)
            if entry.HasField("counter_data"):
                row.packets = entry.counter_data.packet_count
                row.bytes = entry.counter_data.byte_count
            if entry.HasField("meter_config"):
                config = entry.meter_config
                sw.direct_meter(direct_meter.preamble.name).set_config(
                    match, config.cir, config.cburst, config.pir, config.pburst, priority)
        self.datapath.call(apply)
        self._entry_metadata[key] = entry.metadata

    def _write_default_entry(self, update_type, table, entry) -> None:
        name = table.preamble.name
        if entry.match or entry.priority:
            raise invalid("a default entry has no match and no priority")
        if update_type == Update.INSERT:
            raise invalid("default entries cannot be inserted, only modified")
        if table.const_default_action_id:
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                                 f"table {name} has a const default action")
        if update_type == Update.DELETE:
            self.datapath.call(lambda sw: sw.table(name).reset_default())
            return
        action, params = self._decode_action(table, entry.action, for_default=True)
        self.datapath.call(lambda sw: sw.table(name).set_default(action, params))

    def _read_table_entry(self, wanted: p4runtime_pb2.TableEntry) -> list:
        tables = ([self.index.table(wanted.table_id)] if wanted.table_id
                  else list(self.index.tables.values()))
        if wanted.is_default_action:
            if not wanted.table_id:
                raise invalid("reading default entries needs a table id")
            return [self._default_entry_message(tables[0])]
        if wanted.match and not wanted.table_id:
            raise invalid("reading by match needs a table id")
        want_counters = wanted.HasField("counter_data")
        found = []
        for table in tables:
            wanted_key = self._entry_key(table, wanted) if wanted.match else None
            rows = self.datapath.call(lambda sw: sw.table(table.preamble.name).entries())
            for row in rows:
                if wanted_key is not None and (
                        _match_identity(row.match) != _match_identity(wanted_key[0])
                        or row.priority != wanted_key[1]):
                    continue
                if wanted_key is None and wanted.priority and row.priority != wanted.priority:
                    continue
                found.append(self._entry_message(table, row, want_counters))
        return found

    def _entry_message(self, table, row, with_counters: bool) -> p4runtime_pb2.TableEntry:
        message = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
        fields = {f.name: f for f in table.match_fields}
        for field_name, value in row.match.items():
            _encode_field(message.match.add(field_id=fields[field_name].id), value)
        if row.priority is not None:
            message.priority = row.priority
        self._encode_action(message.action.action, row.action, row.params)
        key = (table.preamble.id, _match_identity(row.match), row.priority)
        metadata = self._entry_metadata.get(key)
        if metadata:
            message.metadata = metadata
        if row.is_const:
            message.is_const = True
        if with_counters and table.preamble.id in self.index.direct_counter_of_table:
            message.counter_data.packet_count = row.packets
            message.counter_data.byte_count = row.bytes
        direct_meter = self.index.direct_meter_of_table.get(table.preamble.id)
        if direct_meter is not None:
            config = self.datapath.call(lambda sw: sw.direct_meter(
                direct_meter.preamble.name).get_config(row.match, row.priority))
            _set_meter_config(message, config)
        return message

    def _default_entry_message(self, table) -> p4runtime_pb2.TableEntry:
        action, params = self.datapath.call(
            lambda sw: sw.table(table.preamble.name).get_default())
        message = p4runtime_pb2.TableEntry(table_id=table.preamble.id, is_default_action=True)
        self._encode_action(message.action.action, action, params)
        return message

    def _encode_action(self, message: p4runtime_pb2.Action, action_name: str,
                       params: dict) -> None:
        action = self._action_by_name(action_name)
        message.action_id = action.preamble.id
        for param in action.params:
            message.params.add(param_id=param.id,
                               value=bytestrings.encode(params[param.name]))

    def _action_by_name(self, name: str):
        for action in self.index.actions.values():
            if action.preamble.name == name or action.preamble.name.endswith("." + name):
                return action
        raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"action {name} is not in the P4Info")

    # ---- direct counters -------------------------------------------------------------------

    def _direct_rows(self, table_entry: p4runtime_pb2.TableEntry):
        """[(table, row)] that a DirectCounterEntry's table_entry designates."""
        if table_entry.table_id:
            table = self.index.table(table_entry.table_id)
            if table.preamble.id not in self.index.direct_counter_of_table:
                raise invalid(f"table {table.preamble.name} has no direct counter")
            probe = p4runtime_pb2.TableEntry()
            probe.CopyFrom(table_entry)
            probe.counter_data.SetInParent()
            return [(table, m) for m in self._read_table_entry(probe)]
        found = []
        for table_id in self.index.direct_counter_of_table:
            probe = p4runtime_pb2.TableEntry(table_id=table_id)
            probe.counter_data.SetInParent()
            found += [(self.index.table(table_id), m) for m in self._read_table_entry(probe)]
        return found

    def _read_direct_counter_entry(self, wanted: p4runtime_pb2.DirectCounterEntry) -> list:
        found = []
        for _, message in self._direct_rows(wanted.table_entry):
            data = message.counter_data
            message.ClearField("counter_data")
            found.append(p4runtime_pb2.DirectCounterEntry(table_entry=message, data=data))
        return found

    def _write_direct_counter_entry(self, update_type, entry) -> None:
        if update_type != Update.MODIFY:
            raise invalid("direct counter entries can only be modified")
        table = self.index.table(entry.table_entry.table_id)
        if table.preamble.id not in self.index.direct_counter_of_table:
            raise invalid(f"table {table.preamble.name} has no direct counter")
        match, priority = self._entry_key(table, entry.table_entry)

        def apply(sw):
            row = sw.table(table.preamble.name).get(match, priority)
            row.packets, row.bytes = entry.data.packet_count, entry.data.byte_count
        self.datapath.call(apply)

    # ---- indexed counters, meters, registers -----------------------------------------------

    @staticmethod
    def _indices(info, index_message, has_index: bool) -> range:
        if not has_index:
            return range(info.size)
        if not 0 <= index_message.index < info.size:
            raise P4RuntimeError(grpc.StatusCode.OUT_OF_RANGE,
                                 f"{info.preamble.name}: index {index_message.index} is not "
                                 f"in 0..{info.size - 1}")
        return range(index_message.index, index_message.index + 1)

    def _all_or_one(self, items: dict, object_id: int, getter):
        return [getter(object_id)] if object_id else list(items.values())

    def _read_counter_entry(self, wanted: p4runtime_pb2.CounterEntry) -> list:
        found = []
        for info in self._all_or_one(self.index.counters, wanted.counter_id,
                                     self.index.counter):
            indices = self._indices(info, wanted.index, wanted.HasField("index"))
            name = info.preamble.name
            values = self.datapath.call(
                lambda sw: [sw.counter(name).read(i) for i in indices])
            for i, (packets, byte_count) in zip(indices, values):
                message = p4runtime_pb2.CounterEntry(counter_id=info.preamble.id)
                message.index.index = i
                message.data.packet_count, message.data.byte_count = packets, byte_count
                found.append(message)
        return found

    def _write_counter_entry(self, update_type, entry: p4runtime_pb2.CounterEntry) -> None:
        if update_type != Update.MODIFY:
            raise invalid("counter entries can only be modified")
        info = self.index.counter(entry.counter_id)
        indices = self._indices(info, entry.index, entry.HasField("index"))
        name = info.preamble.name
        packets, byte_count = entry.data.packet_count, entry.data.byte_count
        self.datapath.call(lambda sw: [sw.counter(name).write(i, packets, byte_count)
                                       for i in indices])

    def _read_register_entry(self, wanted: p4runtime_pb2.RegisterEntry) -> list:
        found = []
        for info in self._all_or_one(self.index.registers, wanted.register_id,
                                     self.index.register):
            indices = self._indices(info, wanted.index, wanted.HasField("index"))
            name = info.preamble.name
            values = self.datapath.call(
                lambda sw: [sw.register(name).read(i) for i in indices])
            for i, value in zip(indices, values):
                message = p4runtime_pb2.RegisterEntry(register_id=info.preamble.id)
                message.index.index = i
                message.data.bitstring = bytestrings.encode(value)
                found.append(message)
        return found

    def _write_register_entry(self, update_type, entry: p4runtime_pb2.RegisterEntry) -> None:
        if update_type != Update.MODIFY:
            raise invalid("register entries can only be modified")
        info = self.index.register(entry.register_id)
        indices = self._indices(info, entry.index, entry.HasField("index"))
        if entry.data.WhichOneof("data") != "bitstring":
            raise invalid(f"register {info.preamble.name}: data must be a bitstring")
        value = bytestrings.decode(entry.data.bitstring, register_width(info),
                                   f"register {info.preamble.name} value")
        name = info.preamble.name
        self.datapath.call(lambda sw: [sw.register(name).write(i, value) for i in indices])

    def _read_meter_entry(self, wanted: p4runtime_pb2.MeterEntry) -> list:
        found = []
        for info in self._all_or_one(self.index.meters, wanted.meter_id, self.index.meter):
            for i in self._indices(info, wanted.index, wanted.HasField("index")):
                message = p4runtime_pb2.MeterEntry(meter_id=info.preamble.id)
                message.index.index = i
                name = info.preamble.name
                _set_meter_config(message, self.datapath.call(
                    lambda sw: sw.meter(name).get_config(i)))
                found.append(message)
        return found

    def _write_meter_entry(self, update_type, entry: p4runtime_pb2.MeterEntry) -> None:
        if update_type != Update.MODIFY:
            raise invalid("meter entries can only be modified")
        info = self.index.meter(entry.meter_id)
        indices = self._indices(info, entry.index, entry.HasField("index"))
        name = info.preamble.name
        if entry.HasField("config"):
            config = entry.config
            _check_meter_config(config)
            self.datapath.call(lambda sw: [sw.meter(name).set_config(
                i, config.cir, config.cburst, config.pir, config.pburst) for i in indices])
        else:
            self.datapath.call(lambda sw: [sw.meter(name).reset(i) for i in indices])

    def _write_direct_meter_entry(self, update_type, entry) -> None:
        if update_type != Update.MODIFY:
            raise invalid("direct meter entries can only be modified")
        table = self.index.table(entry.table_entry.table_id)
        direct_meter = self.index.direct_meter_of_table.get(table.preamble.id)
        if direct_meter is None:
            raise invalid(f"table {table.preamble.name} has no direct meter")
        match, priority = self._entry_key(table, entry.table_entry)
        config = entry.config
        _check_meter_config(config)
        self.datapath.call(lambda sw: sw.direct_meter(direct_meter.preamble.name).set_config(
            match, config.cir, config.cburst, config.pir, config.pburst, priority))

    def _read_direct_meter_entry(self, wanted) -> list:
        table_ids = ([wanted.table_entry.table_id] if wanted.table_entry.table_id
                     else list(self.index.direct_meter_of_table))
        found = []
        for table_id in table_ids:
            table = self.index.table(table_id)
            if table_id not in self.index.direct_meter_of_table:
                raise invalid(f"table {table.preamble.name} has no direct meter")
            probe = p4runtime_pb2.TableEntry()
            probe.CopyFrom(wanted.table_entry)
            probe.table_id = table_id
            for message in self._read_table_entry(probe):
                result = p4runtime_pb2.DirectMeterEntry()
                if message.HasField("meter_config"):
                    result.config.CopyFrom(message.meter_config)
                    message.ClearField("meter_config")
                result.table_entry.CopyFrom(message)
                found.append(result)
        return found

    # ---- packet replication engine ---------------------------------------------------------

    def _write_packet_replication_engine_entry(self, update_type, entry) -> None:
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            group = entry.multicast_group_entry
            group_id = group.multicast_group_id
            if group_id == 0:
                raise invalid("multicast group id 0 is reserved")
            replicas = [_replica(r) for r in group.replicas]
            operation = {Update.INSERT: lambda pre: pre.insert_multicast_group(group_id, replicas),
                         Update.MODIFY: lambda pre: pre.modify_multicast_group(group_id, replicas),
                         Update.DELETE: lambda pre: pre.delete_multicast_group(group_id)}
        elif kind == "clone_session_entry":
            session = entry.clone_session_entry
            session_id = session.session_id
            if session_id == 0:
                raise invalid("clone session id 0 is reserved")
            replicas = [_replica(r) for r in session.replicas]
            extra = (session.packet_length_bytes, session.class_of_service)
            operation = {
                Update.INSERT: lambda pre: pre.insert_clone_session(session_id, replicas, *extra),
                Update.MODIFY: lambda pre: pre.modify_clone_session(session_id, replicas, *extra),
                Update.DELETE: lambda pre: pre.delete_clone_session(session_id)}
        else:
            raise invalid("empty packet replication engine entry")
        self.datapath.call(lambda sw: operation[update_type](sw.pre))

    def _read_packet_replication_engine_entry(self, wanted) -> list:
        kind = wanted.WhichOneof("type")
        if kind == "multicast_group_entry":
            group_id = wanted.multicast_group_entry.multicast_group_id
            groups = self.datapath.call(lambda sw: dict(sw.pre.groups))
            if group_id:
                if group_id not in groups:
                    raise not_found(f"no multicast group {group_id}")
                groups = {group_id: groups[group_id]}
            found = []
            for gid in sorted(groups):
                message = p4runtime_pb2.PacketReplicationEngineEntry()
                message.multicast_group_entry.multicast_group_id = gid
                _add_replicas(message.multicast_group_entry.replicas, groups[gid])
                found.append(message)
            return found
        if kind == "clone_session_entry":
            session_id = wanted.clone_session_entry.session_id
            sessions = self.datapath.call(lambda sw: dict(sw.pre.sessions))
            if session_id:
                if session_id not in sessions:
                    raise not_found(f"no clone session {session_id}")
                sessions = {session_id: sessions[session_id]}
            found = []
            for sid in sorted(sessions):
                message = p4runtime_pb2.PacketReplicationEngineEntry()
                entry = message.clone_session_entry
                entry.session_id = sid
                entry.packet_length_bytes = sessions[sid].truncate
                entry.class_of_service = sessions[sid].class_of_service
                _add_replicas(entry.replicas, sessions[sid].replicas)
                found.append(message)
            return found
        raise invalid("empty packet replication engine entry")

    # ---- parser value sets -----------------------------------------------------------------

    def _value_set(self, value_set_id: int):
        try:
            return self.index.value_sets[value_set_id]
        except KeyError:
            raise not_found(f"no value set with id {value_set_id} in the P4Info") from None

    def _write_value_set_entry(self, update_type, entry: p4runtime_pb2.ValueSetEntry) -> None:
        if update_type != Update.MODIFY:
            raise invalid("value set entries can only be modified (the members are replaced)")
        info = self._value_set(entry.value_set_id)
        if info.size and len(entry.members) > info.size:
            raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                 f"value set {info.preamble.name} holds at most {info.size}")
        members = [self._value_set_member(info, member.match) for member in entry.members]
        name = info.preamble.name

        def replace(sw):
            value_set = sw.value_set(name)
            value_set.clear()
            for value, mask in members:
                value_set.add(value, mask)
        self.datapath.call(replace)

    def _value_set_member(self, info, field_matches) -> tuple:
        """(value, mask) as the runtime's ValueSet takes them: ints for a one-field set,
        tuples for a struct; mask None when every field matches exactly."""
        fields = {f.id: f for f in info.match}
        given = {}
        for fm in field_matches:
            field = fields.get(fm.field_id)
            if field is None or fm.field_id in given:
                raise invalid(f"value set {info.preamble.name}: bad or repeated field id "
                              f"{fm.field_id}")
            kind = fm.WhichOneof("field_match_type")
            if kind not in ("exact", "ternary", "lpm"):
                raise unimplemented(f"value set {info.preamble.name}: {kind} matches")
            probe = p4info_pb2.MatchField(name=field.name, bitwidth=field.bitwidth,
                                          match_type=getattr(MatchType, kind.upper()))
            given[fm.field_id] = self._decode_field(probe, getattr(fm, kind))
        values, masks = [], []
        for field in info.match:
            full = (1 << field.bitwidth) - 1
            match = given.get(field.id)
            if isinstance(match, Exact):
                values.append(match.value), masks.append(full)
            elif isinstance(match, Ternary):
                values.append(match.value), masks.append(match.mask)
            elif isinstance(match, LPM):
                values.append(match.value)
                masks.append(full ^ ((1 << (field.bitwidth - match.prefix_len)) - 1))
            else:
                values.append(0), masks.append(0)       # omitted: don't care
        exact = all(m == (1 << f.bitwidth) - 1 for m, f in zip(masks, info.match))
        if len(values) == 1:
            return values[0], None if exact else masks[0]
        return tuple(values), None if exact else tuple(masks)

    def _read_value_set_entry(self, wanted: p4runtime_pb2.ValueSetEntry) -> list:
        infos = ([self._value_set(wanted.value_set_id)] if wanted.value_set_id
                 else list(self.index.value_sets.values()))
        found = []
        for info in infos:
            name = info.preamble.name
            members = self.datapath.call(lambda sw: list(sw.value_set(name).members))
            message = p4runtime_pb2.ValueSetEntry(value_set_id=info.preamble.id)
            for value, mask in members:
                values = value if isinstance(value, tuple) else (value,)
                masks = (mask if isinstance(mask, tuple) else
                         (mask,) if mask is not None else (None,) * len(values))
                member = message.members.add()
                for field, v, m in zip(info.match, values, masks):
                    full = (1 << field.bitwidth) - 1
                    if m is None or m == full:
                        member.match.add(field_id=field.id).exact.value = bytestrings.encode(v)
                    elif m:
                        fm = member.match.add(field_id=field.id)
                        fm.ternary.value = bytestrings.encode(v & m)
                        fm.ternary.mask = bytestrings.encode(m)
            found.append(message)
        return found

    # ---- digests ---------------------------------------------------------------------------

    def _write_digest_entry(self, update_type, entry: p4runtime_pb2.DigestEntry) -> None:
        info = self.index.digest(entry.digest_id)
        enabled = entry.digest_id in self._enabled_digests
        if update_type == Update.INSERT and enabled:
            raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS,
                                 f"digest {info.preamble.name} is already configured")
        if update_type in (Update.MODIFY, Update.DELETE) and not enabled:
            raise not_found(f"digest {info.preamble.name} is not configured")
        if update_type == Update.DELETE:
            del self._enabled_digests[entry.digest_id]
        else:
            self._enabled_digests[entry.digest_id] = entry.config

    def _read_digest_entry(self, wanted: p4runtime_pb2.DigestEntry) -> list:
        ids = [wanted.digest_id] if wanted.digest_id else sorted(self._enabled_digests)
        found = []
        for digest_id in ids:
            self.index.digest(digest_id)
            if digest_id in self._enabled_digests:
                found.append(p4runtime_pb2.DigestEntry(
                    digest_id=digest_id, config=self._enabled_digests[digest_id]))
        return found


# ---- small conversions ---------------------------------------------------------------------

def _match_identity(match: dict) -> tuple:
    """A hashable form of a {field: match value} dict."""
    return tuple(sorted(match.items(), key=lambda item: item[0]))


def _encode_field(message: p4runtime_pb2.FieldMatch, value) -> None:
    if isinstance(value, Exact):
        message.exact.value = bytestrings.encode(value.value)
    elif isinstance(value, LPM):
        message.lpm.value = bytestrings.encode(value.value)
        message.lpm.prefix_len = value.prefix_len
    elif isinstance(value, Ternary):
        message.ternary.value = bytestrings.encode(value.value)
        message.ternary.mask = bytestrings.encode(value.mask)
    elif isinstance(value, Range):
        message.range.low = bytestrings.encode(value.low)
        message.range.high = bytestrings.encode(value.high)
    else:
        message.optional.value = bytestrings.encode(value.value)


def _replica(replica: p4runtime_pb2.Replica) -> tuple[int, int]:
    """(egress port, instance): the port from `port` (bytes, 1.4) or `egress_port` (uint32)."""
    if replica.port:
        return bytestrings.decode(replica.port, 32, "replica port"), replica.instance
    return replica.egress_port, replica.instance


def _add_replicas(container, replicas) -> None:
    for port, instance in replicas:
        container.add(egress_port=port, instance=instance)


def _check_meter_config(config: p4runtime_pb2.MeterConfig) -> None:
    if min(config.cir, config.cburst, config.pir, config.pburst) < 0:
        raise invalid("meter rates and bursts must not be negative")
    if config.pir < config.cir:
        raise invalid("meter peak rate (pir) must not be below the committed rate (cir)")


def _set_meter_config(message, config) -> None:
    """Fill `message.meter_config` (TableEntry) or `message.config` (MeterEntry) from the
    runtime's (cir, cburst, pir, pburst), or leave it unset for an unconfigured meter."""
    if config is None:
        return
    target = message.meter_config if hasattr(message, "meter_config") else message.config
    target.cir, target.cburst, target.pir, target.pburst = config
