"""NativeSwitch: the Switch API over a pipeline compiled to C (emit.py, build.py).

The Python objects of the reference Switch stay the control plane's view: tables validate
and order entries, the replication engine checks groups and sessions. After every change
the C side gets the new contents (tables whole, in lookup order; groups and sessions one at
a time). State the data plane changes lives in C and is read through it: registers,
counters, and the hit counts of table entries (direct counters).
"""
from __future__ import annotations

import ctypes
import functools
import os

from ...runtime.errors import InvalidArgument
from ...runtime.externs import Counter, Meter, Register
from ...runtime.pre import PacketReplicationEngine
from ...runtime.switch import Switch
from ...runtime.values import P4AssertionError
from ...runtime.tables import Table
from ..native_tables import DeferredLoads, nwords, ordered_entries, split_words, value_words
from . import build
from .emit import emit_c
from .externs import cell_layout, register_words

_u64p = ctypes.POINTER(ctypes.c_uint64)
_u32p = ctypes.POINTER(ctypes.c_uint32)
EMIT_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                           ctypes.c_uint32)
_RUNTIME_FILES = ("p4n_runtime.c", "p4n_api.c")


def _signatures(lib) -> None:
    c = ctypes
    vp = c.c_void_p
    table = {
        "p4n_switch_alloc": (vp, [c.c_uint32, _u32p, _u32p, c.POINTER(c.c_int), _u32p, _u32p,
                                  c.c_uint64, c.c_uint32, _u32p, c.c_uint32, _u32p]),
        "p4n_free": (None, [vp]),
        "p4n_process": (c.c_int, [vp, c.c_uint32, c.c_char_p, c.c_uint32, EMIT_FN, vp]),
        "p4n_process_at": (c.c_int, [vp, c.c_int64, c.c_uint32, c.c_char_p, c.c_uint32, EMIT_FN,
                                     vp]),
        "p4n_set_cpu_port": (None, [vp, c.c_int32]),
        "p4n_set_fixed_clock": (None, [vp, c.c_int64]),
        "p4n_register_read": (c.c_uint64, [vp, c.c_uint32, c.c_uint32]),
        "p4n_register_write": (None, [vp, c.c_uint32, c.c_uint32, c.c_uint64]),
        "p4n_register_reset": (None, [vp, c.c_uint32]),
        "p4n_register_read_words": (None, [vp, c.c_uint32, c.c_uint32, _u64p]),
        "p4n_register_write_words": (None, [vp, c.c_uint32, c.c_uint32, _u64p]),
        "p4n_vs_words": (c.c_uint32, []),
        "p4n_counter_read": (None, [vp, c.c_uint32, c.c_uint32, _u64p, _u64p]),
        "p4n_counter_write": (None, [vp, c.c_uint32, c.c_uint32, c.c_uint64, c.c_uint64]),
        "p4n_counter_reset": (None, [vp, c.c_uint32]),
        "p4n_table_load": (c.c_int, [vp, c.c_uint32, c.c_int, c.c_uint32, _u64p, c.c_uint64,
                                     _u64p]),
        "p4n_table_set_default": (None, [vp, c.c_uint32, c.c_uint32, c.c_uint32, _u64p]),
        "p4n_table_stats": (None, [vp, c.c_uint32, _u64p]),
        "p4n_table_meters": (None, [vp, c.c_uint32, _u64p]),
        "p4n_meters_alloc": (c.c_int, [vp, c.c_uint32, _u32p, c.POINTER(c.c_int), c.c_uint32]),
        "p4n_meter_set": (None, [vp, c.c_uint32, c.c_uint32, c.c_int, c.c_uint64, c.c_uint64,
                                 c.c_uint64, c.c_uint64]),
        "p4n_group_set": (c.c_int, [vp, c.c_uint32, c.c_int32, _u32p, _u32p]),
        "p4n_session_set": (c.c_int, [vp, c.c_uint32, c.c_int32, _u32p, _u32p, c.c_uint32]),
        "p4n_msg_pop": (c.c_int, [vp, c.c_char_p, c.c_uint32, _u32p, _u32p, _u32p]),
        "p4n_value_sets_alloc": (c.c_int, [vp, c.c_uint32]),
        "p4n_value_set_load": (c.c_int, [vp, c.c_uint32, c.c_uint32, c.c_uint32, _u64p]),
        "p4n_take_assertion": (c.c_int32, [vp]),
        "p4n_assertion_text": (c.c_char_p, [c.c_int]),
        "p4n_random_seed": (c.c_int, [vp, _u32p, c.c_uint32, c.c_uint32]),
        "p4n_random_hash_count": (c.c_uint32, []),
        "p4n_set_tracing": (None, [vp, c.c_int]),
        "p4n_trace_take": (c.c_int64, [vp, c.c_char_p, c.c_uint32]),
        "p4n_replay": (c.c_uint64, [vp, c.c_uint64, c.c_uint32, _u32p, c.POINTER(c.c_char_p),
                                    _u32p]),
    }
    for name, (restype, argtypes) in table.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def c_source(program) -> str:
    """The generated C of a program (made once per Program)."""
    source = getattr(program, "_c_source", None)
    if source is None:
        source = program._c_source = emit_c(program.ast, program.compiled)
    return source


def load_library(program, extra_flags=()):
    """The built and loaded pipeline of `program` (cached per Program and flags)."""
    key = tuple(extra_flags)
    libs = program.__dict__.setdefault("_c_libraries", {})
    if key not in libs:
        sources = {"pipeline.c": c_source(program)}
        for name in _RUNTIME_FILES:
            sources[name] = build.runtime_source(name)
        sources["tm.inc"] = build.runtime_source("tm.inc")
        flags = build.DEFAULT_FLAGS if not extra_flags else \
            tuple(f for f in build.DEFAULT_FLAGS if not f.startswith("-O")) + tuple(extra_flags)
        path = build.build_shared("pipeline", sources, flags=flags)
        lib = build.load(path)
        _signatures(lib)
        libs[key] = lib
    return libs[key]


def _key_words(spec) -> int:
    """64-bit words of a table's key in C: nwords per field, high first."""
    return sum(nwords(k.width) for k in spec.keys)


def _array(ctype, values):
    return (ctype * max(1, len(values)))(*values)


class NativeRegister(Register):
    """A register whose cells live in C."""

    def __init__(self, native, index: int, spec):
        super().__init__(spec.name, spec.size or 0, spec.width, spec.signed)
        self.cells = None
        self._native, self._index = native, index

    def read(self, index: int) -> int:
        self._check(index)
        if self.width > 64:           # words, least significant first
            words = (ctypes.c_uint64 * nwords(self.width))()
            self._native.lib.p4n_register_read_words(self._native.handle, self._index, index,
                                                     words)
            return sum(w << (64 * i) for i, w in enumerate(words))
        return self._native.lib.p4n_register_read(self._native.handle, self._index, index)

    def write(self, index: int, value: int) -> None:
        self.checked(index, value)          # C takes the unsigned pattern and extends it
        if self.width > 64:
            words = _array(ctypes.c_uint64, split_words(value, nwords(self.width))[::-1])
            self._native.lib.p4n_register_write_words(self._native.handle, self._index, index,
                                                      words)
            return
        self._native.lib.p4n_register_write(self._native.handle, self._index, index, value)

    def reset(self) -> None:
        self._native.lib.p4n_register_reset(self._native.handle, self._index)


class NativeCounter(Counter):
    """A counter whose cells live in C."""

    def __init__(self, native, index: int, spec):
        super().__init__(spec.name, spec.size or 0, spec.unit)
        self.packets = self.bytes = None
        self._native, self._index = native, index

    def count(self, index: int, nbytes: int) -> None:
        packets, bytes_ = self.read(index)
        self.write(index, packets + 1, bytes_ + nbytes)

    def read(self, index: int) -> tuple[int, int]:
        self._check(index)
        packets, bytes_ = ctypes.c_uint64(), ctypes.c_uint64()
        self._native.lib.p4n_counter_read(self._native.handle, self._index, index,
                                          ctypes.byref(packets), ctypes.byref(bytes_))
        return packets.value, bytes_.value

    def write(self, index: int, packets: int, bytes_: int) -> None:
        self._check(index)
        self._native.lib.p4n_counter_write(self._native.handle, self._index, index, packets,
                                           bytes_)

    def reset(self) -> None:
        self._native.lib.p4n_counter_reset(self._native.handle, self._index)


class NativeMeter(Meter):
    """A meter whose token buckets live in C; the configuration is kept here too, for
    get_config."""

    def __init__(self, native, index: int, spec):
        super().__init__(spec.name, spec.size or 0, spec.unit)
        self._native, self._index = native, index

    def execute(self, index: int, nbytes: int, now_us=None) -> int:
        raise InvalidArgument(f"{self.name}: the native switch executes meters in C")

    def set_config(self, index, cir, cburst, pir, pburst) -> None:
        super().set_config(index, cir, cburst, pir, pburst)
        self._native.lib.p4n_meter_set(self._native.handle, self._index, index, 1, cir, cburst,
                                       pir, pburst)

    def reset(self, index: int) -> None:
        super().reset(index)
        self._native.lib.p4n_meter_set(self._native.handle, self._index, index, 0, 0, 0, 0, 0)


def _meter_words(meter) -> list[int]:
    """The 9 words of an entry's direct meter in a table load (see p4n_table_load)."""
    buckets = getattr(meter, "_buckets", None) if meter is not None else None
    if not buckets:
        return [0] * 9
    words = [1]
    for bucket in buckets:                   # peak first, as in C
        words += [bucket.rate, bucket.burst, bucket.tokens, bucket.tokens_last]
    return words


class NativeReplication(PacketReplicationEngine):
    """Groups and sessions checked in Python, copied to C on every change."""

    def __init__(self, native):
        super().__init__()
        self._native = native

    def _push_group(self, group_id):
        replicas = self.groups.get(group_id)
        n = -1 if replicas is None else len(replicas)
        ports = _array(ctypes.c_uint32, [p for p, _ in replicas or ()])
        rids = _array(ctypes.c_uint32, [r for _, r in replicas or ()])
        if self._native.lib.p4n_group_set(self._native.handle, group_id, n, ports, rids):
            raise MemoryError("multicast group: out of memory in the native switch")

    def _push_session(self, session_id):
        session = self.sessions.get(session_id)
        replicas = session.replicas if session is not None else ()
        n = -1 if session is None else len(replicas)
        ports = _array(ctypes.c_uint32, [p for p, _ in replicas])
        rids = _array(ctypes.c_uint32, [r for _, r in replicas])
        truncate = session.truncate if session is not None else 0
        if self._native.lib.p4n_session_set(self._native.handle, session_id, n, ports, rids,
                                            truncate):
            raise MemoryError("clone session: out of memory in the native switch")

    def set_multicast_group(self, group_id, replicas):
        super().set_multicast_group(group_id, replicas)
        self._push_group(group_id)

    def delete_multicast_group(self, group_id):
        super().delete_multicast_group(group_id)
        self._push_group(group_id)

    def set_clone_session(self, session_id, replicas, *args, **kwargs):
        super().set_clone_session(session_id, replicas, *args, **kwargs)
        self._push_session(session_id)

    def delete_clone_session(self, session_id):
        super().delete_clone_session(session_id)
        self._push_session(session_id)


P4N_MEMBER, P4N_GROUP = 0xFFFFFFF0, 0xFFFFFFF1        # p4n.h
_PROFILE_MUTATORS = ("insert_member", "modify_member", "delete_member", "insert_group",
                     "modify_group", "delete_group")
_TABLE_MUTATORS = ("insert", "modify", "delete", "clear", "set_default", "reset_default")
_TABLE_READERS = ("get", "entries", "idle_entries")


class NativeSwitch(DeferredLoads, Switch):
    """`Switch` with the data plane in C (see the module docstring)."""

    backend = "c"

    def __init__(self, program, cpu_port=None, log=None, clock=None, seed=None,
                 extra_flags=(), **_):
        # {table index: Table} changed inside `deferred_loads`, loaded into C at its end.
        self._deferred: dict | None = None
        super().__init__(program, cpu_port=cpu_port, log=log, clock=clock, seed=seed)
        self.lib = load_library(program, extra_flags)
        compiled = program.compiled
        registers = [s for s in compiled.externs if s.kind == "register"]
        counters = [s for s in compiled.externs if s.kind == "counter"]
        places, cell_words = cell_layout(registers, register_words)      # as the C has them
        self.handle = self.lib.p4n_switch_alloc(
            len(registers), _array(ctypes.c_uint32, [s.size or 0 for s in registers]),
            _array(ctypes.c_uint32, [s.width for s in registers]),
            _array(ctypes.c_int, [int(s.signed) for s in registers]),
            _array(ctypes.c_uint32, [base for base, _ in places]),
            _array(ctypes.c_uint32, [stride for _, stride in places]), cell_words,
            len(counters), _array(ctypes.c_uint32, [s.size or 0 for s in counters]),
            len(compiled.tables), _array(ctypes.c_uint32, [_key_words(t) for t in compiled.tables]))
        if not self.handle:
            raise MemoryError("cannot allocate the native switch")
        self._free = functools.partial(self.lib.p4n_free, self.handle)
        for i, spec in enumerate(registers):
            self.externs[spec.name] = NativeRegister(self, i, spec)
        for i, spec in enumerate(counters):
            self.externs[spec.name] = NativeCounter(self, i, spec)
        meters = [s for s in compiled.externs if s.kind == "meter"]
        direct = [s for s in compiled.externs if s.kind == "direct_meter"]
        if self.lib.p4n_meters_alloc(self.handle, len(meters),
                                     _array(ctypes.c_uint32, [s.size or 0 for s in meters]),
                                     _array(ctypes.c_int, [int(s.unit == "bytes") for s in meters]),
                                     len(direct)):
            raise MemoryError("cannot allocate the native switch's meters")
        for i, spec in enumerate(meters):
            self.externs[spec.name] = NativeMeter(self, i, spec)
        for spec in direct:
            self._hook_direct_write(self.externs[spec.name], "set_config")
        for spec in compiled.externs:
            if spec.kind == "direct_counter":
                self._hook_direct_write(self.externs[spec.name], "write")
        if self.lib.p4n_value_sets_alloc(self.handle, len(compiled.value_sets)):
            raise MemoryError("cannot allocate the native switch's value sets")
        for k, (_, name, _) in enumerate(compiled.value_sets):
            self._hook_value_set(self.value_sets[name], k)
        self.pre = NativeReplication(self)
        self._seed_random(seed)
        self.lib.p4n_set_cpu_port(self.handle, -1 if cpu_port is None else cpu_port)
        self._table_ids = {}
        self._c_entries: dict[int, list] = {}
        for i, spec in enumerate(compiled.tables):
            table = self.tables[spec.name]
            self._table_ids[id(table)] = i
            self._hook_table(table, i)
            self._load_table(table, i, keep_stats=False)
        for profile in self.profiles.values():
            self._hook_profile(profile)
        self._counted_tables = [(self.tables[spec.name], i)
                                for i, spec in enumerate(compiled.tables)
                                if spec.direct_counter or spec.support_timeout]
        self._outputs: list = []
        self._emit = EMIT_FN(self._collect)
        self._trace_buffer = ctypes.create_string_buffer(1 << 16)
        if log is not None:
            self.lib.p4n_set_tracing(self.handle, 1)
        self._msg_buffer = ctypes.create_string_buffer(65536)

    def __del__(self):
        free = getattr(self, "_free", None)
        if free is not None:
            self._free = None
            free()

    # -- tables --------------------------------------------------------------------------------

    def _hook_table(self, table: Table, index: int) -> None:
        for name in _TABLE_MUTATORS:
            original = getattr(table, name)

            def mutate(*args, _original=original, **kwargs):
                deferred = self._deferred
                if deferred is not None and index in deferred:   # pulled, loaded at the end
                    return _original(*args, **kwargs)
                self._pull_stats(table, index)
                try:
                    return _original(*args, **kwargs)
                finally:
                    if deferred is not None:
                        deferred[index] = table
                    else:
                        self._load_table(table, index, keep_stats=True)
            setattr(table, name, mutate)
        for name in _TABLE_READERS:
            original = getattr(table, name)

            def read(*args, _original=original, **kwargs):
                self._pull_stats(table, index)
                return _original(*args, **kwargs)
            setattr(table, name, read)

    def _seed_random(self, seed) -> None:
        """random() draws what Python's random.Random(seed) would (PacketState's rng)."""
        if seed is None:
            seed = int.from_bytes(os.urandom(16), "little")
        value = abs(int(seed))
        key = []
        while True:
            key.append(value & 0xFFFFFFFF)
            value >>= 32
            if not value:
                break
        if self.lib.p4n_random_seed(self.handle, _array(ctypes.c_uint32, key), len(key),
                                    self.lib.p4n_random_hash_count()):
            raise MemoryError("cannot allocate the native switch's random streams")

    def _hook_profile(self, profile) -> None:
        """Members and groups are resolved into the entries of the tables using the
        profile: any change reloads those tables."""
        users = [(t, self._table_ids[id(t)]) for t in self.tables.values()
                 if t.profile is profile]
        for name in _PROFILE_MUTATORS:
            original = getattr(profile, name)

            def change(*args, _original=original, **kwargs):
                deferred = self._deferred
                for table, index in users:
                    if deferred is None or index not in deferred:
                        self._pull_stats(table, index)
                try:
                    return _original(*args, **kwargs)
                finally:
                    for table, index in users:
                        if deferred is not None:
                            deferred[index] = table
                        else:
                            self._load_table(table, index, keep_stats=True)
            setattr(profile, name, change)

    def _load_deferred(self, table: Table, index: int) -> None:
        self._load_table(table, index, keep_stats=True)

    @staticmethod
    def _profile_words(table: Table, entry) -> tuple[int, list[int]]:
        """(marker, words) of an entry pointing into an action profile: the members it may
        run, each as action index, argument count, arguments (see emit.profile_choice)."""
        kind, ref_id = entry.ref
        profile = table.profile
        if kind == "member":
            ids = [ref_id]
        else:
            ids = list(profile.groups[ref_id].members) if ref_id in profile.groups else []
        words = [ref_id, len(ids)]          # the id for traces, then the members
        for member_id in ids:
            member = profile.members[member_id]
            spec = table._actions[member.action]
            args = value_words([member.params[p] for p, _ in spec.params],
                          [w for _, w in spec.params])
            words += [spec.index, len(args)] + args
        return (P4N_MEMBER if kind == "member" else P4N_GROUP), words

    def _hook_value_set(self, value_set, k: int) -> None:
        per_field = self.lib.p4n_vs_words()      # words per key field, high first

        def load():
            members = value_set.members
            nfields = per_field * max((len(v) if isinstance(v, tuple) else 1
                                       for v, _ in members), default=1)
            words = []
            for value, mask in members:
                values = list(value) if isinstance(value, tuple) else [value]
                if mask is None:
                    masks = [(1 << (64 * per_field)) - 1] * len(values)
                else:
                    masks = list(mask) if isinstance(mask, tuple) else [mask]
                words += [w for v in values for w in split_words(v, per_field)] + \
                    [w for m in masks for w in split_words(m, per_field)]
            if self.lib.p4n_value_set_load(self.handle, k, len(members), nfields,
                                           _array(ctypes.c_uint64, words)):
                raise MemoryError(f"value set {value_set.name}: out of memory")
        for name in ("add", "remove", "clear"):
            original = getattr(value_set, name)

            def change(*args, _original=original, **kwargs):
                try:
                    return _original(*args, **kwargs)
                finally:
                    load()
            setattr(value_set, name, change)
        load()

    def _hook_direct_write(self, resource, method: str) -> None:
        """Writing a direct counter's counts or a direct meter's config (P4Runtime
        DirectCounterEntry, DirectMeterEntry) reaches C: the table's statistics are pulled
        before the write and its entries loaded again after it."""
        table = resource.table
        original = getattr(resource, method)

        def write_through(*args, **kwargs):
            index = self._table_ids[id(table)]
            self._pull_stats(table, index)
            original(*args, **kwargs)
            self._load_table(table, index, keep_stats=True)
        setattr(resource, method, write_through)

    def _load_table(self, table: Table, index: int, keep_stats: bool) -> None:
        kind, entries = ordered_entries(table)
        flat, stats = [], []
        keys = table.spec.keys
        for e in entries:
            if e.ref is not None:
                marker, words = self._profile_words(table, e)
                flat += [marker, len(words)] + words
            else:
                args = value_words(e.args, [w for _, w in e.action.params])
                flat.append(e.action_index)
                flat.append(len(args))
                flat.extend(args)
            flat.extend(_meter_words(e.meter))
            for key, m in zip(keys, e.match):
                mask, value, rng = Table._mask_value(key, m)
                n = nwords(key.width)      # nwords words, high first (emit.key_words)
                if rng is None:
                    for v, k in zip(split_words(value, n), split_words(mask, n)):
                        flat += [v, k, 0, 0, 0]
                else:               # a range over n words: its first word says n
                    for i, (lo, hi) in enumerate(zip(split_words(rng[0], n),
                                                     split_words(rng[1], n))):
                        flat += [0, 0, n if i == 0 else 0, lo, hi]
            stats += [e.packets, e.bytes, e.last_hit_ns]
        buffer = _array(ctypes.c_uint64, flat)
        if self.lib.p4n_table_load(self.handle, index, kind, len(entries), buffer, len(flat),
                                   _array(ctypes.c_uint64, stats)):
            raise MemoryError(f"table {table.name}: out of memory in the native switch")
        self._c_entries[index] = entries
        default = table.default_entry
        args = value_words(default.args, [w for _, w in default.action.params])
        self.lib.p4n_table_set_default(self.handle, index, default.action_index, len(args),
                                       _array(ctypes.c_uint64, args))

    def _pull_stats(self, table: Table, index: int) -> None:
        """Hit counts and direct meter buckets from C into the Python entries."""
        entries = self._c_entries.get(index)
        if not entries:
            return
        if table.spec.direct_counter or table.spec.support_timeout:
            out = (ctypes.c_uint64 * (3 * len(entries) + 2))()
            self.lib.p4n_table_stats(self.handle, index, out)
            for i, e in enumerate(entries):
                e.packets, e.bytes = out[3 * i], out[3 * i + 1]
                if out[3 * i + 2] != e.last_hit_ns:       # hit since: the timer restarts
                    e.last_hit_ns, e.idle_reported = out[3 * i + 2], False
        if table.spec.direct_meter:
            out = (ctypes.c_uint64 * (4 * len(entries) + 1))()
            self.lib.p4n_table_meters(self.handle, index, out)
            for i, e in enumerate(entries):
                buckets = getattr(e.meter, "_buckets", None)
                for b, bucket in enumerate(buckets or ()):
                    bucket.tokens = ctypes.c_int64(out[4 * i + 2 * b]).value
                    bucket.tokens_last = out[4 * i + 2 * b + 1]

    # -- data plane ----------------------------------------------------------------------------

    def _collect(self, _ctx, port, data, length):
        self._outputs.append((port, ctypes.string_at(data, length)))

    def process_packet(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        if not (isinstance(port, int) and 0 <= port <= 511):
            raise InvalidArgument(f"port {port!r} is not a 9-bit v1model port")
        self._outputs = []
        data = bytes(data)
        # This packet reads the Switch's clock; the native loop's packets keep the real one.
        self.lib.p4n_process_at(self.handle, self.clock(), port, data, len(data), self._emit,
                                None)
        outputs = self._outputs
        self._outputs = []
        if self.log is not None:
            self._deliver_trace()
        failed = self.lib.p4n_take_assertion(self.handle)
        if failed >= 0:
            raise P4AssertionError(self.lib.p4n_assertion_text(failed).decode())
        self.deliver_messages()
        for table, index in self._counted_tables:
            # Entries handed out earlier (Table.insert's result) show their hits at once.
            self._pull_stats(table, index)
        return self.delivered(outputs)

    def _deliver_trace(self) -> None:
        """The packet's trace lines, written by the C pipeline, to the log."""
        n = self.lib.p4n_trace_take(self.handle, self._trace_buffer, len(self._trace_buffer))
        if n < 0:
            self._trace_buffer = ctypes.create_string_buffer(-n * 2)
            n = self.lib.p4n_trace_take(self.handle, self._trace_buffer,
                                        len(self._trace_buffer))
        for line in self._trace_buffer.raw[:n].decode(errors="replace").splitlines():
            self.log(line)

    def deliver_messages(self) -> None:
        """Digests queued by the C pipeline, to `on_digest`, in order."""
        kind, ident, length = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint32()
        names = self.program.compiled.digests
        while self.lib.p4n_msg_pop(self.handle, self._msg_buffer, len(self._msg_buffer),
                                   ctypes.byref(kind), ctypes.byref(ident),
                                   ctypes.byref(length)) == 1:
            raw = self._msg_buffer.raw[:length.value]
            words = [int.from_bytes(raw[i:i + 8], "little") for i in range(0, len(raw), 8)]
            values, i = [], 0
            while i < len(words):      # each value: its word count, then its words (low first)
                n = words[i]
                values.append(sum(w << (64 * k) for k, w in enumerate(words[i + 1:i + 1 + n])))
                i += 1 + n
            name = names[ident.value]        # (the trace line is the C pipeline's)
            if self.on_digest:
                self.on_digest(name, values)

    def replay(self, packets, count: int) -> int:
        """Process `count` packets taken round robin from `packets` ([(port, bytes)]) in C,
        with the clock running; how many packets came out (the benchmark loop)."""
        self.lib.p4n_set_fixed_clock(self.handle, -1)
        ports = _array(ctypes.c_uint32, [p for p, _ in packets])
        datas = (ctypes.c_char_p * len(packets))(*[bytes(d) for _, d in packets])
        lens = _array(ctypes.c_uint32, [len(d) for _, d in packets])
        return self.lib.p4n_replay(self.handle, count, len(packets), ports, datas, lens)

    @property
    def process_function(self) -> int:
        """The address of `p4n_process`, for the native packet I/O loop."""
        return ctypes.cast(self.lib.p4n_process, ctypes.c_void_p).value


def native_available() -> bool:
    return build.compiler() is not None and os.environ.get("P4SWITCH_BACKEND", "") != "python"
