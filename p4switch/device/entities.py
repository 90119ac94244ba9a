"""P4Runtime entities <-> the Switch API: Write updates and Read requests.

Table entries (in `table_entries`), action profile members and groups (`action_profiles`),
counters, meters, registers, multicast groups, clone
sessions, parser value sets and digest configs. Every update is checked completely before it
touches the switch, so a refused update leaves the state as it was. Reads follow the spec's
wildcards (an unset id or index reads them all).
"""
import logging

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime.tables import LPM, Exact, Ternary
from . import bytestrings
from .digests import DigestLists
from .errors import P4RuntimeError, invalid, not_found, unimplemented
from .p4info_index import P4InfoIndex, register_width
from .action_profiles import ActionProfileEntities
from .table_entries import MatchType, TableEntries, check_meter_config, set_meter_config

Update = p4runtime_pb2.Update
_log = logging.getLogger("p4switch.device.entities")


class EntityStore(TableEntries, ActionProfileEntities):
    """Applies Write updates and answers Reads for one running pipeline."""

    def __init__(self, index: P4InfoIndex, datapath):
        self.index = index
        self.datapath = datapath
        self._enabled_digests: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        self.digest_lists = DigestLists()
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

    def digest_config(self, digest_id: int) -> p4runtime_pb2.DigestEntry.Config | None:
        """The config of a digest the controller enabled, or None."""
        return self._enabled_digests.get(digest_id)

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

    # Counters, meters and registers: `kind` names the P4Runtime entity's `<kind>_id`, the
    # index's `<kind>s` and `<kind>(id)`, and the switch's `<kind>(name)`.

    def _read_cells(self, wanted, kind: str, encode, method: str = "read") -> list:
        """The cells of the `kind` externs a read asks for: of the wanted one or all, at the
        wanted index or all; `encode(info, index, value)` makes an entry of each cell's value
        (what the switch object's `method(index)` returns)."""
        wanted_id = getattr(wanted, f"{kind}_id")
        infos = [getattr(self.index, kind)(wanted_id)] if wanted_id else \
            list(getattr(self.index, f"{kind}s").values())
        found = []
        for info in infos:
            indices = self._indices(info, wanted.index, wanted.HasField("index"))
            name = info.preamble.name
            values = self.datapath.call(
                lambda sw: [getattr(getattr(sw, kind)(name), method)(i) for i in indices])
            found += [encode(info, i, value) for i, value in zip(indices, values)]
        return found

    def _cells_to_write(self, update_type, kind: str, entry):
        """(info, name, indices): the cells an update of a `kind` entry writes (only MODIFY:
        the cells always exist)."""
        if update_type != Update.MODIFY:
            raise invalid(f"{kind} entries can only be modified")
        info = getattr(self.index, kind)(getattr(entry, f"{kind}_id"))
        return info, info.preamble.name, self._indices(info, entry.index, entry.HasField("index"))

    def _read_counter_entry(self, wanted: p4runtime_pb2.CounterEntry) -> list:
        def encode(info, i, counts):
            message = p4runtime_pb2.CounterEntry(counter_id=info.preamble.id)
            message.index.index = i
            message.data.packet_count, message.data.byte_count = counts
            return message
        return self._read_cells(wanted, "counter", encode)

    def _write_counter_entry(self, update_type, entry: p4runtime_pb2.CounterEntry) -> None:
        _, name, indices = self._cells_to_write(update_type, "counter", entry)
        packets, byte_count = entry.data.packet_count, entry.data.byte_count
        self.datapath.call(lambda sw: [sw.counter(name).write(i, packets, byte_count)
                                       for i in indices])

    def _read_register_entry(self, wanted: p4runtime_pb2.RegisterEntry) -> list:
        def encode(info, i, value):
            message = p4runtime_pb2.RegisterEntry(register_id=info.preamble.id)
            message.index.index = i
            message.data.bitstring = bytestrings.encode(value)
            return message
        return self._read_cells(wanted, "register", encode)

    def _write_register_entry(self, update_type, entry: p4runtime_pb2.RegisterEntry) -> None:
        info, name, indices = self._cells_to_write(update_type, "register", entry)
        if entry.data.WhichOneof("data") != "bitstring":
            raise invalid(f"register {name}: data must be a bitstring")
        value = bytestrings.decode(entry.data.bitstring, register_width(info),
                                   f"register {name} value")
        self.datapath.call(lambda sw: [sw.register(name).write(i, value) for i in indices])

    def _read_meter_entry(self, wanted: p4runtime_pb2.MeterEntry) -> list:
        def encode(info, i, config):
            message = p4runtime_pb2.MeterEntry(meter_id=info.preamble.id)
            message.index.index = i
            set_meter_config(message, config)
            return message
        return self._read_cells(wanted, "meter", encode, method="get_config")

    def _write_meter_entry(self, update_type, entry: p4runtime_pb2.MeterEntry) -> None:
        _, name, indices = self._cells_to_write(update_type, "meter", entry)
        if entry.HasField("config"):
            config = entry.config
            check_meter_config(config)
            self.datapath.call(lambda sw: [sw.meter(name).set_config(
                i, config.cir, config.cburst, config.pir, config.pburst) for i in indices])
        else:
            self.datapath.call(lambda sw: [sw.meter(name).reset(i) for i in indices])

    # ---- packet replication engine ---------------------------------------------------------

    def _write_packet_replication_engine_entry(self, update_type, entry) -> None:
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            message = entry.multicast_group_entry
            key, what, extra = message.multicast_group_id, "multicast_group", ()
        elif kind == "clone_session_entry":
            message = entry.clone_session_entry
            key, what = message.session_id, "clone_session"
            extra = (message.packet_length_bytes, message.class_of_service)
        else:
            raise invalid("empty packet replication engine entry")
        if key == 0:
            raise invalid(f"{what.replace('_', ' ')} id 0 is reserved")
        replicas = [_replica(r) for r in message.replicas]
        # the PRE's insert_/modify_/delete_multicast_group and _clone_session
        verb = {Update.INSERT: "insert", Update.MODIFY: "modify", Update.DELETE: "delete"}[update_type]
        args = (key,) if update_type == Update.DELETE else (key, replicas, *extra)
        self.datapath.call(lambda sw: getattr(sw.pre, f"{verb}_{what}")(*args))

    def _read_packet_replication_engine_entry(self, wanted) -> list:
        kind = wanted.WhichOneof("type")
        if kind == "multicast_group_entry":
            groups = self._pre_read(lambda pre: pre.groups, "multicast group",
                                    wanted.multicast_group_entry.multicast_group_id)
            return [_multicast_group_message(gid, groups[gid]) for gid in sorted(groups)]
        if kind == "clone_session_entry":
            sessions = self._pre_read(lambda pre: pre.sessions, "clone session",
                                      wanted.clone_session_entry.session_id)
            return [_clone_session_message(sid, sessions[sid]) for sid in sorted(sessions)]
        raise invalid("empty packet replication engine entry")

    def _pre_read(self, table_of, what: str, wanted_id: int) -> dict:
        """The multicast groups or clone sessions (`table_of(pre)`, by id) a read asks for:
        all of them for id 0, else the one (NOT_FOUND when there is none)."""
        found = self.datapath.call(lambda sw: dict(table_of(sw.pre)))
        if not wanted_id:
            return found
        if wanted_id not in found:
            raise not_found(f"no {what} {wanted_id}")
        return {wanted_id: found[wanted_id]}

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
        self.digest_lists.forget(entry.digest_id)

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

def _replica(replica: p4runtime_pb2.Replica) -> tuple[int, int]:
    """(egress port, instance): the port from `port` (bytes, 1.4) or `egress_port` (uint32)."""
    if replica.port:
        return bytestrings.decode(replica.port, 32, "replica port"), replica.instance
    return replica.egress_port, replica.instance


def _add_replicas(container, replicas) -> None:
    for port, instance in replicas:
        container.add(egress_port=port, instance=instance)


def _multicast_group_message(group_id: int, replicas) -> p4runtime_pb2.PacketReplicationEngineEntry:
    message = p4runtime_pb2.PacketReplicationEngineEntry()
    message.multicast_group_entry.multicast_group_id = group_id
    _add_replicas(message.multicast_group_entry.replicas, replicas)
    return message


def _clone_session_message(session_id: int, session) -> p4runtime_pb2.PacketReplicationEngineEntry:
    message = p4runtime_pb2.PacketReplicationEngineEntry()
    entry = message.clone_session_entry
    entry.session_id = session_id
    entry.packet_length_bytes = session.truncate
    entry.class_of_service = session.class_of_service
    _add_replicas(entry.replicas, session.replicas)
    return message
