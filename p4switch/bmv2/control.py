"""STF control-plane commands as bmv2 Thrift calls, names resolved as our runtime resolves them.

Tables, actions and keys are named as in p4c's P4Info (the full name or a unique suffix, keys
as ``stf.resolve_key_name`` reads them); match kinds, key order and action parameters come
from the bmv2 JSON p4c wrote with it.  Key values are parsed by ``stf.parse_match_value``, the
parser our own back ends use, then written as bmv2 match parameters (an ``optional`` key is
a ternary one in bmv2's JSON: a value with a full mask, or a wildcard).

Priorities: STF follows P4Runtime (a higher number wins; none is the lowest, as 0); bmv2
lets the lower number win, so an STF priority p is written as ``PRIORITY_TOP - p``.

Handles: bmv2 numbers entries, members, groups and multicast nodes itself; the STF names
members and groups by their own ids and nodes by creation order, mapped here.
"""

from p4switch import stf
from p4switch.runtime.errors import InvalidArgument, NotFound
from p4switch.runtime.names import resolve_name

PRIORITY_TOP = 1 << 24
CXT = 0


class Unsupported(stf.StfError):
    """An STF command bmv2 cannot run; the message says so in one line."""


def _bytes(value, width):
    if value < 0 or value >> width:
        raise InvalidArgument(f"value {value:#x} does not fit in {width} bits")
    return value.to_bytes(max(1, (width + 7) // 8), "big")


class Bmv2Control:
    """The control plane of one simple_switch, for the program p4c compiled."""

    def __init__(self, clients, compiled):
        self.clients = clients
        self.types = clients.types
        self.json = compiled.json
        self.p4info = compiled.p4info
        self.json_tables = {t["name"]: t for p in self.json.get("pipelines", [])
                            for t in p["tables"]}
        self.json_actions = {a["name"]: a for a in self.json.get("actions", [])}
        self.info_tables = {t.preamble.name: t for t in self.p4info.tables}
        self.registers = {r["name"]: r for r in self.json.get("register_arrays", [])}
        self.counters = {c["name"]: c for c in self.json.get("counter_arrays", [])}
        self.meters = {m["name"]: m for m in self.json.get("meter_arrays", [])}
        self.value_sets = {v["name"]: v for v in self.json.get("parse_vsets", [])}
        self.profiles = {a["name"]: a for a in self.json.get("action_profiles", []) +
                         [a for p in self.json.get("pipelines", [])
                          for a in p.get("action_profiles", [])]}
        self.entries = {}              # "= NAME" -> (table, handle)
        self.members = {}              # (profile, STF member id) -> handle
        self.groups = {}               # (profile, STF group id) -> handle
        self.mc_groups = {}            # group id -> handle
        self.mc_nodes = []             # STF node handle -> bmv2 node handle

    # -- names -----------------------------------------------------------------------------
    def table(self, name):
        full = resolve_name(name, self.info_tables, "table")
        if full not in self.json_tables:
            raise NotFound(f"table {full!r} is not in p4c's bmv2 JSON")
        return full

    @staticmethod
    def _pick(name, objects, kind, direct=None):
        if direct is not None:
            objects = {n: o for n, o in objects.items() if bool(o.get("is_direct")) == direct}
        return resolve_name(name, objects, kind)

    def action(self, table, name):
        names = self.json_tables[table]["actions"]
        return resolve_name(name, names, f"action of table {table}")

    # -- match keys and action data ------------------------------------------------------------
    def match_key(self, table, keys):
        """bmv2 match parameters for STF ``[(key, text)]``, in the JSON's key order."""
        json_keys = self.json_tables[table]["key"]
        fields = list(self.info_tables[table].match_fields)
        if len(fields) != len(json_keys):
            raise InvalidArgument(f"table {table}: P4Info and bmv2 JSON keys differ")
        names = [f.name for f in fields]
        given = {}
        for name, text in keys:
            full = stf.resolve_key_name(name, names)
            given[full] = text
        params = []
        for field, json_key in zip(fields, json_keys):
            kind = _P4INFO_KINDS.get(field.match_type, "exact")
            text = given.get(field.name)
            value = (stf.parse_match_value(text, kind, field.bitwidth)
                     if text is not None else None)
            if value is None and kind == "exact":
                raise InvalidArgument(f"table {table}: exact field {field.name} needs a value")
            params.append(self._param(json_key["match_type"], value, field.bitwidth))
        return params

    def _param(self, bm_kind, value, width):
        T = self.types
        full = (1 << width) - 1
        if bm_kind == "exact":
            return T.BmMatchParam(type=T.BmMatchParamType.EXACT,
                                  exact=T.BmMatchParamExact(_bytes(value.value, width)))
        if bm_kind == "valid":
            return T.BmMatchParam(type=T.BmMatchParamType.VALID,
                                  valid=T.BmMatchParamValid(bool(value.value)))
        if bm_kind == "lpm":
            key, plen = (0, 0) if value is None else (value.value, value.prefix_len)
            return T.BmMatchParam(type=T.BmMatchParamType.LPM,
                                  lpm=T.BmMatchParamLPM(_bytes(key, width), plen))
        if bm_kind == "ternary":
            key, mask = _ternary(value, full)
            return T.BmMatchParam(type=T.BmMatchParamType.TERNARY,
                                  ternary=T.BmMatchParamTernary(_bytes(key & mask, width),
                                                                _bytes(mask, width)))
        if bm_kind == "range":
            lo, hi = (0, full) if value is None else _range(value)
            return T.BmMatchParam(type=T.BmMatchParamType.RANGE,
                                  range=T.BmMatchParamRange(_bytes(lo, width), _bytes(hi, width)))
        raise InvalidArgument(f"bmv2 match type {bm_kind!r} is not known")

    def action_data(self, action, args):
        """bmv2 action data for STF ``[(param, text)]``, in the action's parameter order."""
        runtime_data = self.json_actions[action].get("runtime_data", [])
        given = {name: stf.parse_number(text) for name, text in args}
        data = []
        for param in runtime_data:
            if param["name"] not in given:
                raise InvalidArgument(f"action {action}: missing parameter {param['name']!r}")
            data.append(_bytes(given.pop(param["name"]), param["bitwidth"]))
        if given:
            raise InvalidArgument(f"action {action}: unknown parameter(s) {', '.join(given)}")
        return data

    def options(self, table, priority):
        if self.json_tables[table].get("match_type") in ("ternary", "range"):
            return self.types.BmAddEntryOptions(priority=PRIORITY_TOP - (priority or 0))
        return self.types.BmAddEntryOptions()

    # -- commands --------------------------------------------------------------------------------
    def apply(self, cmd):
        getattr(self, "do_" + type(cmd).__name__)(cmd)

    def do_AddCmd(self, cmd):
        std = self.clients.standard
        table = self.table(cmd.table)
        key = self.match_key(table, cmd.keys)
        options = self.options(table, cmd.priority)
        profile = self.json_tables[table].get("action_profile")
        if cmd.member is not None or cmd.group is not None:
            if profile is None:
                raise InvalidArgument(f"table {table} has no action profile")
            if cmd.member is not None:
                handle = std.bm_mt_indirect_add_entry(
                    CXT, table, key, self._member(profile, cmd.member), options)
            else:
                handle = std.bm_mt_indirect_ws_add_entry(
                    CXT, table, key, self._group(profile, cmd.group), options)
        else:
            action = self.action(table, cmd.action)
            handle = std.bm_mt_add_entry(CXT, table, key, action,
                                         self.action_data(action, cmd.args), options)
        if cmd.handle is not None:
            self.entries[cmd.handle] = (table, handle)

    def _member(self, profile, member):
        try:
            return self.members[profile, member]
        except KeyError:
            raise NotFound(f"action profile {profile} has no member {member}") from None

    def _group(self, profile, group):
        try:
            return self.groups[profile, group]
        except KeyError:
            raise NotFound(f"action profile {profile} has no group {group}") from None

    def profile(self, name):
        return resolve_name(name, self.profiles, "action profile")

    def do_MemberCmd(self, cmd):
        profile = self.profile(cmd.profile)
        if (profile, cmd.member) in self.members:
            raise InvalidArgument(f"action profile {profile} already has member {cmd.member}")
        action = resolve_name(cmd.action, self._profile_actions(profile),
                              f"action of profile {profile}")
        self.members[profile, cmd.member] = self.clients.standard.bm_mt_act_prof_add_member(
            CXT, profile, action, self.action_data(action, cmd.args))

    def _profile_actions(self, profile):
        return sorted({a for t in self.json_tables.values()
                       if t.get("action_profile") == profile for a in t["actions"]})

    def do_GroupCmd(self, cmd):
        std = self.clients.standard
        profile = self.profile(cmd.profile)
        handles = [self._member(profile, m) for m in cmd.members]
        if len(set(handles)) != len(handles):
            raise Unsupported("a member listed twice in a group (a weight) is not supported "
                              "on bmv2: its groups hold each member once")
        group = std.bm_mt_act_prof_create_group(CXT, profile)
        for handle in handles:
            std.bm_mt_act_prof_add_member_to_group(CXT, profile, handle, group)
        self.groups[profile, cmd.group] = group

    def do_SetDefaultCmd(self, cmd):
        table = self.table(cmd.table)
        action = self.action(table, cmd.action)
        self.clients.standard.bm_mt_set_default_action(CXT, table, action,
                                                       self.action_data(action, cmd.args))

    def do_RemoveCmd(self, cmd):
        std = self.clients.standard
        if cmd.table is None:
            for name, info in self.info_tables.items():
                if not info.is_const_table and name in self.json_tables:
                    std.bm_mt_clear_entries(CXT, name, False)
            return
        table = self.table(cmd.table)
        entry = std.bm_mt_get_entry_from_key(CXT, table, self.match_key(table, cmd.keys),
                                             self.options(table, cmd.priority))
        if self.json_tables[table].get("action_profile"):
            std.bm_mt_indirect_delete_entry(CXT, table, entry.entry_handle)
        else:
            std.bm_mt_delete_entry(CXT, table, entry.entry_handle)

    def do_McGroupCreateCmd(self, cmd):
        self.mc_groups[cmd.group] = self.clients.pre.bm_mc_mgrp_create(CXT, cmd.group)

    def do_McNodeCreateCmd(self, cmd):
        top = max(cmd.ports)
        port_map = "".join("1" if p in cmd.ports else "0" for p in range(top, -1, -1))
        self.mc_nodes.append(self.clients.pre.bm_mc_node_create(CXT, cmd.rid, port_map, ""))

    def do_McNodeAssociateCmd(self, cmd):
        if cmd.group not in self.mc_groups:
            raise InvalidArgument(f"multicast group {cmd.group} was not created")
        if not 0 <= cmd.handle < len(self.mc_nodes):
            raise InvalidArgument(f"no multicast node with handle {cmd.handle}")
        self.clients.pre.bm_mc_node_associate(CXT, self.mc_groups[cmd.group],
                                              self.mc_nodes[cmd.handle])

    def do_MirroringAddCmd(self, cmd):
        config = self.clients.sswitch_types.MirroringSessionConfig(port=cmd.port)
        self.clients.sswitch.mirroring_session_add(cmd.session, config)

    def do_MeterConfigCmd(self, cmd):
        T = self.types
        rates = [T.BmMeterRateConfig(units_per_micros=cmd.cir / 1e6, burst_size=cmd.cburst),
                 T.BmMeterRateConfig(units_per_micros=cmd.pir / 1e6, burst_size=cmd.pburst)]
        if isinstance(cmd.index, str):
            self._pick(cmd.meter, self.meters, "direct meter", direct=True)
            table, handle = self.entry(cmd.index)
            self.clients.standard.bm_mt_set_meter_rates(CXT, table, handle, rates)
        else:
            name = self._pick(cmd.meter, self.meters, "meter", direct=False)
            self.clients.standard.bm_meter_set_rates(CXT, name, cmd.index, rates)

    def do_ValueSetAddCmd(self, cmd):
        name = resolve_name(cmd.value_set, self.value_sets, "value set")
        width = self.value_sets[name]["compressed_bitwidth"]
        if cmd.mask is not None and cmd.mask != (1 << width) - 1:
            raise Unsupported("value_set_add with a mask is not supported on bmv2 (its "
                              "Thrift bm_parse_vset_add takes a value only)")
        self.clients.standard.bm_parse_vset_add(CXT, name, _bytes(cmd.value, width))

    def register(self, name):
        full = resolve_name(name, self.registers, "register")
        width = self.registers[full]["bitwidth"]
        if width > 64:
            raise Unsupported(f"register {full} is {width} bits wide: bmv2's Thrift API "
                              f"reads and writes registers as 64-bit values, so this is not "
                              f"supported on bmv2")
        return full, width

    def do_RegisterWriteCmd(self, cmd):
        name, width = self.register(cmd.register)
        value = cmd.value
        if value >> width:
            raise InvalidArgument(f"value {value:#x} does not fit register {name}")
        if value >> 63:
            value -= 1 << 64                     # an i64 on the wire
        self.clients.standard.bm_register_write(CXT, name, cmd.index, value)

    # -- reads ----------------------------------------------------------------------------------
    def register_value(self, name, index):
        name, width = self.register(name)
        return self.clients.standard.bm_register_read(CXT, name, index) & ((1 << width) - 1)

    def register_cells(self, name):
        name, width = self.register(name)
        return [v & ((1 << width) - 1)
                for v in self.clients.standard.bm_register_read_all(CXT, name)]

    def counter_value(self, name, index):
        """(packets, bytes) of an indexed counter cell, or of the entry ``$NAME`` of a
        direct counter."""
        if isinstance(index, str):
            self._pick(name, self.counters, "direct counter", direct=True)
            table, handle = self.entry(index)
            value = self.clients.standard.bm_mt_read_counter(CXT, table, handle)
        else:
            full = self._pick(name, self.counters, "counter", direct=False)
            value = self.clients.standard.bm_counter_read(CXT, full, index)
        return value.packets, value.bytes

    def entry(self, handle_name):
        try:
            return self.entries[handle_name[1:]]
        except KeyError:
            raise NotFound(f"no entry was added as '= {handle_name[1:]}'") from None


def _ternary(value, full):
    from p4switch.runtime.tables import LPM, Exact, Optional, Range, Ternary
    if value is None:
        return 0, 0
    if isinstance(value, Ternary):
        return value.value, value.mask
    if isinstance(value, Optional):
        return (0, 0) if value.value is None else (value.value, full)
    if isinstance(value, Exact):
        return value.value, full
    if isinstance(value, LPM):
        width = full.bit_length()
        return value.value, full ^ ((1 << (width - value.prefix_len)) - 1)
    if isinstance(value, Range):
        raise InvalidArgument("a range value needs a range key")
    raise InvalidArgument(f"cannot write {value!r} as a ternary match")


def _range(value):
    from p4switch.runtime.tables import Exact, Range
    if isinstance(value, Range):
        return value.low, value.high
    if isinstance(value, Exact):
        return value.value, value.value
    raise InvalidArgument(f"cannot write {value!r} as a range match")


def _p4info_kinds():
    from p4.config.v1 import p4info_pb2
    M = p4info_pb2.MatchField
    return {M.EXACT: "exact", M.LPM: "lpm", M.TERNARY: "ternary", M.RANGE: "range",
            M.OPTIONAL: "optional"}


_P4INFO_KINDS = _p4info_kinds()
