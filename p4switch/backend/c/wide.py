"""Values wider than 128 bits for the C emitter (runtime/p4n_big.h), and the 64-bit words
every scalar is split into where C meets the control plane (table keys, action arguments,
value sets, register cells, digests).

A bit<W>/int<W> with W > 128 is a `p4n_big`: its W-bit two's complement pattern in 64-bit
limbs, the bits above W zero. The operators are runtime helpers given W (and signedness
where it matters), so results wrap as the Python back end's ints do."""

from __future__ import annotations

from ...frontend import types as T
from ..exprs import strip
from .c_types import _int, _wide, refuse

BIG = 128          # values wider than this are p4n_big


def nwords(width: int) -> int:
    """64-bit words of a `width`-bit scalar where C meets the control plane."""
    return max(1, (width + 63) // 64)


class WideMixin:
    """Wide values and word splitting for `CEmitter` (uses its `types` and `ex`)."""

    def width(self, t) -> int:
        sc = self.types.scalar(t)
        return sc[0] if sc is not None else 0

    def big(self, t) -> bool:
        """Whether scalar type `t` is a p4n_big (and so the program needs that type)."""
        sc = self.types.scalar(t)
        if sc is None or sc[0] <= BIG:
            return False
        self.types.note_width(sc[0])
        return True

    def big_literal(self, value: int, width: int) -> str:
        self.types.note_width(width)
        value &= (1 << width) - 1
        limbs = []
        while value:
            limbs.append(f"{value & ((1 << 64) - 1)}ULL")
            value >>= 64
        return f"((p4n_big){{{{{', '.join(limbs) or '0'}}}}})"

    # -- conversions -------------------------------------------------------------------------

    def convert(self, src: str, from_t, to_t) -> str:
        """The value `src` of scalar type `from_t` as a value of scalar type `to_t`: P4's cast
        (sign-extended from a signed source, then wrapped into the target)."""
        fw, fsigned = self.types.scalar(from_t)
        tw = self.width(to_t)
        if isinstance(strip(from_t), T.BoolType):
            fsigned = False
        if self.big(to_t):
            if self.big(from_t):
                if fsigned and tw > fw:
                    return f"p4n_big_sext({src}, {fw}, {tw})"
                return src if tw == fw else f"p4n_big_mask({src}, {tw})"
            if fsigned:
                return f"p4n_big_s128((p4n_s128)({src}), {tw})"
            return f"p4n_big_u128((p4n_u128)({src}), {tw})"
        if self.big(from_t):
            return self.wrap(f"p4n_big_lo128({src})", to_t)
        return self.wrap(src, to_t)

    def to_big(self, src: str, t, width: int) -> str:
        """The unsigned pattern of scalar `src` (type `t`) as a `width`-bit p4n_big."""
        self.types.note_width(width)
        if self.big(t):
            return src if self.width(t) <= width else f"p4n_big_mask({src}, {width})"
        return f"p4n_big_u128((p4n_u128)({self.unsigned(src, t)}), {width})"

    def shift_amount(self, src: str, t) -> str:
        """A shift amount as a uint64_t (saturated: every width is smaller)."""
        if t is not None and self.big(t):
            return f"p4n_big_amount({src})"
        if t is not None and self.wide(t):
            return f"p4n_u128_amount((p4n_u128)({src}))"
        return f"((uint64_t)({src}))"

    def index_of(self, e) -> str:
        """An index (register, counter, meter, stack) as a uint64_t, whatever its width."""
        t = strip(e.type) if e.type is not None else None
        return self.shift_amount(self.ex(e), t if t is not None and self.types.scalar(t)
                                 else None)

    # -- operators on p4n_big --------------------------------------------------------------------

    def big_binary(self, op, a, b, t, e, right_t) -> str:
        width, signed = self.types.scalar(t)
        if op in ("+", "-", "*"):
            fn = {"+": "add", "-": "sub", "*": "mul"}[op]
            return f"p4n_big_{fn}({a}, {b}, {width})"
        if op in ("/", "%"):
            if signed:          # the front end forbids signed division: nothing runs this
                refuse(e, f"{op} of {width}-bit signed values")
            return f"p4n_big_u{'div' if op == '/' else 'mod'}({a}, {b})"
        if op in ("&", "|", "^"):
            fn = {"&": "and", "|": "or", "^": "xor"}[op]
            return f"p4n_big_{fn}({a}, {b})"
        if op in ("|+|", "|-|"):
            fn = "p4n_big_ssat" if signed else "p4n_big_usat"
            return f"{fn}({a}, {b}, {int(op == '|-|')}, {width})"
        if op == "<<":
            return f"p4n_big_shl({a}, {self.shift_amount(b, right_t)}, {width})"
        if op == ">>":
            n = self.shift_amount(b, right_t)
            return f"p4n_big_ashr({a}, {n}, {width})" if signed else f"p4n_big_lshr({a}, {n})"
        refuse(e, f"operator {op} on {t}")

    def compare(self, op: str, a: str, b: str, t) -> str:
        """`a op b` for scalars of type `t` (==, !=, <, >, <=, >=)."""
        if not self.big(t):
            return f"(({a}) {op} ({b}))"
        if op in ("==", "!="):
            return f"({'!' if op == '!=' else ''}p4n_big_eq({a}, {b}))"
        width, signed = self.types.scalar(t)
        cmp = f"p4n_big_scmp({a}, {b}, {width})" if signed else f"p4n_big_ucmp({a}, {b})"
        return f"({cmp} {op} 0)"

    def concat(self, a, lt, b, rt, t) -> str:
        """`a ++ b` into a p4n_big of type `t`."""
        width = self.width(t)
        rw = self.width(rt)
        return f"p4n_big_or(p4n_big_shl({self.to_big(a, lt, width)}, {rw}, {width}), " \
               f"{self.to_big(b, rt, width)})"

    def slice_of(self, value: str, src_t, hi: int, lo: int) -> str:
        """Bits hi..lo of `value` (type `src_t`), as a bit<hi - lo + 1>."""
        n = hi - lo + 1
        if self.big(src_t):
            part = f"p4n_big_slice({value}, {lo}, {n})"
            if n > BIG:
                return part
            return f"p4n_big_lo128({part})" if n > 64 else f"((uint64_t)p4n_big_lo128({part}))"
        value = self.unsigned(value, src_t)
        if self.wide(src_t):
            result = f"(((({value}) >> {lo})) & {_wide((1 << n) - 1)})"
            return result if n > 64 else f"((uint64_t){result})"
        return f"((({value}) >> {lo}) & {_int((1 << n) - 1)})"

    # -- words -------------------------------------------------------------------------------------

    def words_lines(self, src: str, t, dest: str, at: int, high_first: bool) -> list[str]:
        """Lines storing the unsigned pattern of `src` (type `t`) as nwords(W) words at
        dest[at...], most significant first when `high_first`."""
        width = self.width(t)
        n = nwords(width)
        if self.big(t):
            fn = "p4n_big_key_words" if high_first else "p4n_big_to_words"
            return [f"{fn}({src}, {dest} + {at}, {n});"]
        value = self.unsigned(src, t)
        if n == 1:
            return [f"{dest}[{at}] = (uint64_t)({value});"]
        hi, lo = (f"{at}", f"{at} + 1") if high_first else (f"{at} + 1", f"{at}")
        return [f"{{ p4n_u128 _w = {value}; {dest}[{hi}] = (uint64_t)(_w >> 64); "
                f"{dest}[{lo}] = (uint64_t)_w; }}"]

    def from_words(self, src: str, at: str, t, high_first: bool) -> str:
        """The value of type `t` held as nwords(W) words at src[at...]."""
        width = self.width(t)
        n = nwords(width)
        if self.big(t):
            if not high_first:
                return f"p4n_big_from_words({src} + {at}, {n}, {width})"
            words = ", ".join(f"{src}[{at} + {n - 1 - i}]" for i in range(n))
            return f"p4n_big_mask(((p4n_big){{{{{words}}}}}), {width})"
        if n == 1:
            return self.from_unsigned(f"{src}[{at}]", t)
        hi, lo = (f"{at}", f"{at} + 1") if high_first else (f"{at} + 1", f"{at}")
        raw = f"(P4N_U128({src}[{hi}], {src}[{lo}]) & p4n_mask128({width}))"
        return self.from_unsigned(raw, t)

    def zero_value(self, t) -> str:
        """Zero of scalar type `t`, as an expression."""
        return "((p4n_big){{0}})" if self.big(t) else "0"

    # -- structs of bit fields as one number (register cells) -------------------------------

    def flat_fields(self, t, path: str = "") -> list:
        """[(C member path, type)]: the fields of struct-like `t`, nested structs' fields in
        their place (as the Python back end's TypeRegistry._flatten)."""
        out = []
        for name, ft in strip(t).fields:
            if isinstance(strip(ft), T.StructType):
                out += self.flat_fields(ft, f"{path}.f_{name}")
            else:
                out.append((f"{path}.f_{name}", strip(ft)))
        return out

    def pack(self, src: str, t, cell_t) -> str:
        """Struct value `src` as one number of type `cell_t`: the first field highest."""
        width = self.width(cell_t)
        parts, shift = [], width
        for path, ft in self.flat_fields(t):
            shift -= self.width(ft)
            value = f"_s{path}"
            if self.big(cell_t):
                parts.append(f"p4n_big_shl({self.to_big(value, ft, width)}, {shift}, {width})")
            else:
                parts.append(f"((({self.word(cell_t)})({self.unsigned(value, ft)})) << {shift})")
        if self.big(cell_t):
            joined = parts[0] if len(parts) == 1 else \
                "p4n_big_or(" + ", p4n_big_or(".join(parts[:-1]) + ", " + parts[-1] + \
                ")" * (len(parts) - 1)
        else:
            joined = " | ".join(parts) or "0"
        return f"({{ {self.types.ctype(t)} _s = {src}; {joined}; }})"

    def unpack(self, src: str, cell_t, t) -> str:
        """A struct value of type `t` from the number `src` of type `cell_t` (pack's
        inverse)."""
        lines = [f"{self.types.ctype(cell_t)} _c = {src};", f"{self.types.ctype(t)} _s = {{0}};"]
        top = self.width(cell_t)
        for path, ft in self.flat_fields(t):
            w = self.width(ft)
            part = self.slice_of("_c", cell_t, top - 1, top - w)
            top -= w
            lines.append(f"_s{path} = {self.from_unsigned(part, ft)};")
        return "({ " + " ".join(lines) + " _s; })"

    # -- packets and field lists -----------------------------------------------------------------

    def get_bits(self, data: str, offset: str, t) -> str:
        width = self.width(t)
        if self.big(t):
            return f"p4n_get_bits_big({data}, {offset}, {width})"
        raw = f"p4n_get_bits{'128' if width > 64 else ''}({data}, {offset}, {width})"
        return self.from_unsigned(raw, t)

    def put_bits(self, data: str, offset: str, src: str, t) -> str:
        width = self.width(t)
        if self.big(t):
            return f"p4n_put_bits_big({data}, {offset}, {width}, {src})"
        return f"p4n_put_bits{'128' if width > 64 else ''}({data}, {offset}, {width}, " \
               f"{self.unsigned(src, t)})"

    def field_add(self, src: str, t, width: int) -> str:
        if self.big(t):
            return f"p4n_fields_add_big(F, {src}, {width});"
        fn = "p4n_fields_add128" if width > 64 else "p4n_fields_add"
        return f"{fn}(F, {self.unsigned(src, t)}, {width});"
