"""Tables, built-in methods and v1model externs for the C emitter (emit.py).

Table applies look the key up in the C table (runtime/p4n_runtime.c) and run the entry's action
in place; extern objects index the switch's arrays (registers, counters, meters, ...);
hashes and checksums pack their field list and call runtime/p4n_runtime.c's algorithms."""

from __future__ import annotations

from ...frontend import ast as A
from ...frontend import types as T
from ..exprs import source_text, strip
from ..externs import arg
from .c_types import HASHES, _int, c_string, key_words, refuse
from .wide import nwords


def cell_layout(specs, words=lambda spec: 1) -> tuple[list[tuple[int, int]], int]:
    """Where each extern's cells lie in its kind's one array (the C switch's register cells,
    the XDP back end's p4x_registers and p4x_counters maps), in 64-bit words: per extern
    (base, stride), cell i at base + i * stride (`words(spec)` words from there); and the
    array's size.  Externs of one size and cell width are interleaved, cell i of each next
    to the others': a packet that touches one cell index in many of them (p4src's K value
    registers) reads adjacent words, not one cache line (and one page) per register at the
    same offset in each."""
    by_shape: dict[tuple[int, int], list[int]] = {}
    for n, spec in enumerate(specs):
        by_shape.setdefault((max(1, spec.size or 0), words(spec)), []).append(n)
    places: list[tuple[int, int]] = [(0, 1)] * len(specs)
    at = 0
    for (size, width), members in by_shape.items():
        for j, n in enumerate(members):
            places[n] = (at + j * width, len(members) * width)
        at += size * len(members) * width
    return places, at


def register_words(spec) -> int:
    """64-bit words a register's cell takes in the C switch."""
    return nwords(spec.width)


class ExternMixin:
    """Table applies, built-in methods (extract, emit, isValid, ...) and extern calls of
    `CEmitter`."""

    # Headers at a byte boundary read and write their fields at constant offsets
    # (p4n_field_get/put); the XDP back end's verifier needs its own bounded accesses.
    aligned_headers = True

    def _field_offsets(self, flat) -> list[tuple[str, object, int, int]] | None:
        """(path, type, bit offset, width) of a header's fields when each is 1 to 64 bits
        (so the aligned code can take them); None otherwise."""
        if not self.aligned_headers:
            return None
        fields, at = [], 0
        for path, ft in flat:
            if isinstance(ft, T.VarbitType):
                return None
            width = self.width(ft)
            if not 1 <= width <= 64:
                return None
            fields.append((path, ft, at, width))
            at += width
        return fields

    # -- tables ---------------------------------------------------------------------------------

    def table_apply(self, e):
        info = self.pc.table_of_apply(e, self.block)
        index = self.pc._table_index[id(info)]
        keys = [k for k in info.keys if k.match_kind != "selector"]
        lines = []
        key = self.fresh("key")
        words = key_words(keys)
        lines.append(f"uint64_t {key}[{max(1, words)}];")
        j = 0
        for k in keys:
            kt = strip(k.expr.type)
            if self.types.scalar(kt) is None:
                refuse(k.expr, f"a table key of type {kt}")
            # nwords words, high first (binding.py splits entries alike)
            lines += self.words_lines(self.ex(k.expr), kt, key, j, high_first=True)
            j += nwords(self.width(kt))
        entry = self.fresh("entry")
        lines.append(f"p4n_entry *{entry} = p4n_table_lookup(&c->sw->tables[{index}], {key});")
        names = ", ".join(c_string(tai.action.name) for tai in self.pc.table_actions(info))
        lines.append(f"if (c->sw->tracing) {{ static const char *const _names[] = {{ {names} }};")
        hit = f"Table '{info.name}': hit with action %s"
        miss = f"Table '{info.name}': miss, default action %s"
        name_of = f"({entry}->action < {len(self.pc.table_actions(info))} ? " \
                  f"_names[{entry}->action] : \"?\")"
        if info.implementation is not None:
            lines.append(f"if ({entry}->action == P4N_MEMBER || {entry}->action == P4N_GROUP) "
                         f"p4n_tracef(c->sw, {c_string(f'Table {chr(39)}{info.name}{chr(39)}: hit with %s %llu')}, "
                         f"{entry}->action == P4N_MEMBER ? \"member\" : \"group\", "
                         f"(unsigned long long){entry}->args[0]); else")
        if info.implementation is not None:      # no default entry, as on bmv2
            miss = f"Table '{info.name}': miss, no action"
            lines.append(f"if ({entry}->hit) p4n_tracef(c->sw, {c_string(hit)}, {name_of}); "
                         f"else p4n_tracef(c->sw, {c_string(miss)}); }}")
        else:
            lines.append(f"p4n_tracef(c->sw, {entry}->hit ? {c_string(hit)} : {c_string(miss)}, "
                         f"{name_of}); }}")
        if info.direct_counter is not None:
            lines.append(f"if ({entry}->hit) {{ {entry}->packets++; {entry}->bytes += c->plen; }}")
        if info.idle_timeout:
            lines.append(f"if ({entry}->hit) {entry}->last_hit_ns = c->now_us * 1000u;")
        if info.direct_meter is not None:
            k = self._direct_meter_index[info.direct_meter.name]
            cost = "c->plen" if self.direct_meters[k].unit == "bytes" else "1"
            lines.append(f"c->sw->direct_colors[{k}] = {entry}->hit ? "
                         f"p4n_meter_execute(&{entry}->meter, c->now_us, {cost}) : 0;")
        action, args = f"{entry}->action", f"{entry}->args"
        if info.implementation is not None:
            action, args = self.profile_choice(info, entry, index, lines)
        lines.append(f"switch ({action}) {{")
        for i, tai in enumerate(self.pc.table_actions(info)):
            decl = tai.action.decl
            directional = [p for p in decl.params if p.direction is not None]
            bound = [a.value for a in (tai.ref.args if tai.ref is not None else [])]
            pairs = list(zip(directional, bound + [None] * len(directional)))
            plane = [p for p in decl.params if p.direction is None]
            pairs += [(p, None) for p in plane]
            code = self.inline_callable(decl, pairs, self.action_block(decl), decl.body,
                                        entry_args=args, action=True)
            lines.append(f"case {i}: {code}; break;")
        lines.append("default: break;")
        lines.append("}")
        if info.implementation is not None:
            # As the Python back end: a hit in a profile's table has no action index of its
            # own (action_run matches no action), and a miss runs none, as on bmv2.
            lines.append(f"(((uint32_t){entry}->hit) << 16) | 0xFFFFu;")
        else:
            lines.append(f"(((uint32_t){entry}->hit) << 16) | {entry}->action;")
        return "({\n" + "\n".join(lines) + "\n})"

    def profile_choice(self, info, entry, index, lines) -> tuple[str, str]:
        """Lines resolving a hit in a profile's table to (action, args) variables: a member
        entry holds its member's action; a group entry its members, one chosen by the
        selector hash modulo the group size (an empty group runs the default action); a
        miss runs no action, as on bmv2."""
        spec = self._profiles[info.implementation.name]
        action, args = self.fresh("act"), self.fresh("args")
        default = f"c->sw->tables[{index}].default_entry"
        lines.append(f"uint32_t {action} = {entry}->hit ? {entry}->action : 0xFFFFFFFFu; "
                     f"const uint64_t *{args} = {entry}->args;")
        lines.append(f"if ({entry}->hit) {{")
        lines.append(f"uint64_t _n = {args}[1]; const uint64_t *_m = {args} + 2;")
        lines.append("if (_n == 0) {")
        lines.append(f"{action} = {default}.action; {args} = {default}.args;")
        lines.append("} else {")
        if spec.kind == "action_selector":
            selector = [k.expr for k in info.keys if k.match_kind == "selector"]
            fields = A.ListExpression(elements=selector)
            fields.type = None
            h = self.hash_of(spec.algorithm, fields, info.decl)
            mask = (1 << spec.width) - 1 if spec.width else None
            if mask is not None:
                h = f"(({h}) & {_int(mask)})"
            lines.append(f"uint64_t _h = {entry}->action == P4N_GROUP ? ({h}) % _n : 0;")
            lines.append("for (uint64_t _i = 0; _i < _h; _i++) _m += 2 + _m[1];")
        lines.append(f"{action} = (uint32_t)_m[0]; {args} = _m + 2;")
        lines.append("}")
        lines.append("}")
        return action, args

    # -- built-in methods ----------------------------------------------------------------------

    def call_builtin(self, e):
        b = e.builtin
        if b == "verify":
            cond, err = self.ex(arg(e, 0)), self.ex(arg(e, 1))
            return f"do {{ if (!({cond})) {{ c->parser_error = (int32_t)({err}); " \
                   f"c->error_from_verify = 1; goto {self.parser_reject}; }} }} while (0)"
        callee = e.callee
        target = callee.expr
        tt = strip(target.type)
        if b == "isValid":
            src = self.ex(target)
            if isinstance(tt, T.HeaderType):
                return f"(({src}).valid)"
            if isinstance(tt, T.HeaderUnionType):
                return "(" + " || ".join(f"({src}).f_{n}.valid" for n, _ in tt.fields) + ")"
            refuse(e, f"isValid of {tt}")
        if b == "setValid":
            return f"({{ {self.union_siblings_off(target)} ({self.ex(target)}).valid = 1; }})"
        if b in ("push_front", "pop_front"):
            return self.shift_stack(b, target, tt, arg(e, 0))
        if b == "setInvalid":
            t = self.ex(target)
            return f"memset(&({t}), 0, sizeof({t}))"
        if b == "extract":
            return self.extract(e, target)
        if b == "lookahead":
            return self.lookahead(e)
        if b == "advance":
            n = self.ex(arg(e, 0))
            return f"do {{ uint64_t _n = {n}; if ((uint64_t)c->len * 8 - c->pos < _n) {{ " \
                   f"c->parser_error = {self.pc.error_code('PacketTooShort', e)}; " \
                   f"goto {self.parser_reject}; }} c->pos += (uint32_t)_n; }} while (0)"
        if b == "emit":
            return self.emit_value(arg(e, 0))
        if b == "length":          # packet_in.length(): the whole packet, in bytes
            return "((uint64_t)c->len)"
        refuse(e, f"built-in method {b}")

    def trace_line(self, text: str, *args: str, fmt: str | None = None) -> str:
        """A statement writing a trace line (only when tracing): `text` as is, or `fmt`
        (printf) with `args`."""
        if fmt is None:
            return f"P4N_TRACE(c, \"%s\", {c_string(text)});"
        return f"P4N_TRACE(c, {c_string(fmt)}{''.join(', ' + a for a in args)});"

    def union_siblings_off(self, header) -> str:
        """Statements making the other members of the union `header` is in invalid."""
        if isinstance(header, A.MemberExpression) and \
                isinstance(strip(header.expr.type), T.HeaderUnionType):
            union = self.ex(header.expr)
            return "".join(f"memset(&({union}).f_{n}, 0, sizeof(({union}).f_{n})); "
                           for n, _ in strip(header.expr.type).fields if n != header.member)
        return ""

    def shift_stack(self, b, target, t, count_expr) -> str:
        """push_front / pop_front of `count` elements (invalid ones come in)."""
        stack = self.ex(target)
        n = t.size
        count = self.ex(count_expr)
        element = f"sizeof(({stack}).elems[0])"
        if b == "push_front":
            body = (f"memmove(&({stack}).elems[_k], &({stack}).elems[0], ({n} - _k) * {element}); "
                    f"memset(&({stack}).elems[0], 0, _k * {element}); "
                    f"({stack}).nextIndex = ({stack}).nextIndex + _k > {n} ? {n} : "
                    f"({stack}).nextIndex + (uint32_t)_k;")
        else:
            body = (f"memmove(&({stack}).elems[0], &({stack}).elems[_k], ({n} - _k) * {element}); "
                    f"memset(&({stack}).elems[{n} - _k], 0, _k * {element}); "
                    f"({stack}).nextIndex = ({stack}).nextIndex > _k ? "
                    f"({stack}).nextIndex - (uint32_t)_k : 0;")
        return f"do {{ int64_t _c = (int64_t)({count}); if (_c > 0) {{ uint64_t _k = " \
               f"(uint64_t)_c > {n} ? {n} : (uint64_t)_c; {body} }} }} while (0)"

    def extract(self, e, target):
        vbits = self.ex(arg(e, 1)) if len(e.args) > 1 else "0"
        header = arg(e, 0)
        if isinstance(header, A.DontCareExpression):     # extract<H>(_): into a temporary
            ht = strip(e.resolved_type_args[0])
            tmp = self.fresh("dropped")
            return "({ " + self.trace_line("Extracting header '_'") + \
                f" {self.types.ctype(ht, e)} {tmp} = {{0}}; " + \
                self.extract_into(e, ht, tmp, vbits) + "; })"
        return "({ " + self.trace_line(f"Extracting header '{source_text(header)}'") + \
            " " + self.extract_code(e, header, vbits) + "; })"

    def extract_code(self, e, header, vbits):
        ht = strip(header.type)
        if not isinstance(ht, T.HeaderType):
            refuse(e, f"extract into {ht}")
        if isinstance(header, A.MemberExpression) and header.member == "next" and \
                isinstance(strip(header.expr.type), T.StackType):
            stack = self.ex(header.expr)
            size = strip(header.expr.type).size
            inner = self.extract_into(e, ht, f"({stack}).elems[({stack}).nextIndex]", vbits)
            return f"do {{ if (({stack}).nextIndex >= {size}) {{ {self.stack_error()} }} " \
                   f"{inner}; ({stack}).nextIndex++; }} while (0)"
        advance = ""
        if isinstance(header, A.MemberExpression) and \
                isinstance(header.expr, A.MemberExpression) and header.expr.member == "next" and \
                isinstance(strip(header.expr.expr.type), T.StackType):
            # extract(us.next.h) into a stack of header unions advances it too
            advance = f" ({self.ex(header.expr.expr)}).nextIndex++;"
        return f"do {{ {self.union_siblings_off(header)} " \
               f"{self.extract_into(e, ht, self.ex(header), vbits)};{advance} }} while (0)"

    def extract_into(self, e, ht, h, vbits: str = "0") -> str:
        """Lines extracting header type `ht` into lvalue `h`; `vbits` is the varbit field's
        size in bits. Everything is checked first, so a failed extract consumes nothing."""
        flat = self.flat_fields(ht)       # fields of struct type: theirs, in place
        fixed = sum(self.width(ft) for _, ft in flat if not isinstance(ft, T.VarbitType))
        varbit = next((ft for _, ft in flat if isinstance(ft, T.VarbitType)), None)
        code = self.pc.error_code
        lines = ["uint64_t _vb = (uint64_t)(" + vbits + ");"] if varbit is not None else []
        if varbit is not None:        # in bmv2's order: whole bytes, length, maximum
            lines.append(f"if (_vb % 8) {{ c->parser_error = {code('ParserInvalidArgument', e)}; "
                         f"goto {self.parser_reject}; }}")
        total = f"{fixed} + _vb" if varbit is not None else str(fixed)
        lines.append(f"if ((uint64_t)c->len * 8 - c->pos < {total}) {{ "
                     f"c->parser_error = {code('PacketTooShort', e)}; "
                     f"goto {self.parser_reject}; }}")
        if varbit is not None:
            lines.append(f"if (_vb > {varbit.max_width}) {{ c->parser_error = "
                         f"{code('HeaderTooShort', e)}; goto {self.parser_reject}; }}")
        aligned = self._field_offsets(flat)
        if aligned:     # unless advance() moved by a part of a byte: fields at constants
            lines.append("if ((c->pos & 7) == 0) { const uint8_t *_h = c->data + (c->pos >> 3);")
            lines += [f"({h}){path} = "
                      f"{self.from_unsigned(f'p4n_field_get(_h, {at}, {width})', ft)};"
                      for path, ft, at, width in aligned]
            lines.append("} else {")
        offset = "c->pos"
        for path, ft in flat:
            if isinstance(ft, T.VarbitType):
                lines.append(f"({h}){path}.len = (uint32_t)_vb; "
                             f"memset(({h}){path}.data, 0, sizeof(({h}){path}.data));")
                lines.append(f"for (uint32_t _b = 0; _b < _vb / 8; _b++) ({h}){path}.data[_b] "
                             f"= (uint8_t)p4n_get_bits(c->data, {offset} + 8 * _b, 8);")
                offset = f"{offset} + (uint32_t)_vb"
                continue
            lines.append(f"({h}){path} = {self.get_bits('c->data', offset, ft)};")
            offset = f"{offset} + {self.width(ft)}"
        if aligned:
            lines.append("}")
        lines.append(f"({h}).valid = 1; c->pos += (uint32_t)({total});")
        return "do {\n" + "\n".join(lines) + "\n} while (0)"

    def lookahead(self, e):
        t = strip(e.resolved_type_args[0] if e.resolved_type_args else e.type)
        if isinstance(t, (T.HeaderType, T.StructType)):
            return self.lookahead_header(e, t)
        sc = self.types.scalar(t)
        if sc is None:
            refuse(e, f"lookahead of {t}")
        width = sc[0]
        return (f"({{ if ((uint64_t)c->len * 8 - c->pos < {width}) {{ c->parser_error = "
                f"{self.pc.error_code('PacketTooShort', e)}; goto {self.parser_reject}; }} "
                f"{self.get_bits('c->data', 'c->pos', t)}; }})")

    def lookahead_header(self, e, t) -> str:
        """`lookahead<H>()`: a valid H (or a struct S) filled from the next bits, the
        position unchanged."""
        flat = self.flat_fields(t)
        if any(self.types.scalar(ft) is None for _, ft in flat):
            refuse(e, f"lookahead of {t}, which has a field that is not bits,")
        ct = self.types.ctype(t, e)
        width = sum(self.width(ft) for _, ft in flat)
        tmp = self.fresh("la")
        lines = [f"if ((uint64_t)c->len * 8 - c->pos < {width}) {{ c->parser_error = "
                 f"{self.pc.error_code('PacketTooShort', e)}; goto {self.parser_reject}; }}",
                 f"{ct} {tmp} = {{0}};"]
        offset = 0
        for path, ft in flat:
            lines.append(f"{tmp}{path} = {self.get_bits('c->data', f'c->pos + {offset}', ft)};")
            offset += self.width(ft)
        if isinstance(t, T.HeaderType):
            lines.append(f"{tmp}.valid = 1;")
        lines.append(f"{tmp};")
        return "({\n" + "\n".join(lines) + "\n})"

    def emit_value(self, value):
        return self.emit_src(self.ex(value), strip(value.type), value)

    def emit_src(self, src, t, node):
        if isinstance(t, T.HeaderType):
            lines = [f"if (({src}).valid) {{"]
            aligned = self._field_offsets(self.flat_fields(t))
            if aligned:     # every header emitted is whole bytes (the front end's check)
                lines.append("uint8_t *_o = c->out + (c->out_bits >> 3);")
                lines += [f"p4n_field_put(_o, {at}, {width}, "
                          f"{self.unsigned(f'({src}){path}', ft)});"
                          for path, ft, at, width in aligned]
                lines.append(f"c->out_bits += {sum(w for *_, w in aligned)}; }}")
                return "do {\n" + "\n".join(lines) + "\n} while (0)"
            for path, ft in self.flat_fields(t):
                if isinstance(ft, T.VarbitType):
                    lines.append(f"for (uint32_t _b = 0; _b < ({src}){path}.len / 8; _b++) "
                                 f"{{ p4n_put_bits(c->out, c->out_bits, 8, "
                                 f"({src}){path}.data[_b]); c->out_bits += 8; }}")
                    continue
                lines.append(f"{self.put_bits('c->out', 'c->out_bits', f'({src}){path}', ft)}; "
                             f"c->out_bits += {self.width(ft)};")
            lines.append("}")
            return "do {\n" + "\n".join(lines) + "\n} while (0)"
        if isinstance(t, T.StructLikeType):
            parts = [self.emit_src(f"({src}).f_{name}", strip(ft), node)
                     for name, ft in t.fields]
            return "do {\n" + "".join(p + ";\n" for p in parts) + "} while (0)"
        if isinstance(t, T.StackType):
            parts = [self.emit_src(f"({src}).elems[{i}]", strip(t.element), node)
                     for i in range(t.size)]
            return "do {\n" + "".join(p + ";\n" for p in parts) + "} while (0)"
        refuse(node, f"emit of {t}")

    # -- externs ---------------------------------------------------------------------------------

    def call_extern(self, e):
        if e.call_kind == "extern_method":
            inst = self.pc.extern_instance(e.callee.expr, self.block)
            method = getattr(self, f"_m_{inst.extern}_{e.callee.member}", None)
            if method is None:
                refuse(e, f"method {inst.extern}.{e.callee.member}")
            return method(e, inst)
        name = e.callee_decl.name if e.callee_decl is not None else getattr(e.callee, "name", "?")
        method = getattr(self, f"_f_{name}", None)
        if method is None:
            refuse(e, f"extern function {name}")
        return method(e)

    def _register_cell(self, spec, value_t):
        """(type of a cell's value, whether the register holds structs as their bits)."""
        if self.types.scalar(value_t) is not None:
            return value_t, False
        return T.BitsType(spec.width, False), True        # a struct of bit fields, packed

    def _m_register_read(self, e, inst):
        r = self._register_index[inst.name]
        spec = self.registers[r]
        index = self.index_of(arg(e, 1))
        target = arg(e, 0)
        cell_t, packed = self._register_cell(spec, target.type)
        if spec.width > 64:      # nwords words a cell, least significant first
            value = self.from_words("(&c->sw->register_cells->v)", self.register_word(r), cell_t,
                                    high_first=False)
        else:
            value = f"{'(int64_t)' if spec.signed else ''}{self.register_cell(r)}"
        if packed:
            value = self.unpack(value, cell_t, strip(target.type))
        # outside the array the result is not written, as on bmv2
        return f"do {{ uint64_t _i = (uint64_t)({index}); if (_i < {spec.size or 0}) {{ " \
               f"{self.assign(target, value)} }} }} while (0)"

    def _m_register_write(self, e, inst):
        r = self._register_index[inst.name]
        spec = self.registers[r]
        index, value = self.index_of(arg(e, 0)), self.ex(arg(e, 1))
        cell_t, packed = self._register_cell(spec, arg(e, 1).type)
        if packed:
            value = self.pack(value, strip(arg(e, 1).type), cell_t)
        if spec.width > 64:
            store = " ".join(self.words_lines("_v", cell_t, "(&c->sw->register_cells->v)",
                                              self.register_word(r), high_first=False))
            return f"do {{ uint64_t _i = (uint64_t)({index}); {self.types.ctype(cell_t, e)} _v = " \
                   f"{value}; if (_i < {spec.size or 0}) {{ {store} }} }} while (0)"
        return f"do {{ uint64_t _i = (uint64_t)({index}); uint64_t _v = (uint64_t)({value}); " \
               f"if (_i < {spec.size or 0}) {self.register_cell(r)} = _v; }} while (0)"

    def register_word(self, r: int) -> str:
        """Index of the first word of register r's cell _i in the switch's register cells
        (cell_layout)."""
        base, stride = self.register_places[r]
        return f"{base} + _i * {stride}"

    def register_cell(self, r: int) -> str:
        """Register r's cell _i (of up to 64 bits) as an lvalue."""
        return f"c->sw->register_cells[{self.register_word(r)}].v"

    def _m_counter_count(self, e, inst):
        k = self._counter_index[inst.name]
        spec = self.counters[k]
        index = self.index_of(arg(e, 0))
        return f"do {{ uint64_t _i = (uint64_t)({index}); if (_i < {spec.size or 0}) {{ " \
               f"c->sw->counters[{k}].packets[_i]++; c->sw->counters[{k}].bytes[_i] += c->plen; " \
               f"}} }} while (0)"

    def _m_direct_counter_count(self, e, inst):
        return None          # the table counts its hits, as bmv2 does

    def _m_meter_execute_meter(self, e, inst):
        m = self._meter_index[inst.name]
        spec = self.meters[m]
        cost = "c->plen" if spec.unit == "bytes" else "1"
        value = f"p4n_meter_execute(&c->sw->meters[{m}].cells[_i], c->now_us, {cost})"
        target = arg(e, 1)
        # outside the array no meter runs and the colour is not written, as on bmv2
        return f"do {{ uint64_t _i = {self.index_of(arg(e, 0))}; if (_i < {spec.size or 0}) " \
               f"{{ {self.assign(target, self.wrap(value, target.type))} }} }} while (0)"

    def _m_direct_meter_read(self, e, inst):
        k = self._direct_meter_index[inst.name]
        target = arg(e, 0)
        return "do { " + self.assign(target, self.wrap(f"c->sw->direct_colors[{k}]",
                                                         target.type)) + " } while (0)"

    def _m_Checksum16_get(self, e, inst):
        return self.hash_of("csum16", arg(e, 0), e)

    def fields_lines(self, data) -> list[str]:
        """Lines adding the "any data" argument to the field list F."""
        if isinstance(data, A.ListExpression):
            return [line for x in data.elements for line in self.fields_lines(x)]
        t = strip(data.type)
        if isinstance(data, A.StructExpression):
            return [line for f in data.fields for line in self.fields_lines(f.value)]
        sc = self.types.scalar(t)
        if sc is not None:
            width = 32 if isinstance(t, T.ErrorType) else sc[0]
            return [self.field_add(self.ex(data), t, width)]
        if isinstance(t, (T.StructLikeType, T.StackType)):
            src = self.ex(data)
            return self._composite_fields(src, t, data)
        if isinstance(t, T.VarbitType):
            src = self.ex(data)
            return [f"for (uint32_t _b = 0; _b < ({src}).len / 8; _b++) "
                    f"p4n_fields_add(F, ({src}).data[_b], 8);"]
        refuse(data, f"a value of type {t} in a field list")

    def _composite_fields(self, src, t, node) -> list[str]:
        if isinstance(t, T.StackType):
            return [line for i in range(t.size) for line in
                    self._composite_fields(f"({src}).elems[{i}]", strip(t.element), node)]
        lines = []
        for name, ft in t.fields:
            ft = strip(ft)
            if isinstance(ft, (T.StructLikeType, T.StackType)):
                lines += self._composite_fields(f"({src}).f_{name}", ft, node)
                continue
            if isinstance(ft, T.VarbitType):
                lines.append(f"for (uint32_t _b = 0; _b < ({src}).f_{name}.len / 8; _b++) "
                             f"p4n_fields_add(F, ({src}).f_{name}.data[_b], 8);")
                continue
            sc = self.types.scalar(ft)
            if sc is None:
                refuse(node, f"field {name} in a field list")
            width = 32 if isinstance(ft, T.ErrorType) else sc[0]
            lines.append(self.field_add(f"({src}).f_{name}", ft, width))
        return lines

    def hash_of(self, algo, data, node, payload=False) -> str:
        if algo == "random":
            # ignores its data: a stream of its own per call site, as random.Random(seed)
            site = self.random_hashes
            self.random_hashes += 1
            return f"p4n_random_hash(c->sw, {site})"
        if algo not in HASHES:
            refuse(node, f"hash algorithm {algo}")
        lines = ["p4n_fields *F = &c->sw->fields; F->bits = 0; memset(F->buf, 0, 16);"]
        lines += self.fields_lines(data)
        if payload:
            lines.append("p4n_fields_add_bytes(F, c->payload, c->payload_len);")
        lines.append(f"p4n_hash({HASHES[algo]}, F);")
        return "({\n" + "\n".join(lines) + "\n})"

    def _algo(self, e, algo_expr) -> str:
        algo = algo_expr.member if isinstance(algo_expr, A.MemberExpression) else None
        if algo is None:
            refuse(e, "a hash algorithm that is not a HashAlgorithm constant")
        return algo

    def _f_mark_to_drop(self, e):
        sm = self.ex(arg(e, 0)) if e.args else self.sm_param   # old v1model: no argument
        if sm is None:
            refuse(e, "mark_to_drop() without standard_metadata")
        return f"do {{ ({sm}).f_egress_spec = 511; ({sm}).f_mcast_grp = 0; }} while (0)"

    def _f_hash(self, e):
        result, algo, base, data, maximum = (arg(e, i) for i in range(5))
        h = self.hash_of(self._algo(e, algo), data, e)
        widths = [self.width(x.type) for x in (result, base, maximum)]
        if max(widths) > 64:      # base + h % maximum on big values, then wrapped
            bw = max(129, max(widths) + 1)
            self.types.note_width(bw)
            bt = T.BitsType(bw, False)
            b, m = (self.to_big(self.ex(x), x.type, bw) for x in (base, maximum))
            value = f"({{ p4n_big _m = {m}, _b = {b}; p4n_big_is_zero(_m) ? _b : " \
                    f"p4n_big_add(_b, p4n_big_umod(p4n_big_u128({h}, {bw}), _m), {bw}); }})"
            return "do { " + self.assign(result, self.convert(value, bt, result.type)) + \
                " } while (0)"
        value = f"p4n_hash_value({h}, (uint64_t)({self.ex(base)}), (uint64_t)({self.ex(maximum)}))"
        return "do { " + self.assign(result, self.wrap(value, result.type)) + " } while (0)"

    def _checksum(self, e, verify, payload):
        cond, data, checksum, algo = (arg(e, i) for i in range(4))
        computed = self.wrap(self.hash_of(self._algo(e, algo), data, e, payload), checksum.type)
        if verify:
            action = f"if ({self.compare('!=', computed, self.ex(checksum), checksum.type)}) " \
                     f"({self.sm_param}).f_checksum_error = 1;"
        else:
            action = self.assign(checksum, computed)
        return f"do {{ if ({self.ex(cond)}) {{ {action} }} }} while (0)"

    def _f_verify_checksum(self, e):
        return self._checksum(e, True, False)

    def _f_update_checksum(self, e):
        return self._checksum(e, False, False)

    def _f_verify_checksum_with_payload(self, e):
        return self._checksum(e, True, True)

    def _f_update_checksum_with_payload(self, e):
        return self._checksum(e, False, True)

    def data_values(self, data) -> list:
        """(C source, type) of each value of a digest's or log_msg's data: the elements of
        a list or struct expression, the fields of a struct or header, or the one value
        (as the Python back end's values_src)."""
        t = strip(data.type)
        if isinstance(data, A.ListExpression):
            return [(self.ex(x), x.type) for x in data.elements]
        if isinstance(data, A.StructExpression):
            return [(self.ex(f.value), f.value.type) for f in data.fields]
        if isinstance(t, T.StructLikeType):
            src = self.ex(data)
            return [(f"({src}).f_{n}", ft) for n, ft in t.fields]
        return [(self.ex(data), t)]

    def _f_digest(self, e):
        """The digest's values, each as its word count and its words (least significant
        first): what runtime/tm.inc traces and binding.py hands to on_digest."""
        data = arg(e, 1)
        name = self.pc.digest_name(e, data)
        values = self.data_values(data)
        lines, at = [], 0
        for v, vt in values:
            if self.types.scalar(vt) is None:
                refuse(e, f"a digest field of type {strip(vt)}")
            n = nwords(self.width(vt))
            lines.append(f"_d[{at}] = {n};")
            lines += self.words_lines(v, vt, "_d", at + 1, high_first=False)
            at += n + 1
        lines.insert(0, f"uint64_t _d[{max(1, at)}];")
        lines.append(f"p4n_queue_msg(c->sw, P4N_MSG_DIGEST, {self.digest_names.index(name)}, "
                     f"(const uint8_t *)_d, {8 * at});")
        return "do {\n" + "\n".join(lines) + "\n} while (0)"

    def _clone_type(self, e, type_expr):
        kind = type_expr.member if isinstance(type_expr, A.MemberExpression) else None
        if kind not in ("I2E", "E2E"):
            refuse(e, "a clone type other than CloneType.I2E or CloneType.E2E")

    def _f_clone(self, e):
        self._clone_type(e, arg(e, 0))
        return f"do {{ c->clone_session = (int32_t)({self.ex(arg(e, 1))}); " \
               f"c->clone_fields = -1; }} while (0)"

    def _f_clone_preserving_field_list(self, e):
        self._clone_type(e, arg(e, 0))
        index = self.field_list_index(e, arg(e, 2))
        return f"do {{ c->clone_session = (int32_t)({self.ex(arg(e, 1))}); " \
               f"c->clone_fields = {index}; }} while (0)"

    def field_list_index(self, e, index_expr) -> int:
        index = index_expr.const_value
        if index is None:
            refuse(e, "a field list index that is not a constant")
        return index

    def _f_resubmit_preserving_field_list(self, e):
        return f"c->resubmit = {self.field_list_index(e, arg(e, 0))}"

    def _f_recirculate_preserving_field_list(self, e):
        return f"c->recirculate = {self.field_list_index(e, arg(e, 0))}"

    def data_field_list(self, e, data) -> int:
        return self.pc.data_field_list(data)      # the same lists as the Python back end

    def _f_resubmit(self, e):
        return f"c->resubmit = {self.data_field_list(e, arg(e, 0))}"

    def _f_recirculate(self, e):
        return f"c->recirculate = {self.data_field_list(e, arg(e, 0))}"

    def _f_clone3(self, e):
        self._clone_type(e, arg(e, 0))
        index = self.data_field_list(e, arg(e, 2))
        return f"do {{ c->clone_session = (int32_t)({self.ex(arg(e, 1))}); " \
               f"c->clone_fields = {index}; }} while (0)"

    def _f_random(self, e):
        result = arg(e, 0)
        if self.wide(result.type):    # randint over words, least significant first
            lo, hi = arg(e, 1), arg(e, 2)
            n = max(nwords(self.width(x.type)) for x in (result, lo, hi))
            lines = [f"uint64_t _lo[{n}] = {{0}}, _hi[{n}] = {{0}}, _r[{n}];"]
            lines += self.words_lines(self.ex(lo), lo.type, "_lo", 0, high_first=False)
            lines += self.words_lines(self.ex(hi), hi.type, "_hi", 0, high_first=False)
            lines.append(f"p4n_random_words(c->sw, _lo, _hi, {n}, _r);")
            value = self.from_words("_r", "0", result.type, high_first=False)
            return "do { " + " ".join(lines) + " " + self.assign(result, value) + " } while (0)"
        value = f"p4n_random(c->sw, (uint64_t)({self.ex(arg(e, 1))}), " \
                f"(uint64_t)({self.ex(arg(e, 2))}))"
        return "do { " + self.assign(result, self.wrap(value, result.type)) + " } while (0)"

    def _f_truncate(self, e):
        return f"c->truncate = (uint32_t)({self.ex(arg(e, 0))})"

    def _assertion(self, e, what):
        index = len(self.assertions)
        self.assertions.append(f"{what} failed at {e.loc}")
        return f"do {{ if (!({self.ex(arg(e, 0))})) {{ c->sw->assertion = {index}; " \
               f"c->failed = 1; goto {self.stage_end}; }} }} while (0)"

    def _f_assert(self, e):
        return self._assertion(e, "assert")

    def _f_assume(self, e):
        return self._assertion(e, "assume")

    def _f_log_msg(self, e):
        """log_msg(text[, data]): each "{}" of the text takes the next value, written as
        the Python back end writes it (exprs.log_text_src)."""
        msg = arg(e, 0)
        text = msg.const_value
        if not isinstance(text, str):
            refuse(e, "log_msg with a message that is not a constant string")
        values = self.data_values(arg(e, 1)) if len(e.args) > 1 else []
        parts = text.split("{}")
        lines = [f"p4n_text_str(&_t, {c_string(parts[0])});"]
        for i, part in enumerate(parts[1:]):
            if i < len(values):
                lines += self.text_lines(*values[i])
            else:
                lines.append('p4n_text_str(&_t, "{}");')
            lines.append(f"p4n_text_str(&_t, {c_string(part)});")
        return "do { if (c->sw->tracing) { p4n_text _t; _t.len = 0; _t.buf[0] = 0;\n" + \
            "\n".join(lines) + '\np4n_tracef(c->sw, "%s", _t.buf); } } while (0)'

    def text_lines(self, src, t) -> list[str]:
        """Lines appending the log_msg text of `src` (type `t`) to the p4n_text `_t`."""
        t = strip(t)
        if self.types.scalar(t) is not None:
            if self.big(t):
                return [f"p4n_text_big(&_t, {src});"]
            if self.wide(t):
                return [f"p4n_text_u128(&_t, {self.unsigned(src, t)});"]
            return [f"{{ uint64_t _w = (uint64_t)({self.unsigned(src, t)}); "
                    f"p4n_text_words(&_t, &_w, 1); }}"]
        if isinstance(t, T.VarbitType):
            return [f"p4n_text_bytes(&_t, ({src}).data, ({src}).len / 8);"]
        if isinstance(t, T.StructLikeType):
            items = [(f"({src}).f_{n}", ft, f"{n} = ") for n, ft in t.fields]
        elif isinstance(t, T.StackType):
            items = [(f"({src}).elems[{i}]", t.element, "") for i in range(t.size)]
        elif isinstance(t, T.TupleType):
            items = [(f"({src}).f_{i}", et, "") for i, et in enumerate(t.elements)]
        else:
            refuse(None, f"log_msg of a value of type {t}")
        lines = ['p4n_text_str(&_t, "{");']
        for i, (item, it, label) in enumerate(items):
            lines.append(f"p4n_text_str(&_t, {c_string((', ' if i else '') + label)});")
            lines += self.text_lines(item, it)
        lines.append('p4n_text_str(&_t, "}");')
        if isinstance(t, T.HeaderType):
            return [f"if (({src}).valid) {{"] + lines + ['} else p4n_text_str(&_t, "{#}");']
        return lines
