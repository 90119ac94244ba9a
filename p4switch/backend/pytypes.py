"""Python classes for the program's headers, structs and header unions (generated source).

Every struct-like type becomes a class with `__slots__` (one slot per field, named `f_<field>`,
plus `valid` for headers) and straight-line methods: `copy()`, `_assign(other)` (deep copy into
self, so objects the traffic manager holds stay the same), `__eq__`, `_fields()` (the
`(value, width)` list that hashes, checksums and digests take), `_emit(writer)`, and for
headers `_extract(reader[, varbit_bits])`, `_set_bits(int)` (lookahead) and `_reset()`.

A header whose fields are all 8, 16, 32 or 64 bits wide also gets a module-level
`struct.Struct` layout (`_L_<class>`): it is extracted and emitted with one `unpack`/`pack`
call instead of shifting one wide integer per field, which is quadratic in the header's size.
"""

from __future__ import annotations

from ..frontend import types as T
from ..frontend.errors import CompileError
from ..frontend.types import scalar_width


def field_attr(name: str) -> str:
    """The Python attribute holding P4 field `name` (prefixed so no name is reserved)."""
    return "f_" + name


def to_unsigned_src(src: str, t) -> str:
    """Source turning a value of scalar type `t` into its unsigned bit pattern."""
    t = T.strip_newtype(t)
    if isinstance(t, T.BoolType):
        return f"int({src})"
    if isinstance(t, T.BitsType) and t.signed:
        return f"(({src}) & {t.mask})"
    if isinstance(t, T.EnumType) and t.underlying is not None and t.underlying.signed:
        return f"(({src}) & {t.underlying.mask})"
    return src


def from_unsigned_src(src: str, t) -> str:
    """Source turning an unsigned bit pattern into a value of scalar type `t`."""
    t = T.strip_newtype(t)
    if isinstance(t, T.BoolType):
        return f"bool({src})"
    bits = t.underlying if isinstance(t, T.EnumType) else t
    if isinstance(bits, T.BitsType) and bits.signed:
        half = 1 << (bits.width - 1)
        return f"((({src}) ^ {half}) - {half})"
    return src


_LAYOUT_CODES = {8: "bB", 16: "hH", 32: "iI", 64: "qQ"}


def struct_layout(fields) -> str | None:
    """The `struct` format of a header's fields when all are 8/16/32/64-bit bits/int (or
    enums over them), big-endian; None otherwise."""
    codes = []
    for _, ft in fields:
        bits = ft.underlying if isinstance(ft, T.EnumType) else ft
        if not isinstance(bits, T.BitsType) or bits.width not in _LAYOUT_CODES:
            return None
        signed_code, unsigned_code = _LAYOUT_CODES[bits.width]
        codes.append(signed_code if bits.signed else unsigned_code)
    return "!" + "".join(codes) if codes else None


class TypeRegistry:
    """Assigns a Python class to each struct-like type and writes their source."""

    def __init__(self):
        self._names: dict = {}          # types.Type -> class name
        self._order: list = []          # types in the order their classes must be defined
        self._busy: set = set()

    # -- naming ----------------------------------------------------------------------------

    def class_name(self, t) -> str:
        t = T.strip_newtype(t)
        name = self._names.get(t)
        if name is None:
            if t in self._busy:
                raise CompileError(getattr(t.decl, "loc", None),
                                   f"recursive type {t} is not supported")
            self._busy.add(t)
            for _, ft in t.fields:       # dependencies first
                self._touch(ft)
            self._busy.discard(t)
            kind = {T.HeaderType: "H", T.HeaderUnionType: "U"}.get(type(t), "S")
            safe = "".join(c if c.isalnum() else "_" for c in str(t))
            name = f"{kind}{len(self._names)}_{safe}"
            self._names[t] = name
            self._order.append(t)
        return name

    def _touch(self, t) -> None:
        t = T.strip_newtype(t)
        if isinstance(t, T.StructLikeType):
            self.class_name(t)
        elif isinstance(t, T.StackType):
            self._touch(t.element)
        elif isinstance(t, T.TupleType):
            for e in t.elements:
                self._touch(e)

    def default_src(self, t) -> str:
        """Source of a fresh value of type `t` (zero / invalid, as bmv2 initialises)."""
        t = T.strip_newtype(t)
        if isinstance(t, T.BoolType):
            return "False"
        if isinstance(t, (T.BitsType, T.IntType, T.EnumType, T.ErrorType, T.MatchKindType)):
            return "0"
        if isinstance(t, T.VarbitType):
            return "(0, 0)"
        if isinstance(t, T.StringType):
            return "''"
        if isinstance(t, T.StructLikeType):
            return f"{self.class_name(t)}()"
        if isinstance(t, T.StackType):
            return f"HeaderStack({self.class_name(t.element)}, {t.size})"
        if isinstance(t, T.TupleType):
            return "(" + "".join(self.default_src(e) + ", " for e in t.elements) + ")"
        raise CompileError(None, f"values of type {t} are not supported")

    # -- source ----------------------------------------------------------------------------

    def source(self) -> str:
        return "\n".join(self._class_source(t) for t in self._order)

    def _class_source(self, t) -> str:
        try:
            return self._class_source_unchecked(t)
        except CompileError as error:
            if error.loc is None:        # point at the type's declaration
                error.loc = getattr(t.decl, "loc", None)
                error.message = f"{t}: {error.message}"
                error.args = (error.message,)
            raise

    def _class_source_unchecked(self, t) -> str:
        name = self._names[t]
        is_header = isinstance(t, T.HeaderType)
        fields = [(field_attr(n), T.strip_newtype(ft)) for n, ft in t.fields]
        slots = (["valid"] if is_header else []) + [a for a, _ in fields]
        # A header's bits: its fields in order, a struct-typed field (P4-16 allows them in
        # headers) standing for its own fields, as `f_s.f_x` paths.
        bits = self._flatten(fields) if is_header else None
        layout = struct_layout(bits) if is_header else None
        lines = []
        if layout is not None:
            lines.append(f"_L_{name} = _Struct({layout!r})")
        lines += [f"class {name}:", f"    __slots__ = {tuple(slots)!r}"]
        lines += self._init_src(is_header, fields)
        lines += self._copy_src(name, is_header, fields)
        lines += self._assign_src(is_header, fields)
        lines += self._eq_src(t, is_header, fields)
        lines += self._fields_src(fields)
        lines += self._make_src(name, is_header, fields)
        if is_header:
            lines += self._header_methods(fields, bits, layout and f"_L_{name}")
        else:
            lines += self._container_methods(t, fields)
        return "\n".join(lines) + "\n"

    def _init_src(self, is_header, fields):
        lines = ["    def __init__(self):"]
        if is_header:
            lines.append("        self.valid = False")
        lines += [f"        self.{a} = {self.default_src(ft)}" for a, ft in fields]
        if len(lines) == 1:
            lines.append("        pass")
        return lines

    @staticmethod
    def _per_field_src(head, is_header, fields, valid, composite, scalar):
        """Method lines: `head`, then `valid` for a header, then one line per field from
        `composite` (struct-like and stack fields) or `scalar`, formatted with its attribute."""
        lines = list(head)
        if is_header:
            lines.append(valid)
        for a, ft in fields:
            pattern = composite if isinstance(ft, (T.StructLikeType, T.StackType)) else scalar
            lines.append(pattern.format(a=a))
        return lines

    def _copy_src(self, name, is_header, fields):
        head = ["    def copy(self):", f"        c = {name}.__new__({name})"]
        return self._per_field_src(head, is_header, fields, "        c.valid = self.valid",
                                   "        c.{a} = self.{a}.copy()",
                                   "        c.{a} = self.{a}") + ["        return c"]

    def _assign_src(self, is_header, fields):
        lines = self._per_field_src(["    def _assign(self, o):"], is_header, fields,
                                    "        self.valid = o.valid",
                                    "        self.{a}._assign(o.{a})", "        self.{a} = o.{a}")
        if len(lines) == 1:
            lines.append("        pass")
        return lines

    def _eq_src(self, t, is_header, fields):
        same = " and ".join(f"self.{a} == o.{a}" for a, _ in fields) or "True"
        lines = ["    def __eq__(self, o):",
                 f"        if type(o) is not type(self): return False"]
        if is_header:
            lines.append(f"        return self.valid == o.valid and (not self.valid or ({same}))")
        else:
            lines.append(f"        return {same}")
        return lines

    @staticmethod
    def _make_src(name, is_header, fields):
        """`_make(*values)`: a value built from a list/struct expression (headers: valid)."""
        args = ", ".join(["cls"] + [a for a, _ in fields])
        lines = ["    @classmethod", f"    def _make({args}):", "        c = cls.__new__(cls)"]
        if is_header:
            lines.append("        c.valid = True")
        lines += [f"        c.{a} = {a}" for a, _ in fields]
        lines.append("        return c")
        return lines

    def _fields_src(self, fields):
        """`_fields()`: the flattened (value, width) list in declaration order."""
        lines = ["    def _fields(self):", "        out = []"]
        for a, ft in fields:
            width = scalar_width(ft)
            if width is not None:
                lines.append(f"        out.append(({to_unsigned_src('self.' + a, ft)}, {width}))")
            elif isinstance(ft, T.VarbitType):
                lines.append(f"        out.append((self.{a}[1], self.{a}[0]))")
            elif isinstance(ft, (T.StructLikeType, T.StackType)):
                lines.append(f"        out.extend(self.{a}._fields())")
            elif isinstance(ft, T.ErrorType):
                lines.append(f"        out.append((self.{a}, 32))")
            else:
                lines.append(f"        raise TypeError('field {a[2:]} of type {ft} has no bits')")
        lines.append("        return out")
        return lines

    # -- headers ---------------------------------------------------------------------------

    @classmethod
    def _flatten(cls, fields):
        """[(attribute path, scalar or varbit type)]: struct fields replaced by theirs."""
        flat = []
        for a, ft in fields:
            if isinstance(ft, T.StructType):
                flat += cls._flatten([(f"{a}.{field_attr(n)}", T.strip_newtype(x))
                                      for n, x in ft.fields])
            else:
                flat.append((a, ft))
        return flat

    def _header_methods(self, fields, bits, layout):
        lines = ["    def _is_valid(self):", "        return self.valid"]
        lines += ["    def _reset(self):"] + [
            f"        self.{a} = {self.default_src(ft)}" for a, ft in fields] + [
            "        self.valid = False"]
        fields = bits
        groups = self._split_at_varbit(fields)
        if layout is not None:
            lines += self._extract_layout_src(fields, layout)
            lines += self._emit_layout_src(fields, layout, groups)
        else:
            lines += self._extract_src(groups)
            lines += self._emit_src(groups)
        lines += self._set_bits_src(fields)
        return lines

    @staticmethod
    def _split_at_varbit(fields):
        """[fixed fields], varbit field or None, [fixed fields] (one varbit at most)."""
        varbits = [i for i, (_, ft) in enumerate(fields) if isinstance(ft, T.VarbitType)]
        if len(varbits) > 1:
            raise CompileError(None, "headers with more than one varbit field are not supported")
        if not varbits:
            return fields, None, []
        i = varbits[0]
        return fields[:i], fields[i], fields[i + 1:]

    @staticmethod
    def _unpack_lines(fields, var, indent):
        """Lines assigning `fields` from the big-endian integer in `var`."""
        total = sum(scalar_width(ft) for _, ft in fields)
        lines, shift = [], total
        for a, ft in fields:
            width = scalar_width(ft)
            shift -= width
            raw = f"{var} >> {shift}" if shift else var
            if shift + width < total:
                raw = f"({raw}) & {(1 << width) - 1}"
            lines.append(f"{indent}self.{a} = {from_unsigned_src(raw, ft)}")
        return lines

    @staticmethod
    def _pack_src(fields) -> str:
        total = sum(scalar_width(ft) for _, ft in fields)
        parts, shift = [], total
        for a, ft in fields:
            shift -= scalar_width(ft)
            value = to_unsigned_src("self." + a, ft)
            parts.append(f"({value} << {shift})" if shift else value)
        return " | ".join(parts) or "0"

    def _extract_src(self, groups):
        before, varbit, after = groups
        for _, ft in before + after:
            if scalar_width(ft) is None:
                raise CompileError(None, f"header field of type {ft} is not supported")
        lines = ["    def _extract(self, pkt, vbits=0):"]
        if varbit is not None:
            # Check everything first so a failed extract consumes nothing, in bmv2's order:
            # whole bytes, then the packet's length, then the field's maximum.
            fixed = sum(scalar_width(ft) for _, ft in before + after)
            lines += ["        if vbits % 8:",      # only whole bytes can be extracted
                      "            raise ParserException('ParserInvalidArgument')",
                      f"        if pkt.remaining_bits() < {fixed} + vbits:",
                      "            raise ParserException('PacketTooShort')",
                      f"        if vbits > {varbit[1].max_width}:",
                      "            raise ParserException('HeaderTooShort')"]
        if before:
            width = sum(scalar_width(ft) for _, ft in before)
            lines += self._read_lines(width, varbit is None)
            lines += self._unpack_lines(before, "v", "        ")
        if varbit is not None:
            a, ft = varbit
            lines.append(f"        self.{a} = (vbits, pkt.extract(vbits))")
        if after:
            width = sum(scalar_width(ft) for _, ft in after)
            lines.append(f"        v = pkt.extract({width})")
            lines += self._unpack_lines(after, "v", "        ")
        lines.append("        self.valid = True")
        return lines

    @staticmethod
    def _extract_layout_src(fields, layout):
        targets = "".join(f"self.{a}, " for a, _ in fields)
        return ["    def _extract(self, pkt, vbits=0):",
                f"        ({targets}) = pkt.unpack({layout})",
                "        self.valid = True"]

    def _emit_layout_src(self, fields, layout, groups):
        """One `pack`; a value out of its field's range (which only a bug elsewhere can
        leave) takes the bit-wise path, so the bytes are exactly what it would write."""
        values = ", ".join(f"self.{a}" for a, _ in fields)
        fallback = self._emit_src(groups)[2:]
        return ["    def _emit(self, w):", "        if self.valid:", "            try:",
                f"                w.emit_packed({layout}.pack({values}))",
                "            except _StructError:"] + ["    " + line for line in fallback]

    @staticmethod
    def _read_lines(width, whole_header):
        """`v = pkt.extract(width)`, with the reader's common case (a byte-aligned position,
        enough bytes left) written out, saving two calls per header."""
        if not whole_header or width % 8:
            return [f"        v = pkt.extract({width})"]
        return ["        pos = pkt.pos",
                f"        if pos & 7 or pos + {width} > pkt.nbits:",
                f"            v = pkt.extract({width})      # raises PacketTooShort",
                "        else:",
                f"            pkt.pos = pos + {width}",
                f"            v = _from_bytes(pkt.data[pos >> 3:(pos >> 3) + {width // 8}], "
                "'big')"]

    def _emit_src(self, groups):
        before, varbit, after = groups
        lines = ["    def _emit(self, w):", "        if self.valid:"]
        if varbit is None:
            width = sum(scalar_width(ft) for _, ft in before)
            if width and width % 8 == 0:
                # The writer's common case (no pending bits) written out.
                lines += ["            if w.accbits:",
                          f"                w.emit({self._pack_src(before)}, {width})",
                          "            else:",
                          f"                w.out += ({self._pack_src(before)})"
                          f".to_bytes({width // 8}, 'big')"]
            elif width:
                lines.append(f"            w.emit({self._pack_src(before)}, {width})")
            else:
                lines.append("            pass")
            return lines
        for part in (before, None, after):
            if part is None:
                a = varbit[0]
                lines.append(f"            w.emit(self.{a}[1], self.{a}[0])")
            elif part:
                width = sum(scalar_width(ft) for _, ft in part)
                lines.append(f"            w.emit({self._pack_src(part)}, {width})")
        return lines

    def _set_bits_src(self, fields):
        """`_set_bits(v)`: fill a header from the integer `lookahead<H>()` read (valid)."""
        lines = ["    def _set_bits(self, v):"]
        if all(scalar_width(ft) is not None for _, ft in fields):
            lines += self._unpack_lines(fields, "v", "        ")
        else:
            lines.append("        raise TypeError('lookahead of a header with varbit')")
        lines.append("        self.valid = True")
        lines.append("        return self")
        return lines

    # -- structs and unions ----------------------------------------------------------------

    def _container_methods(self, t, fields):
        composite = [a for a, ft in fields if isinstance(ft, (T.StructLikeType, T.StackType))]
        lines = ["    def _emit(self, w):"]
        lines += [f"        self.{a}._emit(w)" for a in composite] or ["        pass"]
        lines += ["    def _is_valid(self):",
                  "        return " + (" or ".join(f"self.{a}._is_valid()" for a in composite)
                                      or "False")]
        if isinstance(t, T.HeaderUnionType):
            # Making one member valid makes the others invalid (spec 8.20).
            lines += ["    def _only(self, keep):"]
            lines += [f"        if keep != {a!r}: self.{a}._reset()" for a in composite] or [
                "        pass"]
            lines += ["    def _reset(self):"] + [f"        self.{a}._reset()" for a in composite]
        if self.packs(t):
            # A struct of bit fields as one number: `lookahead<S>()` and register cells.
            bits = self._flatten(fields)
            lines += ["    def _set_bits(self, v):"] + self._unpack_lines(bits, "v", "        ")
            lines.append("        return self")
            lines += ["    def _bits(self):", f"        return {self._pack_src(bits)}"]
        return lines

    @classmethod
    def packs(cls, t) -> bool:
        """Is `t` a struct whose fields (nested structs' too) all are bits, bool or
        serializable enums, so that it has `_set_bits(int)` and `_bits()`?"""
        t = T.strip_newtype(t)
        if not isinstance(t, T.StructType) or not t.fields:
            return False
        flat = cls._flatten([(field_attr(n), T.strip_newtype(ft)) for n, ft in t.fields])
        return all(scalar_width(ft) is not None for _, ft in flat)
