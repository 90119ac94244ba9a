"""P4Info (p4.config.v1.P4Info) for an elaborated v1model program.

``build_p4info(program)`` takes the front end's ``ast.Program`` (or its
``Pipeline``) and returns the P4Info message the P4Runtime server announces
and ``compile --p4runtime-files`` writes (``to_text`` gives the text format).

Object ids follow the P4Runtime convention p4c implements: the high byte is
the resource-type prefix (``P4Ids.Prefix``), the low 24 bits come from the
Jenkins one-at-a-time hash of the fully qualified name.  ``@id(N)`` is
honoured first (N alone, its prefix added when its high byte is 0); the other
names of each type are then assigned in sorted order, a collision moving to
the next free value (linear probing), so ids are stable across compiles.
Match-field, action-parameter and controller-metadata ids count from 1 in
declaration order unless ``@id`` says otherwise.  Aliases are the shortest
dot-separated suffix of the name that is unique among all objects.
"""

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.frontend import ast, types
from p4switch.frontend.errors import CompileError

P4Ids = p4info_pb2.P4Ids
DEFAULT_TABLE_SIZE = 1024

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {
    "packets": p4info_pb2.MeterSpec.PACKETS,
    "bytes": p4info_pb2.MeterSpec.BYTES,
}
_SCOPES = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}


class P4InfoError(CompileError):
    """The program cannot be described in P4Info (e.g. conflicting @id annotations)."""

    def __init__(self, message, loc=None):
        super().__init__(loc, message)


def jenkins_one_at_a_time(text):
    """Bob Jenkins' one-at-a-time hash of the UTF-8 bytes of ``text`` (32 bits)."""
    h = 0
    for byte in text.encode("utf-8"):
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


def _id_annotation(annotations):
    """The integer of an ``@id(N)`` annotation, or None."""
    ann = ast.find_annotation(annotations or [], "id")
    if ann is None:
        return None
    if len(ann.args) == 1:
        arg = ann.args[0]
        value = arg.const_value if arg.const_value is not None else getattr(arg, "value", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise P4InfoError("@id needs one integer argument", ann.loc)


class IdAllocator:
    """Assigns P4Runtime ids to (resource type, name) pairs as described above."""

    def __init__(self):
        self._requests = []         # (prefix, name, @id value or None)
        self._ids = {}
        self._locs = {}             # where each @id was written

    def request(self, prefix, name, annotations=()):
        self._requests.append((prefix, name, _id_annotation(annotations)))
        ann = ast.find_annotation(annotations or [], "id")
        self._locs[(prefix, name)] = ann.loc if ann is not None else None

    def assign(self):
        taken = set()
        for prefix, name, wanted in self._requests:
            if wanted is None:
                continue
            full = wanted | (prefix << 24) if wanted >> 24 == 0 else wanted
            loc = self._locs[(prefix, name)]
            if full >> 24 != prefix:
                raise P4InfoError(f"@id({wanted:#x}) of {name} has the wrong resource-type prefix", loc)
            if full in taken:
                raise P4InfoError(f"@id({wanted:#x}) of {name} is used twice", loc)
            taken.add(full)
            self._ids[(prefix, name)] = full
        for prefix, name, wanted in sorted(r for r in self._requests if r[2] is None):
            if (prefix, name) in self._ids:
                continue
            low = jenkins_one_at_a_time(name) & 0xFFFFFF
            for _ in range(1 << 24):
                candidate = (prefix << 24) | low
                if candidate not in taken:
                    break
                low = (low + 1) & 0xFFFFFF
            else:
                raise P4InfoError(f"no P4Runtime id left for {name}")
            taken.add(candidate)
            self._ids[(prefix, name)] = candidate

    def id_of(self, prefix, name):
        return self._ids[(prefix, name)]


def _aliases(names):
    """Shortest unique dot-separated suffix of each name."""
    suffix_count = {}
    split = {name: name.split(".") for name in names}
    for parts in split.values():
        for i in range(len(parts)):
            key = ".".join(parts[i:])
            suffix_count[key] = suffix_count.get(key, 0) + 1
    aliases = {}
    for name, parts in split.items():
        alias = name
        for i in range(len(parts) - 1, -1, -1):
            candidate = ".".join(parts[i:])
            if suffix_count[candidate] == 1:
                alias = candidate
                break
        aliases[name] = alias
    return aliases


def _local_ids(items, what):
    """Ids counting from 1 for (name, annotations) items, @id honoured."""
    ids, used, pending = {}, set(), []
    for name, annotations in items:
        wanted = _id_annotation(annotations)
        if wanted is None:
            pending.append(name)
        elif wanted in used:
            raise P4InfoError(f"@id({wanted}) used twice among the {what}")
        else:
            ids[name] = wanted
            used.add(wanted)
    next_id = 1
    for name in pending:
        while next_id in used:
            next_id += 1
        ids[name] = next_id
        used.add(next_id)
    return ids


def _annotation_int(ann) -> int:
    """The integer an annotation like `@max_group_size(200)` gives (0 when it gives none)."""
    if len(ann.args) == 1:
        arg = ann.args[0]
        value = arg.const_value if arg.const_value is not None else getattr(arg, "value", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise P4InfoError(f"@{ann.name} takes one integer", ann.loc)


def _enum_value(value):
    """Constructor arguments such as CounterType.packets arrive as the member name."""
    if isinstance(value, str):
        return value.rsplit(".", 1)[-1]
    return getattr(value, "name", value)


class _Builder:
    """Fills one P4Info message from a Pipeline."""

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.info = p4info_pb2.P4Info()
        self.ids = IdAllocator()
        self.type_info_done = set()
        # the actions some table lists or has as its default (the others are only called)
        self.table_actions = {a.name for a in pipeline.actions} | {
            t.default_action.name for t in pipeline.tables if t.default_action is not None}

    # -- identity ---------------------------------------------------------------
    def objects(self):
        """(prefix, name, annotations) of every P4Info object."""
        p = self.pipeline
        for table in p.tables:
            yield P4Ids.TABLE, table.name, table.annotations
        for action in self.actions():
            yield P4Ids.ACTION, action.name, action.annotations
        for kind, prefix in (("counter", P4Ids.COUNTER), ("direct_counter", P4Ids.DIRECT_COUNTER),
                             ("meter", P4Ids.METER), ("direct_meter", P4Ids.DIRECT_METER),
                             ("register", P4Ids.REGISTER)):
            for ext in p.externs_of(kind):
                if not (kind.startswith("direct_") and ext.owner_table is None):
                    yield prefix, ext.name, ext.annotations
        for ext in p.action_profiles:
            yield P4Ids.ACTION_PROFILE, ext.name, ext.annotations
        for digest in p.digests:
            yield P4Ids.DIGEST, digest.name, ()
        for name, decl in self.value_sets():
            yield P4Ids.VALUE_SET, name, decl.annotations
        for header in p.controller_headers:
            yield P4Ids.CONTROLLER_HEADER, header.name, getattr(header.decl, "annotations", ())

    def value_sets(self):
        """(qualified name, ValueSetDecl) of the parser value sets of every block instance."""
        found, pending, seen = [], list(self.pipeline.slots.values()), set()
        while pending:
            block = pending.pop(0)
            if block is None or id(block) in seen:
                continue
            seen.add(id(block))
            for local in getattr(block.decl, "locals", []):
                if isinstance(local, ast.ValueSetDecl):
                    found.append((f"{block.name}.{local.name}", local))
            pending.extend(block.children.values())
        return found

    def actions(self):
        """Pipeline actions plus default actions a table uses without listing them, and the
        actions the program calls directly."""
        seen = {a.name: a for a in self.pipeline.actions}
        for action in self.pipeline.called_actions:
            seen.setdefault(action.name, action)
        for table in self.pipeline.tables:
            default = table.default_action
            if default is not None and default.name not in seen:
                seen[default.name] = default
        return list(seen.values())

    def preamble(self, message, prefix, name, annotations=()):
        message.preamble.id = self.ids.id_of(prefix, name)
        message.preamble.name = name
        message.preamble.alias = self.alias[name]
        for ann in annotations or ():
            if ann.name not in ("id", "name", "tableonly", "defaultonly", "hidden",
                                "max_group_size", "selector_size_semantics", "max_member_weight"):
                body = f"({ann.raw})" if ann.raw else ""
                message.preamble.annotations.append(f"@{ann.name}{body}")

    # -- build ------------------------------------------------------------------
    def build(self):
        objects = list(self.objects())
        for prefix, name, annotations in objects:
            self.ids.request(prefix, name, annotations)
        self.ids.assign()
        self.alias = _aliases({name for _, name, _ in objects})
        self.info.pkg_info.arch = "v1model"
        for table in self.pipeline.tables:
            self.add_table(table)
        for action in self.actions():
            self.add_action(action)
        for ext in self.pipeline.externs:
            adder = getattr(self, "add_" + ext.extern, None)
            if adder is not None:
                adder(ext)
        for digest in self.pipeline.digests:
            self.add_digest(digest)
        for header in self.pipeline.controller_headers:
            self.add_controller_header(header)
        for name, decl in self.value_sets():
            self.add_value_set(name, decl)
        return self.info

    def add_table(self, table):
        msg = self.info.tables.add()
        self.preamble(msg, P4Ids.TABLE, table.name, table.annotations)
        # A selector's fields are the hash input, not match fields (as p4c writes P4Info).
        keys = [k for k in table.keys if k.match_kind != "selector"]
        key_ids = _local_ids([(k.name, k.annotations) for k in keys], f"keys of {table.name}")
        for key in keys:
            if key.match_kind not in _MATCH_TYPES:
                raise P4InfoError(f"match kind {key.match_kind!r} of {table.name} is not supported")
            field = msg.match_fields.add()
            field.id = key_ids[key.name]
            field.name = key.name
            field.bitwidth = key.bitwidth
            field.match_type = _MATCH_TYPES[key.match_kind]
            key_type = key.expr.type if key.expr is not None else None
            if isinstance(key_type, types.EnumType) and key_type.underlying is not None:
                # p4c describes a serializable enum key's type in type_info (the match field
                # itself keeps only its bit width).
                self.add_serializable_enum(key_type)
        listed = set()
        for ref in table.actions:
            listed.add(ref.action.name)
            self.add_action_ref(msg, ref.action.name, _SCOPES[ref.scope], ref.annotations)
        default = table.default_action
        if default is not None and default.name not in listed:
            # The implicit NoAction default appears as a default-only action, as p4c does.
            self.add_action_ref(msg, default.name, p4info_pb2.ActionRef.DEFAULT_ONLY)
        if default is not None and table.default_is_const:
            msg.const_default_action_id = self.ids.id_of(P4Ids.ACTION, default.name)
        if default is not None:
            # Also the implicit NoAction of a table without default_action, as p4c writes it.
            self.initial_default_action(msg.initial_default_action, default, table.default_args)
        if table.implementation is not None:
            msg.implementation_id = self.ids.id_of(P4Ids.ACTION_PROFILE, table.implementation.name)
        for direct, prefix in ((table.direct_counter, P4Ids.DIRECT_COUNTER),
                               (table.direct_meter, P4Ids.DIRECT_METER)):
            if direct is not None:
                msg.direct_resource_ids.append(self.ids.id_of(prefix, direct.name))
        msg.size = table.size if table.size is not None else DEFAULT_TABLE_SIZE
        if table.const_entries:
            # As p4c: any entries in the program are initial entries; `const` ones also
            # make the table const.
            msg.has_initial_entries = True
            msg.is_const_table = table.entries_const
        if table.idle_timeout:
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL

    def initial_default_action(self, msg, action, args):
        """The default action the program gives a table, with its arguments (each the
        parameter's width in whole bytes, big-endian, as p4c writes them)."""
        msg.action_id = self.ids.id_of(P4Ids.ACTION, action.name)
        param_ids = _local_ids([(p.name, p.annotations) for p in action.params],
                               f"parameters of {action.name}")
        for param, arg in zip(action.params, args):
            value = arg.const_value
            if not isinstance(value, int):
                continue
            out = msg.arguments.add()
            out.param_id = param_ids[param.name]
            out.value = (value & ((1 << param.bitwidth) - 1)).to_bytes((param.bitwidth + 7) // 8, "big")

    def add_action_profile(self, ext):
        msg = self.info.action_profiles.add()
        self.preamble(msg, P4Ids.ACTION_PROFILE, ext.name, ext.annotations)
        for table in self.pipeline.tables:
            if table.implementation is ext:
                msg.table_ids.append(self.ids.id_of(P4Ids.TABLE, table.name))
        msg.size = ext.size or 0
        if ext.extern == "action_selector":
            msg.with_selector = True
            max_group = ast.find_annotation(ext.annotations, "max_group_size")
            if max_group is not None:
                msg.max_group_size = _annotation_int(max_group)
            semantics = ast.find_annotation(ext.annotations, "selector_size_semantics")
            if semantics is not None and (semantics.raw or "").strip().strip('"') == "sum_of_members":
                msg.sum_of_members.SetInParent()
                weight = ast.find_annotation(ext.annotations, "max_member_weight")
                if weight is not None:
                    msg.sum_of_members.max_member_weight = _annotation_int(weight)
            else:
                msg.sum_of_weights.SetInParent()

    add_action_selector = add_action_profile

    def add_action_ref(self, table_msg, action_name, scope, annotations=()):
        ref = table_msg.action_refs.add()
        ref.id = self.ids.id_of(P4Ids.ACTION, action_name)
        ref.scope = scope
        if scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
            ref.annotations.append("@defaultonly")
        elif scope == p4info_pb2.ActionRef.TABLE_ONLY:
            ref.annotations.append("@tableonly")
        # The other annotations of the entry in the table's action list, as p4c copies them.
        for ann in annotations or ():
            if ann.name not in ("tableonly", "defaultonly", "id", "name"):
                body = f"({ann.raw})" if ann.raw else ""
                ref.annotations.append(f"@{ann.name}{body}")

    def add_action(self, action):
        msg = self.info.actions.add()
        self.preamble(msg, P4Ids.ACTION, action.name, action.annotations)
        if action.name not in self.table_actions:
            # p4c binds the arguments of an action only called directly (its front end turns
            # the parameters into locals), so its P4Info lists no parameters for it.
            return
        param_ids = _local_ids([(p.name, p.annotations) for p in action.params],
                               f"parameters of {action.name}")
        for param in action.params:
            p = msg.params.add()
            p.id = param_ids[param.name]
            p.name = param.name
            p.bitwidth = param.bitwidth

    def _add_counter_or_meter(self, ext, messages, kind, units, direct: bool):
        """A counter or meter: indexed (`size` cells) or direct (a cell per entry of the
        table that owns it)."""
        if direct and ext.owner_table is None:   # no table uses it: a warning (Pipeline.warnings)
            return
        msg = messages.add()
        self.preamble(msg, kind, ext.name, ext.annotations)
        msg.spec.unit = self.unit(ext, units)
        if direct:
            msg.direct_table_id = self.owner_table_id(ext)
        else:
            msg.size = ext.size

    def add_counter(self, ext):
        self._add_counter_or_meter(ext, self.info.counters, P4Ids.COUNTER, _COUNTER_UNITS, False)

    def add_direct_counter(self, ext):
        self._add_counter_or_meter(ext, self.info.direct_counters, P4Ids.DIRECT_COUNTER,
                                   _COUNTER_UNITS, True)

    def add_meter(self, ext):
        self._add_counter_or_meter(ext, self.info.meters, P4Ids.METER, _METER_UNITS, False)

    def add_direct_meter(self, ext):
        self._add_counter_or_meter(ext, self.info.direct_meters, P4Ids.DIRECT_METER,
                                   _METER_UNITS, True)

    def add_register(self, ext):
        msg = self.info.registers.add()
        self.preamble(msg, P4Ids.REGISTER, ext.name, ext.annotations)
        element = ext.type_args[0] if ext.type_args else None
        self.fill_type_spec(msg.type_spec, element, ext.name)
        msg.size = ext.size

    @staticmethod
    def unit(ext, units):
        kind = _enum_value(ext.args.get("type"))
        if kind not in units:
            raise P4InfoError(f"{ext.extern} {ext.name}: unknown type {kind!r}")
        return units[kind]

    def owner_table_id(self, ext):
        if ext.owner_table is None:
            raise P4InfoError(f"{ext.extern} {ext.name} is not attached to any table")
        return self.ids.id_of(P4Ids.TABLE, ext.owner_table.name)

    def add_digest(self, digest):
        msg = self.info.digests.add()
        self.preamble(msg, P4Ids.DIGEST, digest.name)
        self.fill_type_spec(msg.type_spec, digest.type, digest.name)

    def add_controller_header(self, header):
        msg = self.info.controller_packet_metadata.add()
        self.preamble(msg, P4Ids.CONTROLLER_HEADER, header.name,
                      getattr(header.decl, "annotations", ()))
        field_annotations = {f.name: getattr(f, "annotations", ())
                             for f in getattr(header.decl, "fields", [])}
        fields = header.type.fields
        ids = _local_ids([(name, field_annotations.get(name, ())) for name, _ in fields],
                         f"fields of {header.name}")
        for name, ftype in fields:
            meta = msg.metadata.add()
            meta.id = ids[name]
            meta.name = name
            meta.bitwidth = self.bit_width(ftype, f"{header.name}.{name}")

    def add_value_set(self, name, decl):
        msg = self.info.value_sets.add()
        self.preamble(msg, P4Ids.VALUE_SET, name, decl.annotations)
        size = decl.size.const_value if decl.size is not None else None
        msg.size = size or 0
        element = decl.type_ref.type
        while isinstance(element, types.NewType):
            element = element.base
        if isinstance(element, types.StructType):
            field_decls = {f.name: f for f in getattr(element.decl, "fields", [])}
            members = [(fname, ftype, getattr(field_decls.get(fname), "annotations", []))
                       for fname, ftype in element.fields]
        else:
            members = [("", element, [])]
        ids = _local_ids([(fname, anns) for fname, _, anns in members], f"fields of {name}")
        for fname, ftype, anns in members:
            field = msg.match.add()
            field.id = ids[fname]
            field.name = fname
            field.bitwidth = self.bit_width(ftype, f"{name}.{fname}" if fname else name)
            kind = ast.find_annotation(anns, "match")
            kind_name = kind.raw.strip() if kind is not None else "exact"
            if kind_name not in _MATCH_TYPES:
                raise P4InfoError(f"{name}: match kind {kind_name!r} is not supported")
            field.match_type = _MATCH_TYPES[kind_name]

    # -- types ------------------------------------------------------------------
    @staticmethod
    def bit_width(t, what):
        width = types.scalar_width(t)
        if width is None:
            raise P4InfoError(f"{what}: type {types.strip_newtype(t)} has no fixed bit width")
        return width

    def fill_type_spec(self, spec, t, what):
        """Describe type ``t`` in a P4DataTypeSpec, adding named types to type_info."""
        if isinstance(t, types.NewType):
            t = t.base
        if isinstance(t, types.BitsType):
            target = spec.bitstring.int if t.signed else spec.bitstring.bit
            target.bitwidth = t.width
        elif isinstance(t, types.BoolType):
            spec.bool.SetInParent()
        elif isinstance(t, types.VarbitType):
            spec.bitstring.varbit.max_bitwidth = t.max_width
        elif isinstance(t, types.TupleType):
            for element in t.elements:
                self.fill_type_spec(spec.tuple.members.add(), element, what)
        elif isinstance(t, types.StackType):
            spec.header_stack.header.name = t.element.name
            spec.header_stack.size = t.size
            self.add_struct_like(t.element, True, what)
        elif isinstance(t, types.HeaderUnionType):
            spec.header_union.name = t.name
            self.add_header_union(t, what)
        elif isinstance(t, types.HeaderType):
            spec.header.name = t.name
            self.add_struct_like(t, True, what)
        elif isinstance(t, types.StructType):
            spec.struct.name = t.name
            self.add_struct_like(t, False, what)
        elif isinstance(t, types.EnumType) and t.underlying is not None:
            spec.serializable_enum.name = t.name
            self.add_serializable_enum(t)
        elif isinstance(t, types.EnumType):
            spec.enum.name = t.name
            if t.name not in self.info.type_info.enums:
                for member in t.members:
                    self.info.type_info.enums[t.name].members.add().name = member
        elif isinstance(t, types.ErrorType):
            spec.error.SetInParent()
            if not self.info.type_info.error.members:
                self.info.type_info.error.members.extend(t.members)
        else:
            raise P4InfoError(f"{what}: type {t} cannot be described in P4Info")

    def add_struct_like(self, t, is_header, what):
        if t.name in self.type_info_done:
            return
        self.type_info_done.add(t.name)
        type_info = self.info.type_info
        entry = type_info.headers[t.name] if is_header else type_info.structs[t.name]
        for name, ftype in t.fields:
            member = entry.members.add()
            member.name = name
            if is_header:
                member.type_spec.bitstring.CopyFrom(self.bitstring(ftype, f"{what}.{name}"))
            else:
                self.fill_type_spec(member.type_spec, ftype, f"{what}.{name}")

    def bitstring(self, t, what):
        spec = p4info_pb2.P4DataTypeSpec()
        self.fill_type_spec(spec, t, what)
        if not spec.HasField("bitstring"):
            raise P4InfoError(f"{what}: header fields must be bit strings")
        return spec.bitstring

    def add_header_union(self, t, what):
        if t.name in self.type_info_done:
            return
        self.type_info_done.add(t.name)
        entry = self.info.type_info.header_unions[t.name]
        for name, ftype in t.fields:
            member = entry.members.add()
            member.name = name
            member.header.name = ftype.name
            self.add_struct_like(ftype, True, what)

    def add_serializable_enum(self, t):
        if t.name in self.type_info_done:
            return
        self.type_info_done.add(t.name)
        entry = self.info.type_info.serializable_enums[t.name]
        entry.underlying_type.bitwidth = t.underlying.width
        nbytes = max(1, (t.underlying.width + 7) // 8)
        for member in t.members:
            m = entry.members.add()
            m.name = member
            m.value = (t.values[member] & t.underlying.mask).to_bytes(nbytes, "big")


def build_p4info(program):
    """P4Info for an ``ast.Program`` (after ``frontend.load``) or its ``Pipeline``."""
    pipeline = program.pipeline if isinstance(program, ast.Program) else program
    if pipeline is None:
        raise P4InfoError("the program has no main package instance")
    return _Builder(pipeline).build()


def to_text(p4info):
    """The protobuf text format of a P4Info, as ``--p4runtime-files x.txt`` writes it."""
    return text_format.MessageToString(p4info)


def from_text(text):
    """Parse P4Info text format back into a message."""
    return text_format.Parse(text, p4info_pb2.P4Info())
