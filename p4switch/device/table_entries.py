"""P4Runtime table entries <-> the Switch's tables: match fields of every kind, priorities,
actions, default entries, and the direct counters and meters that live on entries.

A mixin of `entities.EntityStore` (it uses the store's `index` and `datapath`); every entry is
decoded and checked completely before the switch is touched.
"""
import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime.tables import LPM, Exact, Optional, Range, Ternary
from . import bytestrings
from .errors import P4RuntimeError, invalid, unimplemented

Update = p4runtime_pb2.Update
MatchType = p4info_pb2.MatchField
_PRIORITY_KINDS = (MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL)
_MATCH_ONEOF = {MatchType.EXACT: "exact", MatchType.LPM: "lpm", MatchType.TERNARY: "ternary",
                MatchType.RANGE: "range", MatchType.OPTIONAL: "optional"}


class TableEntries:
    """Table entries, default entries, direct counters and direct meters."""


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
            raise invalid(f"table {table.preamble.name} has no action profile: its entries "
                          f"give an action, not {kind}")
        return self._decode_action_message(table, table_action.action, for_default)

    def _decode_action_message(self, table, action_message, for_default: bool):
        """(action name, params) of a p4runtime Action for `table`."""
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
        if table.implementation_id and not entry.HasField("counter_data") \
                and not entry.HasField("meter_config"):
            self.write_profile_entry(update_type, table, match, priority, key, entry.action)
            if update_type == Update.DELETE:
                self._entry_metadata.pop(key, None)
            else:
                self._entry_metadata[key] = entry.metadata
            return
        if update_type == Update.DELETE:
            self.datapath.call(lambda sw: sw.table(name).delete(match, priority))
            self._entry_metadata.pop(key, None)
            return
        action, params = self._decode_action(table, entry.action, for_default=False)
        if entry.HasField("meter_config"):
            check_meter_config(entry.meter_config)

        def apply(sw):
            t = sw.table(name)
            if update_type == Update.INSERT:
                t.insert(match, action, params, priority)
            else:
                t.modify(match, action, params, priority)
            if entry.HasField("counter_data"):
                # through the direct counter, so a native switch's C entries get them too
                sw.direct_counter(direct_counter.preamble.name).write(
                    match, entry.counter_data.packet_count, entry.counter_data.byte_count,
                    priority)
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
        key = (table.preamble.id, _match_identity(row.match), row.priority)
        if table.implementation_id:
            self.encode_profile_action(message.action, table, row, key)
        else:
            self._encode_action(message.action.action, row.action, row.params)
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
            set_meter_config(message, config)
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

        counter = self.index.direct_counter_of_table[table.preamble.id].preamble.name
        self.datapath.call(lambda sw: sw.direct_counter(counter).write(
            match, entry.data.packet_count, entry.data.byte_count, priority))


    # ---- direct meters ---------------------------------------------------------------------

    def _write_direct_meter_entry(self, update_type, entry) -> None:
        if update_type != Update.MODIFY:
            raise invalid("direct meter entries can only be modified")
        table = self.index.table(entry.table_entry.table_id)
        direct_meter = self.index.direct_meter_of_table.get(table.preamble.id)
        if direct_meter is None:
            raise invalid(f"table {table.preamble.name} has no direct meter")
        match, priority = self._entry_key(table, entry.table_entry)
        config = entry.config
        check_meter_config(config)
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


def check_meter_config(config: p4runtime_pb2.MeterConfig) -> None:
    if min(config.cir, config.cburst, config.pir, config.pburst) < 0:
        raise invalid("meter rates and bursts must not be negative")
    if config.pir < config.cir:
        raise invalid("meter peak rate (pir) must not be below the committed rate (cir)")


def set_meter_config(message, config) -> None:
    """Fill `message.meter_config` (TableEntry) or `message.config` (MeterEntry) from the
    runtime's (cir, cburst, pir, pburst), or leave it unset for an unconfigured meter."""
    if config is None:
        return
    target = message.meter_config if hasattr(message, "meter_config") else message.config
    target.cir, target.cburst, target.pir, target.pburst = config
