"""C types of P4 types, C literals and the refusal error of the C emitter."""

from __future__ import annotations

from ...frontend import types as T
from ...frontend.errors import CompileError
from ..exprs import strip

NOT_SUPPORTED = "not supported by the c back end"

# crc16_custom and crc32_custom keep their defaults (crc16 and crc32): nothing configures them
# at run time, in either back end. `random` is handled per call site (externs.hash_of).
HASHES = {"crc16": "P4N_CRC16", "crc32": "P4N_CRC32", "csum16": "P4N_CSUM16",
          "xor16": "P4N_XOR16", "identity": "P4N_IDENTITY", "crc16_custom": "P4N_CRC16",
          "crc32_custom": "P4N_CRC32"}


class Unsupported(CompileError):
    """A construct the C back end refuses (the Python back end may still run it)."""


def refuse(node, what: str):
    raise Unsupported(getattr(node, "loc", None), f"{what} is {NOT_SUPPORTED}")


def _int(value: int) -> str:
    """A C literal: LL (signed) when it fits, so that comparing with int64_t stays signed;
    a 128-bit constant beyond 64 bits."""
    if value >= (1 << 64) or value < -(1 << 63):
        return _wide(value)
    if value < 0:
        return f"(-{(-value)}LL)" if value != -(1 << 63) else "(-9223372036854775807LL-1)"
    return f"{value}LL" if value < (1 << 63) else f"{value}ULL"


def c_string(text: str, escape_percent: bool = False) -> str:
    """A C string literal of `text`."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if escape_percent:
        out = out.replace("%", "%%")
    return f'"{out}"'


def _wide(value: int) -> str:
    """A 128-bit constant (two's complement for negative values)."""
    v = value & ((1 << 128) - 1)
    text = f"P4N_U128({v >> 64}ULL, {v & ((1 << 64) - 1)}ULL)"
    return f"((p4n_s128){text})" if value < 0 else text


class CTypes:
    """C types of P4 types: scalars in 64-bit words, a struct per header/struct."""

    def __init__(self):
        self.names: dict = {}
        self.order: list = []
        self.max_width = 0          # the widest value over 128 bits (p4n_big's size)

    def note_width(self, width: int) -> None:
        self.max_width = max(self.max_width, width)

    def big_limbs(self) -> int:
        """Limbs of a p4n_big: the widest value plus one bit (saturating arithmetic)."""
        return max(3, (self.max_width + 1 + 63) // 64)

    @staticmethod
    def scalar(t):
        """(width, signed) of a scalar type, or None for composite types."""
        t = strip(t)
        if isinstance(t, T.BoolType):
            return 1, False
        if isinstance(t, T.BitsType):
            return t.width, t.signed
        if isinstance(t, T.EnumType):
            if t.underlying is not None:
                return t.underlying.width, t.underlying.signed
            return 32, False
        if isinstance(t, (T.ErrorType, T.MatchKindType)):
            return 32, False
        return None

    def ctype(self, t, node=None) -> str:
        t = strip(t)
        sc = self.scalar(t)
        if sc is not None:
            width, signed = sc
            if width > 128:
                self.note_width(width)
                return "p4n_big"
            if isinstance(t, T.BoolType):
                return "uint8_t"
            if width > 64:
                return "p4n_s128" if signed else "p4n_u128"
            return "int64_t" if signed else "uint64_t"
        if isinstance(t, T.StructLikeType):
            return self.struct(t, node)
        if isinstance(t, T.StackType):
            return self.stack(t, node)
        if isinstance(t, T.VarbitType):
            return self.varbit(t)
        if isinstance(t, T.TupleType):
            return self.tuple(t, node)
        refuse(node, f"a value of type {t}")

    def _named(self, t, prefix: str, describe) -> str:
        """The C name of composite type `t`, declared on first use: `describe()` names the
        types `t` contains first (their typedefs must come before its own) and returns the
        rest of its name."""
        name = self.names.get(t)
        if name is None:
            suffix = describe()
            name = f"{prefix}{len(self.names)}_{suffix}"
            self.names[t] = name
            self.order.append(t)
        return name

    def tuple(self, t, node) -> str:
        """A tuple: a C struct with fields f_0, f_1, ..."""
        def describe():
            for et in t.elements:
                self.ctype(et, node)
            return f"tuple{len(t.elements)}"
        return self._named(t, "T", describe)

    def varbit(self, t) -> str:
        return self._named(t, "V", lambda: f"varbit{t.max_width}")

    def stack(self, t, node) -> str:
        return self._named(t, "K", lambda: f"{self.ctype(t.element, node)}_{t.size}")

    def struct(self, t, node) -> str:
        def describe():
            for fname, ft in t.fields:
                self.ctype(ft, node)
            return "".join(c if c.isalnum() else "_" for c in str(t))
        kind = "H" if isinstance(t, T.HeaderType) else \
            "U" if isinstance(t, T.HeaderUnionType) else "S"
        return self._named(t, kind, describe)

    def source(self) -> str:
        out = []
        for t in self.order:
            name = self.names[t]
            if isinstance(t, T.StackType):
                out.append(f"typedef struct {name} {{\n    {self.names[strip(t.element)]} "
                           f"elems[{t.size}];\n    uint32_t nextIndex;\n}} {name};")
                continue
            if isinstance(t, T.VarbitType):
                # `len` bits (whole bytes: extract takes only those) in data, big-endian
                out.append(f"typedef struct {name} {{\n    uint32_t len;\n    uint8_t "
                           f"data[{max(1, (t.max_width + 7) // 8)}];\n}} {name};")
                continue
            lines = [f"typedef struct {name} {{"]
            if isinstance(t, T.TupleType):
                lines += [f"    {self.ctype(et)} f_{i};" for i, et in enumerate(t.elements)]
            if isinstance(t, T.HeaderType):
                lines.append("    uint8_t valid;")
            for fname, ft in getattr(t, "fields", ()):
                lines.append(f"    {self.ctype(ft)} f_{fname};")
            if len(lines) == 1:
                lines.append("    uint8_t unused;")
            lines.append(f"}} {name};")
            out.append("\n".join(lines))
        return "\n\n".join(out)


def key_words(keys) -> int:
    """The 64-bit words a table's key takes in C (wide.nwords of each field)."""
    return sum(max(1, (CTypes.scalar(k.expr.type)[0] + 63) // 64) for k in keys)
