"""Match-action tables: match values, entries, lookup engines and the control-plane API.

A `Table` is built from a `TableSpec` (plain data made by the back end from the elaborated
program) and offers the control-plane operations of the Switch API (insert, modify, delete,
entries, set_default, ...) plus `lookup(key)`, which the compiled pipeline calls with the key
values (a single value for one-field keys, a tuple otherwise) and which returns the matching
`Entry` or the table's default entry (`hit` False).

Lookup engines, chosen from the key's match kinds:
* all exact: one dict;
* one lpm field (others exact): a dict per prefix length, longest first;
* anything else (ternary, range, optional, several lpm): a list scanned in priority order.

A table with an action profile/selector (runtime/profiles.py) stores a member or group
reference per entry instead of an action; `resolve(entry, selector_fields)` picks the action.

Priorities follow P4Runtime: a higher number wins (unless the table says
largest_priority_wins = false); entries of equal priority keep insertion order. Const entries
get priorities from their order, the first listed winning, as p4c assigns them.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Optional as Opt

from .errors import (AlreadyExists, InvalidArgument, NotFound, PermissionDenied,
                     ResourceExhausted)
from .names import resolve_name

DEFAULT_TABLE_SIZE = 1024          # p4c's default when a table declares no size


# ---------------------------------------------------------------------------------------------
# Match values (what the control plane passes per key field)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class LPM:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional:
    """`optional` match: a value, or None for a wildcard."""

    value: Opt[int]


_MATCH_CLASS = {"exact": Exact, "lpm": LPM, "ternary": Ternary, "range": Range,
                "optional": Optional}


# ---------------------------------------------------------------------------------------------
# Specs (from the back end)
# ---------------------------------------------------------------------------------------------


@dataclass
class KeySpec:
    name: str
    match_kind: str
    width: int


@dataclass
class ActionSpec:
    """An action a table may run: `index` is what the compiled code dispatches on."""

    name: str
    index: int
    params: list[tuple[str, int]] = field(default_factory=list)   # (name, width)
    scope: str = "TABLE_AND_DEFAULT"


@dataclass
class ConstEntrySpec:
    """A const/initial entry: one match value per key field (None for a wildcard)."""

    match: list[Any]
    action: str
    args: dict[str, int]
    priority: Opt[int] = None


@dataclass
class TableSpec:
    name: str
    keys: list[KeySpec]
    actions: list[ActionSpec]
    default_action: str
    default_args: dict[str, int] = field(default_factory=dict)
    default_is_const: bool = False
    size: Opt[int] = None
    const_entries: list[ConstEntrySpec] = field(default_factory=list)
    entries_const: bool = True
    direct_counter: Opt[str] = None      # name of the direct counter, if any
    direct_meter: Opt[str] = None        # name of the direct meter, if any
    largest_priority_wins: bool = True
    profile: Opt[str] = None             # action profile/selector (implementation), if any
    support_timeout: bool = False        # entries may have an idle timeout (support_timeout)


# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------


PROFILE_ENTRY = ActionSpec("<action profile member or group>", -1)


class Entry:
    """A table entry (or a table's default entry, with `hit` False and no match).

    `packets`/`bytes` count the hits when the table has a direct counter; `meter` is the
    entry's direct meter state when the table has a direct meter."""

    __slots__ = ("match", "priority", "action", "action_index", "args", "hit", "packets",
                 "bytes", "meter", "seq", "_masks", "_values", "_ranges", "is_const", "ref",
                 "idle_timeout_ns", "last_hit_ns", "idle_reported")

    def __init__(self, match, priority, action: ActionSpec, args: tuple, hit=True, seq=0):
        self.match = match                # tuple of normalized match values per key field
        self.priority = priority
        self.action = action
        self.action_index = action.index
        self.args = args
        self.hit = hit
        self.packets = 0
        self.bytes = 0
        self.meter = None
        self.seq = seq
        self.is_const = False
        self.ref = None                   # ("member" | "group", id) in a profile's table
        self.idle_timeout_ns = 0          # 0: the entry never ages out
        self.last_hit_ns = 0              # table clock at insertion or at the latest hit
        self.idle_reported = False        # idle_entries() gave it since its latest hit

    @property
    def action_name(self) -> str:
        return self.action.name

    @property
    def params(self) -> dict[str, int]:
        return {name: value for (name, _), value in zip(self.action.params, self.args)}

    def __repr__(self):
        return (f"Entry(match={self.match!r}, priority={self.priority}, "
                f"action={self.action.name}, params={self.params})")


class TableView:
    """What `Table.entries()` gives: the control-plane view of one entry."""

    __slots__ = ("match", "priority", "action", "params", "packets", "bytes", "is_const",
                 "member", "group")

    def __init__(self, match, priority, action, params, packets, bytes_, is_const, ref=None):
        self.match = match          # {field name: match value}, wildcards left out
        self.priority = priority
        self.action = action        # None for an entry pointing into an action profile
        self.params = params
        self.packets = packets
        self.bytes = bytes_
        self.is_const = is_const
        self.member = ref[1] if ref and ref[0] == "member" else None
        self.group = ref[1] if ref and ref[0] == "group" else None

    def __repr__(self):
        return (f"TableView(match={self.match}, priority={self.priority}, "
                f"action={self.action!r}, params={self.params})")


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


class Table:
    """One match-action table: control-plane API and the `lookup` used per packet."""

    def __init__(self, spec: TableSpec, meter_factory=None, profile=None, clock_ns=None,
                 hit_clock_ns=None):
        self.spec = spec
        # Nanoseconds, for idle timeouts; only tables with support_timeout read it. A hit
        # is stamped with `hit_clock_ns` (the packet's clock reading) when given.
        self._clock_ns = clock_ns or time.monotonic_ns
        self._hit_clock_ns = hit_clock_ns or self._clock_ns
        self.profile = profile            # runtime.profiles.ActionProfile, if any
        self.name = spec.name
        self.size = spec.size if spec.size is not None else DEFAULT_TABLE_SIZE
        self._actions = {a.name: a for a in spec.actions}
        self._meter_factory = meter_factory
        kinds = [k.match_kind for k in spec.keys]
        for key in spec.keys:
            if key.match_kind not in _MATCH_CLASS:
                raise InvalidArgument(f"table {self.name}: match kind {key.match_kind!r} "
                                      "is not supported")
        self.needs_priority = any(k in ("ternary", "range", "optional") for k in kinds) \
            or kinds.count("lpm") > 1
        self._lpm_index = kinds.index("lpm") if kinds.count("lpm") == 1 else None
        self._by_id: dict[tuple, Entry] = {}
        self._seq = itertools.count()
        default = self._action(spec.default_action)
        self.default_entry = Entry(None, None, default,
                                   self._args(default, spec.default_args), hit=False)
        self._initial_default = (default, self.default_entry.args)
        self._frozen = False
        self._build_engine()
        if spec.support_timeout:
            self._record_hits()
        for i, ce in enumerate(spec.const_entries):
            priority = ce.priority
            if priority is None and self.needs_priority:
                # First listed wins: earlier entries get larger priorities.
                priority = len(spec.const_entries) - i
                if not spec.largest_priority_wins:
                    priority = i + 1
            match = {k.name: m for k, m in zip(spec.keys, ce.match) if m is not None}
            entry = self._insert(match, ce.action, ce.args, priority, check_scope=False)
            entry.is_const = spec.entries_const
        self._frozen = bool(spec.const_entries) and spec.entries_const

    # -- engines -------------------------------------------------------------------------

    def _build_engine(self):
        keys = self.spec.keys
        default = self.default_entry
        self.exact_get = None             # all-exact tables: the dict's get, for compiled code
        if not keys:
            self.lookup = lambda key: default
        elif all(k.match_kind == "exact" for k in keys):
            self._exact: dict = {}
            get = self.exact_get = self._exact.get
            self.lookup = lambda key: get(key, default)
        elif self._lpm_index is not None and not self.needs_priority:
            self._levels: list = []      # [(prefix_len, mask, dict)], longest first
            self.lookup = self._make_lpm_lookup()
        else:
            self._ordered: list[Entry] = []
            self.lookup = self._make_scan_lookup()

    def _record_hits(self):
        """Wrap `lookup` so that each hit restarts its entry's idle timer. (The compiled
        code always calls `lookup` for tables with support_timeout.)"""
        lookup = self.lookup
        clock_ns = self._hit_clock_ns

        def lookup_recording_hits(key):
            entry = lookup(key)
            if entry.hit:
                entry.last_hit_ns = clock_ns()
                entry.idle_reported = False
            return entry
        self.lookup = lookup_recording_hits

    def idle_entries(self, now_ns: int | None = None) -> list[Entry]:
        """The entries whose idle timeout has run out (no hit for idle_timeout_ns), each
        given once until it is hit again: what a P4Runtime server reports as
        IdleTimeoutNotification."""
        now_ns = self._clock_ns() if now_ns is None else now_ns
        idle = []
        for entry in sorted(self._by_id.values(), key=lambda e: e.seq):
            if (entry.idle_timeout_ns and not entry.idle_reported
                    and now_ns - entry.last_hit_ns >= entry.idle_timeout_ns):
                entry.idle_reported = True
                idle.append(entry)
        return idle

    def _check_idle_timeout(self, idle_timeout_ns) -> None:
        if idle_timeout_ns and not self.spec.support_timeout:
            raise InvalidArgument(f"table {self.name} does not support idle timeouts "
                                  "(no support_timeout = true)")
        if idle_timeout_ns is not None and idle_timeout_ns < 0:
            raise InvalidArgument(f"table {self.name}: negative idle timeout")

    def _start_idle_timer(self, entry: Entry, idle_timeout_ns) -> None:
        if idle_timeout_ns is not None:
            entry.idle_timeout_ns = idle_timeout_ns
            entry.last_hit_ns = self._clock_ns()
            entry.idle_reported = False

    def _make_lpm_lookup(self):
        levels = self._levels
        default = self.default_entry
        if len(self.spec.keys) == 1:
            def lookup(key):
                for _, mask, level in levels:
                    entry = level.get(key & mask)
                    if entry is not None:
                        return entry
                return default
            return lookup
        i = self._lpm_index

        def lookup_multi(key):
            head, value, tail = key[:i], key[i], key[i + 1:]
            for _, mask, level in levels:
                entry = level.get(head + (value & mask,) + tail)
                if entry is not None:
                    return entry
            return default
        return lookup_multi

    def _make_scan_lookup(self):
        ordered = self._ordered
        default = self.default_entry
        single = len(self.spec.keys) == 1
        has_range = any(k.match_kind == "range" for k in self.spec.keys)
        if single and not has_range:
            def lookup_single(key):
                for entry in ordered:
                    if key & entry._masks == entry._values:
                        return entry
                return default
            return lookup_single

        def lookup(key):
            if single:
                key = (key,)
            for entry in ordered:
                for k, m, v, r in zip(key, entry._masks, entry._values, entry._ranges):
                    if r is None:
                        if k & m != v:
                            break
                    elif not (r[0] <= k <= r[1]):
                        break
                else:
                    return entry
            return default
        return lookup

    # -- normalisation -------------------------------------------------------------------

    def _action(self, name: str) -> ActionSpec:
        try:
            full = resolve_name(name, self._actions, "action")
        except NotFound:
            raise InvalidArgument(f"table {self.name}: action {name!r} is not one of its "
                                  f"actions ({', '.join(self._actions)})") from None
        return self._actions[full]

    def _args(self, action: ActionSpec, params: dict[str, int]) -> tuple:
        params = dict(params or {})
        args = []
        for pname, width in action.params:
            if pname not in params:
                raise InvalidArgument(f"action {action.name}: missing parameter {pname!r}")
            value = params.pop(pname)
            if not isinstance(value, int) or value < 0 or value >> width:
                raise InvalidArgument(f"action {action.name}: parameter {pname}={value!r} "
                                      f"does not fit in {width} bits")
            args.append(value)
        if params:
            raise InvalidArgument(f"action {action.name}: unknown parameter(s) "
                                  f"{', '.join(params)}")
        return tuple(args)

    def _normalize(self, match: dict) -> tuple:
        """One canonical match value per key field (wildcards made explicit)."""
        match = dict(match or {})
        out = []
        for key in self.spec.keys:
            value = match.pop(key.name, None)
            out.append(self._normalize_field(key, value))
        if match:
            raise InvalidArgument(f"table {self.name}: unknown key field(s) "
                                  f"{', '.join(map(str, match))}; keys are "
                                  f"{', '.join(k.name for k in self.spec.keys)}")
        return tuple(out)

    def _normalize_field(self, key: KeySpec, value):
        width, full = key.width, (1 << key.width) - 1
        kind = key.match_kind
        if value is None:
            if kind == "exact":
                raise InvalidArgument(f"table {self.name}: exact field {key.name} needs a value")
            return {"lpm": LPM(0, 0), "ternary": Ternary(0, 0), "range": Range(0, full),
                    "optional": Optional(None)}[kind]
        if isinstance(value, int) and kind == "exact":
            value = Exact(value)
        expected = _MATCH_CLASS[kind]
        if kind == "optional" and isinstance(value, Exact):
            value = Optional(value.value)
        if kind == "ternary" and isinstance(value, Exact):
            value = Ternary(value.value, full)
        if not isinstance(value, expected):
            raise InvalidArgument(f"table {self.name}: field {key.name} is {kind}, "
                                  f"got {type(value).__name__}")

        def check(v, what="value"):
            if not isinstance(v, int) or v < 0 or v >> width:
                raise InvalidArgument(f"table {self.name}: {key.name} {what} {v!r} does not "
                                      f"fit in {width} bits")
        if isinstance(value, Exact):
            check(value.value)
            return value
        if isinstance(value, LPM):
            check(value.value)
            if not 0 <= value.prefix_len <= width:
                raise InvalidArgument(f"table {self.name}: {key.name} prefix length "
                                      f"{value.prefix_len} out of 0..{width}")
            mask = full ^ ((1 << (width - value.prefix_len)) - 1)
            return LPM(value.value & mask, value.prefix_len)
        if isinstance(value, Ternary):
            check(value.value)
            check(value.mask, "mask")
            return Ternary(value.value & value.mask, value.mask)
        if isinstance(value, Range):
            check(value.low, "low")
            check(value.high, "high")
            if value.low > value.high:
                raise InvalidArgument(f"table {self.name}: {key.name} range "
                                      f"{value.low}..{value.high} is empty")
            return value
        if value.value is not None:
            check(value.value)
        return value

    @staticmethod
    def _mask_value(key: KeySpec, m) -> tuple[int, int, Opt[tuple]]:
        """(mask, value, range) used by the scanning engine for one field."""
        full = (1 << key.width) - 1
        if isinstance(m, Exact):
            return full, m.value, None
        if isinstance(m, LPM):
            mask = full ^ ((1 << (key.width - m.prefix_len)) - 1)
            return mask, m.value, None
        if isinstance(m, Ternary):
            return m.mask, m.value, None
        if isinstance(m, Optional):
            return (0, 0, None) if m.value is None else (full, m.value, None)
        return 0, 0, (m.low, m.high)

    def _identity(self, norm: tuple, priority) -> tuple:
        return (norm, priority if self.needs_priority else None)

    def _check_priority(self, priority):
        if self.needs_priority:
            if priority is None:
                priority = 1
            if not isinstance(priority, int) or priority < 1:
                raise InvalidArgument(f"table {self.name}: priority must be a positive "
                                      f"integer, got {priority!r}")
            return priority
        if priority not in (None, 0):
            raise InvalidArgument(f"table {self.name}: a priority is only allowed for "
                                  "ternary, range or optional matches")
        return None

    # -- engine maintenance --------------------------------------------------------------

    def _engine_add(self, entry: Entry):
        keys = self.spec.keys
        if not keys:
            raise InvalidArgument(f"table {self.name} has no key: it cannot hold entries")
        if hasattr(self, "_exact"):
            values = tuple(m.value for m in entry.match)
            self._exact[values[0] if len(values) == 1 else values] = entry
        elif hasattr(self, "_levels"):
            i = self._lpm_index
            plen = entry.match[i].prefix_len
            width = keys[i].width
            level = None
            for lv in self._levels:
                if lv[0] == plen:
                    level = lv[2]
            if level is None:
                mask = ((1 << width) - 1) ^ ((1 << (width - plen)) - 1)
                level = {}
                self._levels.append((plen, mask, level))
                self._levels.sort(key=lambda lv: -lv[0])
            level[self._lpm_key(entry)] = entry
        else:
            fields = [self._mask_value(k, m) for k, m in zip(keys, entry.match)]
            entry._masks = tuple(f[0] for f in fields)
            entry._values = tuple(f[1] for f in fields)
            entry._ranges = tuple(f[2] for f in fields)
            if len(keys) == 1 and keys[0].match_kind != "range":
                # The single-field scan compares plain ints (see _make_scan_lookup).
                entry._masks, entry._values = entry._masks[0], entry._values[0]
            self._ordered.append(entry)
            sign = -1 if self.spec.largest_priority_wins else 1
            self._ordered.sort(key=lambda e: (sign * e.priority, e.seq))

    def _lpm_key(self, entry: Entry):
        values = tuple(m.value for m in entry.match)
        return values[0] if len(values) == 1 else values

    def _engine_remove(self, entry: Entry):
        if hasattr(self, "_exact"):
            values = tuple(m.value for m in entry.match)
            del self._exact[values[0] if len(values) == 1 else values]
        elif hasattr(self, "_levels"):
            plen = entry.match[self._lpm_index].prefix_len
            for lv in self._levels:
                if lv[0] == plen:
                    del lv[2][self._lpm_key(entry)]
                    if not lv[2]:
                        self._levels.remove(lv)
                    break
        else:
            self._ordered.remove(entry)

    # -- control-plane API ---------------------------------------------------------------

    def _check_mutable(self):
        if self._frozen:
            raise PermissionDenied(f"table {self.name} has const entries")

    def _insert(self, match, action, params, priority, check_scope=True,
                member=None, group=None) -> Entry:
        norm = self._normalize(match)
        priority = self._check_priority(priority)
        ident = self._identity(norm, priority)
        if ident in self._by_id:
            raise AlreadyExists(f"table {self.name}: entry {self._describe(norm)} exists")
        if len(self._by_id) >= self.size:
            raise ResourceExhausted(f"table {self.name} is full ({self.size} entries)")
        if self.profile is not None:
            ref = self._profile_ref(action, member, group)
            entry = Entry(norm, priority, PROFILE_ENTRY, (), seq=next(self._seq))
            self._set_ref(entry, ref)
        else:
            if member is not None or group is not None:
                raise InvalidArgument(f"table {self.name} has no action profile")
            spec = self._action(action)
            if check_scope and spec.scope == "DEFAULT_ONLY":
                raise InvalidArgument(f"action {spec.name} is @defaultonly in table "
                                      f"{self.name}")
            entry = Entry(norm, priority, spec, self._args(spec, params), seq=next(self._seq))
        if self.spec.direct_meter and self._meter_factory:
            entry.meter = self._meter_factory()
        self._engine_add(entry)
        self._by_id[ident] = entry
        return entry

    def insert(self, match: dict, action: str | None = None, params: dict | None = None,
               priority: int | None = None, member: int | None = None,
               group: int | None = None, idle_timeout_ns: int | None = None) -> Entry:
        """Add an entry; AlreadyExists if one with the same match (and priority) exists.
        In a table with an action profile the entry names a `member` or a `group` instead
        of an action. `idle_timeout_ns` (tables with support_timeout only): see
        idle_entries()."""
        self._check_mutable()
        self._check_idle_timeout(idle_timeout_ns)
        entry = self._insert(match, action, params, priority, member=member, group=group)
        self._start_idle_timer(entry, idle_timeout_ns)
        return entry

    # -- action profiles -------------------------------------------------------------------

    def _profile_ref(self, action, member, group) -> tuple[str, int]:
        if action is not None or (member is None) == (group is None):
            raise InvalidArgument(f"table {self.name} uses action profile "
                                  f"{self.profile.name}: give a member or a group")
        if member is not None:
            self.profile.member(member)
            return ("member", member)
        self.profile.group(group)
        return ("group", group)

    def _set_ref(self, entry: Entry, ref) -> None:
        refs = self.profile.references
        if entry.ref is not None:
            refs[entry.ref] -= 1
        entry.ref = ref
        if ref is not None:
            refs[ref] = refs.get(ref, 0) + 1

    def resolve(self, entry: Entry, fields) -> tuple[int, tuple]:
        """(action index, args) for a hit in a profile's table; `fields` are the selector
        key fields. An empty group runs the default action."""
        kind, ref_id = entry.ref
        member = self.profile.choose(kind, ref_id, fields)
        if member is None:
            return self.default_entry.action_index, self.default_entry.args
        spec = self._actions[member.action]
        return spec.index, tuple(member.params[p] for p, _ in spec.params)

    def get(self, match: dict, priority: int | None = None) -> Entry:
        """The entry with this match (and priority); NotFound otherwise."""
        norm = self._normalize(match)
        priority = self._check_priority(priority)
        try:
            return self._by_id[self._identity(norm, priority)]
        except KeyError:
            raise NotFound(f"table {self.name}: no entry {self._describe(norm)}") from None

    def modify(self, match: dict, action: str | None = None, params: dict | None = None,
               priority: int | None = None, member: int | None = None,
               group: int | None = None, idle_timeout_ns: int | None = None) -> Entry:
        """Change the action of an existing entry (its counters are kept); a given
        `idle_timeout_ns` replaces the entry's and restarts its timer."""
        self._check_mutable()
        self._check_idle_timeout(idle_timeout_ns)
        entry = self.get(match, priority)
        self._start_idle_timer(entry, idle_timeout_ns)
        if self.profile is not None:
            self._set_ref(entry, self._profile_ref(action, member, group))
            return entry
        spec = self._action(action)
        if spec.scope == "DEFAULT_ONLY":
            raise InvalidArgument(f"action {spec.name} is @defaultonly in table {self.name}")
        entry.args = self._args(spec, params)
        entry.action = spec
        entry.action_index = spec.index
        return entry

    def delete(self, match: dict, priority: int | None = None) -> None:
        self._check_mutable()
        entry = self.get(match, priority)
        self._engine_remove(entry)
        del self._by_id[self._identity(entry.match, entry.priority)]
        if entry.ref is not None:
            self._set_ref(entry, None)

    def clear(self) -> None:
        """Remove every non-const entry."""
        self._check_mutable()
        for entry in list(self._by_id.values()):
            self._engine_remove(entry)
            if entry.ref is not None:
                self._set_ref(entry, None)
        self._by_id.clear()

    def entries(self) -> list[TableView]:
        """Every entry, in insertion order."""
        views = []
        for entry in sorted(self._by_id.values(), key=lambda e: e.seq):
            match = {}
            for key, m in zip(self.spec.keys, entry.match):
                if not self._is_wildcard(key, m):
                    match[key.name] = m
            action = None if entry.ref is not None else entry.action.name
            params = {} if entry.ref is not None else entry.params
            views.append(TableView(match, entry.priority, action, params, entry.packets,
                                   entry.bytes, entry.is_const, entry.ref))
        return views

    def __len__(self):
        return len(self._by_id)

    @staticmethod
    def _is_wildcard(key: KeySpec, m) -> bool:
        full = (1 << key.width) - 1
        return (isinstance(m, LPM) and m.prefix_len == 0
                or isinstance(m, Ternary) and m.mask == 0
                or isinstance(m, Optional) and m.value is None
                or isinstance(m, Range) and m.low == 0 and m.high == full)

    def set_default(self, action: str, params: dict | None = None) -> None:
        if self.spec.default_is_const:
            raise PermissionDenied(f"table {self.name} has a const default action")
        spec = self._action(action)
        if spec.scope == "TABLE_ONLY":
            raise InvalidArgument(f"action {spec.name} is @tableonly in table {self.name}")
        self.default_entry.args = self._args(spec, params)
        self.default_entry.action = spec
        self.default_entry.action_index = spec.index

    def reset_default(self) -> None:
        """Back to the program's default action."""
        spec, args = self._initial_default
        self.default_entry.action, self.default_entry.args = spec, args
        self.default_entry.action_index = spec.index

    def get_default(self) -> tuple[str, dict[str, int]]:
        return self.default_entry.action.name, self.default_entry.params

    def _describe(self, norm: tuple) -> str:
        return "{" + ", ".join(f"{k.name}: {m}" for k, m in zip(self.spec.keys, norm)) + "}"
