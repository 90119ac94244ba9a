"""Look-ups into a P4Info by id, with P4Runtime errors for ids the program does not have."""
from functools import partialmethod

from p4.config.v1 import p4info_pb2

from .errors import invalid, not_found


def _by_id(items) -> dict:
    return {item.preamble.id: item for item in items}


class P4InfoIndex:
    """The objects of one P4Info, by id; direct resources by the id of their table."""

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self.tables = _by_id(p4info.tables)
        self.actions = _by_id(p4info.actions)
        self.counters = _by_id(p4info.counters)
        self.direct_counters = _by_id(p4info.direct_counters)
        self.meters = _by_id(p4info.meters)
        self.direct_meters = _by_id(p4info.direct_meters)
        self.registers = _by_id(p4info.registers)
        self.digests = _by_id(p4info.digests)
        self.action_profiles = _by_id(p4info.action_profiles)
        self.value_sets = _by_id(p4info.value_sets)
        self.controller_headers = {c.preamble.name: c for c in p4info.controller_packet_metadata}
        self.direct_counter_of_table = {d.direct_table_id: d for d in p4info.direct_counters}
        self.direct_meter_of_table = {d.direct_table_id: d for d in p4info.direct_meters}

    def _get(self, kind: str, object_id: int):
        """The `kind` (table, action, ...) with this id, from `self.<kind>s`."""
        try:
            return getattr(self, kind + "s")[object_id]
        except KeyError:
            raise not_found(f"no {kind} with id {object_id} in the P4Info") from None

    # The object of each kind by id, NOT_FOUND for an id the P4Info does not have.
    table = partialmethod(_get, "table")
    action = partialmethod(_get, "action")
    counter = partialmethod(_get, "counter")
    meter = partialmethod(_get, "meter")
    register = partialmethod(_get, "register")
    digest = partialmethod(_get, "digest")

    def digest_by_name(self, name: str) -> p4info_pb2.Digest | None:
        """The digest whose name is `name` or ends with '.'+name (the back end may use either)."""
        for digest in self.digests.values():
            if digest.preamble.name == name or digest.preamble.name.endswith("." + name) \
                    or name.endswith("." + digest.preamble.name):
                return digest
        return None

    def table_action(self, table: p4info_pb2.Table, action_id: int) -> p4info_pb2.Action:
        """An action allowed in `table` (INVALID_ARGUMENT otherwise)."""
        action = self.action(action_id)
        if all(ref.id != action_id for ref in table.action_refs):
            raise invalid(f"action {action.preamble.name} is not an action of table "
                          f"{table.preamble.name}")
        return action


def register_width(register: p4info_pb2.Register) -> int:
    """Bit width of a register's cells (bit<W> or int<W>)."""
    spec = register.type_spec
    if spec.HasField("bitstring"):
        kind = spec.bitstring.WhichOneof("type_spec")
        if kind in ("bit", "int"):
            return getattr(spec.bitstring, kind).bitwidth
    raise invalid(f"register {register.preamble.name}: only bit<W>/int<W> cells are "
                  "supported over P4Runtime")
