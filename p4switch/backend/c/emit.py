"""The C emitter: the checked, elaborated program (the IR the Python emitter walks) to one C
translation unit that runs the whole v1model pipeline.

Layout of what it writes: a C struct per header/struct type, one function per pipeline stage
(`p4n_stage_parser` ... `p4n_stage_deparser`) with every sub-parser/control apply, action,
function and table apply written inline (P4 has no recursion), `p4n_preserve` for field lists,
then runtime/tm.inc, the traffic manager, which defines `p4n_process`.

Semantics follow the Python back end, the reference: the same value ranges (exprs.py), the
same copy-in/copy-out (inout/out scalars copied back, also on `exit`), the same parser errors,
and table lookups through tables whose entries the Python `Table` hands over in lookup order.
It shares the IR-resolution helpers of `ProgramCompiler` (tables of an apply, an action's index
in its table, extern instances, error codes), so the two emitters cannot disagree on them.

What it cannot do yet is refused with `FILE:LINE:COL: ... not supported by the c back end`.
"""

from __future__ import annotations

from contextlib import contextmanager

from ...frontend import ast as A
from ...frontend import types as T
from ...frontend.errors import CompileError
from ..body import param_type
from ..compiler import ProgramCompiler
from ..exprs import strip
from ..externs import arg

NOT_SUPPORTED = "not supported by the c back end"

HASHES = {"crc16": "P4N_CRC16", "crc32": "P4N_CRC32", "csum16": "P4N_CSUM16",
          "xor16": "P4N_XOR16", "identity": "P4N_IDENTITY"}


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
                refuse(node, f"a {width}-bit value")
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
        refuse(node, f"a value of type {t}")

    def varbit(self, t) -> str:
        name = self.names.get(t)
        if name is None:
            name = f"V{len(self.names)}_varbit{t.max_width}"
            self.names[t] = name
            self.order.append(t)
        return name

    def stack(self, t, node) -> str:
        name = self.names.get(t)
        if name is None:
            element = self.ctype(t.element, node)
            name = f"K{len(self.names)}_{element}_{t.size}"
            self.names[t] = name
            self.order.append(t)
        return name

    def struct(self, t, node) -> str:
        name = self.names.get(t)
        if name is None:
            for fname, ft in t.fields:
                self.ctype(ft, node)
            kind = "H" if isinstance(t, T.HeaderType) else \
                "U" if isinstance(t, T.HeaderUnionType) else "S"
            safe = "".join(c if c.isalnum() else "_" for c in str(t))
            name = f"{kind}{len(self.names)}_{safe}"
            self.names[t] = name
            self.order.append(t)
        return name

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
            if isinstance(t, T.HeaderType):
                lines.append("    uint8_t valid;")
            for fname, ft in t.fields:
                lines.append(f"    {self.ctype(ft)} f_{fname};")
            if len(lines) == 1:
                lines.append("    uint8_t unused;")
            lines.append(f"}} {name};")
            out.append("\n".join(lines))
        return "\n\n".join(out)


def key_words(keys) -> int:
    """The 64-bit words a table's key takes in C (two for a key wider than 64 bits)."""
    return sum(2 if CTypes.scalar(k.expr.type)[0] > 64 else 1 for k in keys)


class Frame:
    """One inlined callable: its copy-backs (also run by `exit`) and its return label."""

    def __init__(self, copy_back: list[str], return_label: str | None, result: str | None):
        self.copy_back = copy_back
        self.return_label = return_label
        self.result = result


class CEmitter:
    """Writes the C source of one program (see the module docstring)."""

    def __init__(self, program: A.Program, compiled):
        self.pc = ProgramCompiler(program)      # shared IR helpers; nothing is compiled twice
        self.program = program
        self.pipeline = self.pc.pipeline
        self.compiled = compiled
        self.types = CTypes()
        self.counter = 0
        self.bind: dict = {}
        self.frames: list[Frame] = []
        self.block = None
        self.stage_exit = None
        self.in_parser = False
        self.registers = [s for s in compiled.externs if s.kind == "register"]
        self.counters = [s for s in compiled.externs if s.kind == "counter"]
        self._register_index = {s.name: i for i, s in enumerate(self.registers)}
        self._counter_index = {s.name: i for i, s in enumerate(self.counters)}
        self.meters = [s for s in compiled.externs if s.kind == "meter"]
        self.direct_meters = [s for s in compiled.externs if s.kind == "direct_meter"]
        self._meter_index = {s.name: i for i, s in enumerate(self.meters)}
        self._direct_meter_index = {s.name: i for i, s in enumerate(self.direct_meters)}
        self.digest_names = list(compiled.digests)
        for spec in compiled.externs:
            if spec.kind == "action_selector" and spec.algorithm not in HASHES:
                inst = next((e for e in self.pipeline.externs if e.name == spec.name), None)
                refuse(inst.decl if inst is not None else None,
                       f"an action selector with hash {spec.algorithm}")
        self._profiles = {s.name: s for s in compiled.externs
                          if s.kind in ("action_profile", "action_selector")}
        for spec in compiled.hashes:
            if spec[1] not in HASHES:
                refuse(None, f"hash algorithm {spec[1]}")
        self._value_set_index = {name: i for i, (_, name, _) in enumerate(compiled.value_sets)}
        self.assertions: list[str] = []
    # -- small helpers ------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        self.counter += 1
        safe = "".join(c if c.isalnum() else "_" for c in base)
        return f"{safe}_{self.counter}"

    @contextmanager
    def bound(self, pairs):
        saved = {d: self.bind.get(d) for d, _ in pairs}
        for d, name in pairs:
            self.bind[d] = name
        try:
            yield
        finally:
            for d, old in saved.items():
                if old is None:
                    self.bind.pop(d, None)
                else:
                    self.bind[d] = old

    @contextmanager
    def in_block(self, block):
        saved = self.block
        self.block = block
        try:
            yield
        finally:
            self.block = saved

    def zero(self, t, node) -> str:
        ct = self.types.ctype(t, node)
        return "{0}" if ct.startswith(("H", "S")) else "0"

    def is_composite(self, t) -> bool:
        return self.types.scalar(t) is None

    def word(self, t) -> str:
        """The unsigned C type computations of scalar type `t` are done in."""
        sc = self.types.scalar(t)
        return "p4n_u128" if sc is not None and sc[0] > 64 else "uint64_t"

    def wide(self, t) -> bool:
        sc = self.types.scalar(t)
        return sc is not None and sc[0] > 64

    # -- values -------------------------------------------------------------------------------

    def wrap(self, src: str, t) -> str:
        sc = self.types.scalar(t)
        if sc is None:
            return src
        width, signed = sc
        if isinstance(strip(t), T.BoolType):
            return f"(({src}) != 0)"
        if width > 64:
            if signed:
                return f"p4n_sext128((p4n_u128)({src}), {width})"
            if width == 128:
                return f"((p4n_u128)({src}))"
            return f"(((p4n_u128)({src})) & p4n_mask128({width}))"
        if signed:
            return f"p4n_sext((uint64_t)({src}), {width})"
        if width >= 64:
            return f"((uint64_t)({src}))"
        return f"(((uint64_t)({src})) & {_int((1 << width) - 1)})"

    def unsigned(self, src: str, t) -> str:
        """The unsigned bit pattern of a scalar value."""
        sc = self.types.scalar(t)
        width, signed = sc
        if width > 64:
            return f"(((p4n_u128)({src})) & p4n_mask128({width}))" if signed else \
                f"((p4n_u128)({src}))"
        if signed:
            return f"(((uint64_t)({src})) & {_int((1 << width) - 1) if width < 64 else '~0ULL'})"
        return f"((uint64_t)({src}))"

    def from_unsigned(self, src: str, t) -> str:
        sc = self.types.scalar(t)
        width, signed = sc
        if isinstance(strip(t), T.BoolType):
            return f"(({src}) != 0)"
        if signed:
            return f"p4n_sext128({src}, {width})" if width > 64 else f"p4n_sext({src}, {width})"
        return src

    def literal(self, value, t) -> str:
        t = strip(t)
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(t, T.BitsType):
            value = t.wrap(int(value))
            if t.width > 128:
                refuse(None, f"a {t.width}-bit value")
            if t.width > 64:
                return _wide(value)
            return _int(value) if not t.signed else f"((int64_t){_int(value)})"
        if isinstance(value, int):
            return _int(value)
        refuse(None, f"the constant {value!r}")

    # -- expressions ----------------------------------------------------------------------------

    def ex(self, e) -> str:
        t = strip(e.type) if e.type is not None else None
        cv = e.const_value
        if cv is not None and isinstance(t, (T.BitsType, T.BoolType)) \
                and not isinstance(e, A.MethodCallExpression):
            return self.literal(cv, t)
        if cv is not None and isinstance(t, T.IntType) and isinstance(cv, int):
            return _int(cv)
        if cv is not None and isinstance(t, T.EnumType) and isinstance(cv, int) \
                and t.underlying is not None:
            return self.literal(cv, t.underlying)
        method = getattr(self, "ex_" + type(e).__name__, None)
        if method is None:
            refuse(e, f"expression {type(e).__name__}")
        return method(e, t)

    def ex_PathExpression(self, e, t):
        decl = e.decl
        if isinstance(decl, (A.Parameter, A.VariableDecl)):
            if decl in self.bind:
                return self.bind[decl]
            block = self.block
            if block is not None and isinstance(decl, A.Parameter) and \
                    decl in getattr(block.decl, "ctor_params", ()):
                value = block.ctor_args.get(decl.name)
                if isinstance(value, (int, bool)):
                    return self.literal(value, param_type(decl))
            refuse(e, f"the use of {e.name} here")
        if isinstance(decl, A.ConstantDecl):
            cv = decl.value.const_value
            if cv is None or isinstance(cv, str):
                return self.ex(decl.value)
            return self.literal(cv, t)
        if isinstance(decl, A.EnumMember):
            return _int(self.enum_value(t, decl.name, e))
        refuse(e, f"the use of {e.name}")

    def enum_value(self, t, member, node) -> int:
        t = strip(t)
        if isinstance(t, T.ErrorType):
            return self.pc.error_code(member, node)
        if isinstance(t, T.EnumType):
            if t.underlying is not None:
                return t.underlying.wrap(t.values[member])
            return t.members.index(member)
        if isinstance(t, T.MatchKindType):
            return t.members.index(member)
        refuse(node, f"enum member {member}")

    def ex_MemberExpression(self, e, t):
        base_t = strip(e.expr.type) if e.expr.type is not None else None
        if isinstance(e.decl, A.EnumMember) or isinstance(e.expr, A.PathExpression) and \
                isinstance(e.expr.decl, (A.EnumDecl, A.ErrorDecl, A.MatchKindDecl)):
            return _int(self.enum_value(t, e.member, e))
        if isinstance(base_t, T.StructLikeType):
            return f"({self.ex(e.expr)}).f_{e.member}"
        if isinstance(base_t, T.StackType):
            stack = self.ex(e.expr)
            if e.member == "next":
                return self.stack_element(stack, base_t, f"({stack}).nextIndex", e)
            if e.member == "last":
                return self.stack_element(stack, base_t, f"(({stack}).nextIndex - 1u)", e,
                                          last=True)
            if e.member == "lastIndex":
                return f"((uint64_t)((({stack}).nextIndex - 1u) & 0xFFFFFFFFu))"
            if e.member == "nextIndex":
                return f"((uint64_t)({stack}).nextIndex)"
            if e.member == "size":
                return _int(base_t.size)
        if isinstance(base_t, T.TableResultType) or isinstance(e.expr, A.MethodCallExpression) \
                and e.expr.call_kind == "table_apply":
            r = self.ex(e.expr)
            if e.member == "hit":
                return f"((({r}) >> 16) & 1)"
            if e.member == "miss":
                return f"(!((({r}) >> 16) & 1))"
            if e.member == "action_run":
                return f"(({r}) & 0xFFFF)"
        refuse(e, f"member .{e.member} of {base_t}")

    def stack_error(self) -> str:
        """What a stack index out of range does: a parser error in a parser (the packet goes
        on), the packet dropped elsewhere (as the Python back end's ParserException)."""
        if self.in_parser:
            code = self.pc.error_code("StackOutOfBounds", None)
            return f"c->parser_error = {code}; goto {self.parser_reject};"
        return f"c->failed = 1; goto {self.stage_exit};"

    def stack_element(self, stack, t, index, node, last=False) -> str:
        """`stack.next` / `stack.last`: the element, or the stack error."""
        element = self.types.ctype(t.element, node)
        bad = f"({stack}).nextIndex == 0" if last else f"({stack}).nextIndex >= {t.size}"
        return f"(*({{ if ({bad}) {{ {self.stack_error()} }} " \
               f"({element} *)&({stack}).elems[{index}]; }}))"

    def ex_IndexExpression(self, e, t):
        base_t = strip(e.expr.type)
        if not isinstance(base_t, T.StackType):
            refuse(e, f"indexing a value of type {base_t}")
        base = self.ex(e.expr)
        index = e.index.const_value
        if index is not None and 0 <= index < base_t.size:
            return f"({base}).elems[{index}]"
        element = self.types.ctype(base_t.element, e)
        i = self.ex(e.index)
        if self.in_parser:
            return f"(*({{ uint64_t _x = (uint64_t)({i}); if (_x >= {base_t.size}) {{ " \
                   f"{self.stack_error()} }} &({base}).elems[_x]; }}))"
        # In a control an index out of range is undefined; as bmv2 (and the Python back
        # end), a fresh invalid element: writes through it are lost, reads give zeros.
        return f"(*({{ uint64_t _x = (uint64_t)({i}); {element} *_p; if (_x < {base_t.size}) " \
               f"_p = &({base}).elems[_x]; else {{ static __thread {element} _scratch; " \
               f"memset(&_scratch, 0, sizeof _scratch); _p = &_scratch; }} _p; }}))"

    def ex_SliceExpression(self, e, t):
        hi, lo = e.hi.const_value, e.lo.const_value
        if hi is None or lo is None:
            refuse(e, "a slice with non-constant bounds")
        src_t = strip(e.expr.type)
        value = self.unsigned(self.ex(e.expr), src_t)
        if self.wide(src_t):
            result = f"(((({value}) >> {lo})) & {_wide((1 << (hi - lo + 1)) - 1)})"
            return result if hi - lo + 1 > 64 else f"((uint64_t){result})"
        return f"((({value}) >> {lo}) & {_int((1 << (hi - lo + 1)) - 1)})"

    def ex_UnaryExpression(self, e, t):
        a = self.ex(e.operand)
        if e.op == "!":
            return f"(!({a}))"
        if e.op == "~":
            width, signed = self.types.scalar(t)
            if not signed:
                return self.wrap(f"~({a})", t)
            return f"(~({a}))"
        if e.op == "-":
            return self.wrap(f"({self.word(t)})0 - ({self.word(t)})({a})", t)
        if e.op == "+":
            return a
        refuse(e, f"operator {e.op}")

    def ex_BinaryExpression(self, e, t):
        op = e.op
        if op in ("&&", "||"):
            return f"(({self.ex(e.left)}) {op} ({self.ex(e.right)}))"
        a, b = self.ex(e.left), self.ex(e.right)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            lt = strip(e.left.type)
            if self.is_composite(lt):
                refuse(e, "comparing headers or structs")
            return f"(({a}) {op} ({b}))"
        sc = self.types.scalar(t) if t is not None else None
        if sc is None:
            refuse(e, f"operator {op} on {t}")
        width, signed = sc
        W = self.word(t)
        if op in ("+", "-", "*"):
            return self.wrap(f"({W})({a}) {op} ({W})({b})", t)
        if op in ("/", "%"):
            if width > 64:
                if signed:
                    refuse(e, f"{op} of {width}-bit signed values")
                return self.wrap(f"p4n_u{'div' if op == '/' else 'mod'}128({a}, {b})", t)
            fn = {("/", False): "p4n_udiv", ("%", False): "p4n_umod",
                  ("/", True): "p4n_sdiv", ("%", True): "p4n_smod"}[op, signed]
            return self.wrap(f"{fn}({a}, {b})", t)
        if op in ("&", "|", "^"):
            return f"(({a}) {op} ({b}))"
        if op in ("|+|", "|-|"):
            if width > 64:
                refuse(e, f"saturating arithmetic on {width}-bit values")
            cop = "+" if op == "|+|" else "-"
            fn = "p4n_ssat" if signed else "p4n_usat"
            cast = "(__int128)(int64_t)" if signed else "(__int128)(uint64_t)"
            return f"{fn}({cast}({a}) {cop} {cast}({b}), {width})"
        if op == "<<":
            if width > 64:
                fn = "p4n_sshl128" if signed else "p4n_ushl128"
                return f"{fn}({a}, (p4n_u128)({b}), {width})"
            if signed:
                return f"p4n_sshl({a}, (uint64_t)({b}), {width})"
            return f"p4n_ushl({a}, (uint64_t)({b}), {width})"
        if op == ">>":
            if width > 64:
                fn = "p4n_sshr128" if signed else "p4n_ushr128"
                return f"{fn}({a}, (p4n_u128)({b}))"
            return f"p4n_sshr({a}, (uint64_t)({b}))" if signed else f"p4n_ushr({a}, (uint64_t)({b}))"
        if op == "++":
            lt, rt = strip(e.left.type), strip(e.right.type)
            rw = self.types.scalar(rt)[0]
            joined = f"(((({W}){self.unsigned(a, lt)}) << {rw}) | (({W}){self.unsigned(b, rt)}))"
            return self.from_unsigned(joined, t)
        refuse(e, f"operator {op}")

    def ex_TernaryExpression(self, e, t):
        if self.is_composite(t):
            refuse(e, "a ternary expression of headers or structs")
        return f"(({self.ex(e.cond)}) ? ({self.ex(e.then)}) : ({self.ex(e.else_)}))"

    def ex_CastExpression(self, e, t):
        src_t = strip(e.expr.type)
        if isinstance(e.expr, (A.ListExpression, A.StructExpression)):
            refuse(e, "a struct or list expression")
        a = self.ex(e.expr)
        if isinstance(t, T.BoolType):
            return a if isinstance(src_t, T.BoolType) else f"(({a}) != 0)"
        if isinstance(src_t, T.IntType):
            return self.wrap(a, t)
        if isinstance(t, T.BitsType) or isinstance(t, T.EnumType) and t.underlying is not None:
            target = t.underlying if isinstance(t, T.EnumType) else t
            if isinstance(src_t, T.BoolType):
                return f"((uint64_t)({a}))"
            if src_t == t:
                return a
            src_sc = self.types.scalar(src_t)
            if src_sc is None:
                refuse(e, f"a cast from {src_t}")
            return self.wrap(a, target)
        if src_t == t or isinstance(t, (T.ErrorType, T.EnumType)):
            return a
        refuse(e, f"a cast from {src_t} to {t}")

    def ex_MethodCallExpression(self, e, t):
        src = self.call(e, want_value=True)
        if src is None:
            refuse(e, "a call without a value used as a value")
        return src

    def ex_ListExpression(self, e, t):
        refuse(e, "a list expression here")

    def ex_StructExpression(self, e, t):
        refuse(e, "a struct expression")

    def ex_InvalidHeaderExpression(self, e, t):
        return f"(({self.types.ctype(t, e)}){{0}})"

    # -- lvalues and assignment --------------------------------------------------------------------

    def assign(self, lhs, src: str) -> str:
        """A C statement storing `src` (already of the lvalue's type) into `lhs`."""
        if lhs is None or isinstance(lhs, A.DontCareExpression):
            return f"(void)({src});"
        if isinstance(lhs, A.SliceExpression):
            hi, lo = lhs.hi.const_value, lhs.lo.const_value
            base_t = strip(lhs.expr.type)
            width, signed = self.types.scalar(base_t)
            mask = (1 << (hi - lo + 1)) - 1
            full = (1 << width) - 1
            keep = full ^ (mask << lo)
            old = self.unsigned(self.ex(lhs.expr), base_t)
            W = self.word(base_t)
            merged = f"(({old} & {_int(keep)}) | (((({W})({src})) & {_int(mask)}) << {lo}))"
            return self.assign(lhs.expr, self.from_unsigned(merged, base_t))
        if isinstance(lhs, (A.PathExpression, A.MemberExpression, A.IndexExpression)):
            return f"{self.ex(lhs)} = {src};"
        refuse(lhs, f"assignment to {type(lhs).__name__}")

    def value_as(self, e, target_t) -> str:
        """`e` as a value of `target_t` (composite: a copy, invalid header: zeros)."""
        if isinstance(e, A.InvalidHeaderExpression):
            return f"(({self.types.ctype(target_t, e)}){{0}})"
        if isinstance(e, (A.ListExpression, A.StructExpression)):
            return self.make_struct(e, strip(target_t))
        return self.ex(e)

    def make_struct(self, e, t) -> str:
        if not isinstance(t, (T.HeaderType, T.StructType)):
            refuse(e, "a list expression")
        if isinstance(e, A.ListExpression):
            values = e.elements
        else:
            by_name = {f.name: f.value for f in e.fields}
            values = [by_name.get(name) for name, _ in t.fields]
        if len(values) != len(t.fields) or any(v is None for v in values):
            refuse(e, "a struct expression that does not give every field")
        parts = [f".f_{name} = {self.value_as(v, ft)}" for (name, ft), v in zip(t.fields, values)]
        if isinstance(t, T.HeaderType):
            parts.insert(0, ".valid = 1")
        return f"(({self.types.ctype(t, e)}){{{', '.join(parts)}}})"

    # -- statements ---------------------------------------------------------------------------

    def statements(self, stmts) -> list[str]:
        out = []
        for s in stmts:
            out += self.statement(s)
        return out

    def statement(self, s) -> list[str]:
        method = getattr(self, "st_" + type(s).__name__, None)
        if method is None:
            refuse(s, f"statement {type(s).__name__}")
        return method(s)

    def st_BlockStatement(self, s):
        return ["{"] + self.statements(s.statements) + ["}"]

    def st_EmptyStatement(self, s):
        return []

    def st_ConstantDecl(self, s):
        return []

    def st_VariableDecl(self, s):
        t = s.type if s.type is not None else s.type_ref.type
        name = self.fresh(s.name)
        self.bind[s] = name
        ct = self.types.ctype(t, s)
        init = self.value_as(s.init, t) if s.init is not None else self.zero(t, s)
        return [f"{ct} {name} = {init};"]

    def st_AssignmentStatement(self, s):
        return [self.assign(s.lhs, self.value_as(s.rhs, s.lhs.type))]

    def st_MethodCallStatement(self, s):
        src = self.call(s.call, want_value=False)
        return [f"{src};"] if src else []

    def st_IfStatement(self, s):
        lines = [f"if ({self.ex(s.cond)}) {{"] + self.statement(s.then) + ["}"]
        if s.else_ is not None:
            lines += ["else {"] + self.statement(s.else_) + ["}"]
        return lines

    def st_SwitchStatement(self, s):
        value = self.fresh("sw")
        W = self.word(s.expr.type) if s.expr.type is not None and not s.is_action_run \
            else "uint64_t"
        self._switch_word = W
        lines = [f"{W} {value} = ({W})({self.ex(s.expr)});"]
        labels, first, has_default = [], True, False
        for case in s.cases:
            labels.append(case.label)
            if case.body is None:
                continue
            if any(isinstance(lb, A.DefaultExpression) for lb in labels):
                cond = "1"
            else:
                cond = " || ".join(f"{value} == ({W})({self.switch_label(s, lb)})"
                                   for lb in labels)
            lines += [f"{'if' if first else 'else if'} ({cond}) {{"] + \
                self.statement(case.body) + ["}"]
            labels, first = [], False
        return ["{"] + lines + ["}"]

    def switch_label(self, s, label) -> str:
        if s.is_action_run:
            table = self.pc.table_of_apply(s.expr.expr, self.block)
            return str(self.pc.table_action_index(table, label.decl, label))
        return self.ex(label)

    def st_ExitStatement(self, s):
        lines = []
        for frame in reversed(self.frames):
            lines += frame.copy_back
        return lines + [f"goto {self.stage_exit};"]

    def st_ReturnStatement(self, s):
        frame = self.frames[-1] if self.frames else None
        if frame is None or frame.return_label is None:
            refuse(s, "return here")
        lines = []
        if s.value is not None:
            lines.append(f"{frame.result} = {self.ex(s.value)};")
        return lines + [f"goto {frame.return_label};"]

    def st_ForStatement(self, s):
        init = self.statements(s.init)
        cond = self.ex(s.cond) if s.cond is not None else "1"
        updates = " ".join(self.statements(s.updates))
        # The updates run as the loop's third clause, so `continue` reaches them as in P4.
        third = f"({{ {updates} }})" if updates else ""
        return ["{"] + init + [f"for (; {cond}; {third}) {{"] + self.statement(s.body) + \
            ["}", "}"]

    def st_ForInStatement(self, s):
        coll = s.collection
        if isinstance(coll, A.CastExpression) and isinstance(coll.expr, A.ListExpression):
            coll = coll.expr
        var_t = s.var.type if s.var.type is not None else s.var.type_ref.type
        if isinstance(coll, A.RangeExpression):
            name = self.fresh(s.var.name)
            self.bind[s.var] = name
            ct = self.types.ctype(var_t, s)
            k, hi = self.fresh("k"), self.fresh("hi")
            return ["{", f"__int128 {hi} = (__int128)({self.ex(coll.hi)});",
                    f"for (__int128 {k} = (__int128)({self.ex(coll.lo)}); {k} <= {hi}; {k}++) {{",
                    f"{ct} {name} = ({ct}){k};"] + self.statement(s.body) + ["}", "}"]
        ct_t = strip(coll.type) if coll.type is not None else None
        if isinstance(ct_t, T.StackType):
            stack = self.ex(coll)
            i = self.fresh("i")
            self.bind[s.var] = f"({stack}).elems[{i}]"
            return [f"for (uint32_t {i} = 0; {i} < {ct_t.size}; {i}++) {{"] + \
                self.statement(s.body) + ["}"]
        if isinstance(coll, A.ListExpression):
            ct = self.types.ctype(var_t, s)
            values = self.fresh("vals")
            i = self.fresh("i")
            name = self.fresh(s.var.name)
            self.bind[s.var] = name
            items = ", ".join(self.value_as(x, var_t) for x in coll.elements) or "0"
            return ["{", f"const {ct} {values}[] = {{ {items} }};",
                    f"for (size_t {i} = 0; {i} < {len(coll.elements)}; {i}++) {{",
                    f"{ct} {name} = {values}[{i}];"] + self.statement(s.body) + ["}", "}"]
        refuse(s, f"a for loop over {ct_t}")

    def st_BreakStatement(self, s):
        return ["break;"]

    def st_ContinueStatement(self, s):
        return ["continue;"]

    # -- calls --------------------------------------------------------------------------------

    def call(self, e, want_value):
        kind = e.call_kind
        if kind == "builtin":
            return self.call_builtin(e)
        if kind in ("extern_function", "extern_method"):
            return self.call_extern(e)
        if kind == "table_apply":
            return self.table_apply(e)
        if kind == "action":
            decl = e.callee_decl
            owner = self.action_block(decl)
            return self.inline_callable(decl, e.param_args, owner, body=decl.body)
        if kind == "function":
            decl = e.callee_decl
            if decl.type_params:
                refuse(e, "a generic function")
            rt = decl.return_type.type if decl.return_type is not None else None
            returns = rt is not None and not isinstance(strip(rt), T.VoidType)
            return self.inline_callable(decl, e.param_args, self.block, body=decl.body,
                                        return_type=rt if returns else None)
        if kind == "block_apply":
            child = self.pc.child_block(e, self.block)
            if not isinstance(child.decl, A.ControlDecl):
                refuse(e, "a sub-parser")
            param_args = [(p, a) for p, (_, a) in zip(child.decl.params, e.param_args)]
            return self.inline_control(child, param_args)
        refuse(e, f"a call of kind {kind}")

    def action_block(self, decl):
        """The block whose objects an action's body names (its own control, else None)."""
        block = self.block
        if block is not None and block.actions.get(decl.name) is not None and \
                block.actions[decl.name].decl is decl:
            return block
        return block if decl not in self.pc.pipeline_global_actions() else None

    def _aliased(self, param_args) -> set:
        texts = []
        for _, a in param_args:
            if a is not None and not isinstance(a, A.DontCareExpression):
                texts.append((a, self.pc_text(a)))
        aliased = set()
        for i, (a, pa) in enumerate(texts):
            for b, pb in texts[i + 1:]:
                if pa == pb or pb.startswith((pa + ".", pa + "[")) or \
                        pa.startswith((pb + ".", pb + "[")):
                    aliased.update((id(a), id(b)))
        return aliased

    @staticmethod
    def pc_text(e) -> str:
        if isinstance(e, A.PathExpression):
            return e.name
        if isinstance(e, A.MemberExpression):
            return f"{CEmitter.pc_text(e.expr)}.{e.member}"
        return f"<{id(e)}>"

    def bind_params(self, param_args, by_reference: bool):
        """(lines before the body, copy-back lines, (decl, C name) bindings)."""
        before, copy_back, binds = [], [], []
        aliased = self._aliased(param_args) if by_reference else set()
        for p, a in param_args:
            pt = param_type(p)
            composite = self.is_composite(pt)
            given = a is not None and not isinstance(a, A.DontCareExpression)
            if by_reference and composite and given and id(a) not in aliased and \
                    isinstance(a, (A.PathExpression, A.MemberExpression)):
                ref = self.ex(a)
                binds.append((p, ref))
                if p.direction == "out":
                    before.append(f"memset(&({ref}), 0, sizeof({ref}));")
                continue
            name = self.fresh(p.name)
            ct = self.types.ctype(pt, p)
            if not given or p.direction == "out":
                init = self.zero(pt, p)
            else:
                init = self.value_as(a, pt)
            before.append(f"{ct} {name} = {init};")
            binds.append((p, name))
            if given and p.direction in ("out", "inout"):
                copy_back.append(self.assign(a, name))
        return before, copy_back, binds

    def inline_callable(self, decl, param_args, block, body, return_type=None,
                        entry_args=None):
        """An action or function written in place, as a statement expression."""
        plane = [p for p in decl.params if p.direction is None] if entry_args is not None else []
        directional = [(p, a) for p, a in param_args if p not in plane]
        before, copy_back, binds = self.bind_params(directional, by_reference=False)
        j = 0
        for p in plane:
            name = self.fresh(p.name)
            pt = param_type(p)
            if self.wide(pt):       # two words, high first (binding.py splits them alike)
                raw = f"P4N_U128({entry_args}[{j}], {entry_args}[{j + 1}])"
                j += 2
            else:
                raw = f"{entry_args}[{j}]"
                j += 1
            before.append(f"{self.types.ctype(pt, p)} {name} = {self.from_unsigned(raw, pt)};")
            binds.append((p, name))
        label = self.fresh("ret")
        result = None
        if return_type is not None:
            result = self.fresh("result")
            before.insert(0, f"{self.types.ctype(return_type, decl)} {result} = "
                             f"{self.zero(return_type, decl)};")
        frame = Frame(copy_back, label, result)
        with self.bound(binds), self.in_block(block):
            self.frames.append(frame)
            try:
                lines = self.statement(body)
            finally:
                self.frames.pop()
        lines = before + lines + [f"{label}: ;"] + copy_back
        if result is not None:
            lines.append(f"{result};")
        return "({\n" + "\n".join(lines) + "\n})"

    def inline_control(self, inst, param_args):
        decl = inst.decl
        before, copy_back, binds = self.bind_params(param_args, by_reference=True)
        label = self.fresh("ret")
        frame = Frame(copy_back, label, None)
        with self.bound(binds), self.in_block(inst):
            self.frames.append(frame)
            try:
                lines = self.control_locals(inst) + self.statement(decl.body)
            finally:
                self.frames.pop()
        return "({\n" + "\n".join(before + lines + [f"{label}: ;"] + copy_back) + "\n})"

    def control_locals(self, inst) -> list[str]:
        lines = []
        for local in inst.decl.locals:
            if isinstance(local, A.VariableDecl):
                lines += self.st_VariableDecl(local)
            elif isinstance(local, (A.ActionDecl, A.TableDecl, A.ConstantDecl)):
                pass
            elif isinstance(local, A.Instantiation):
                if local.name in inst.externs:
                    ext = inst.externs[local.name]
                    if ext.extern not in ("register", "counter", "direct_counter", "meter",
                                          "direct_meter", "Checksum16", "action_profile",
                                          "action_selector"):
                        refuse(local, f"extern {ext.extern}")
            elif isinstance(local, A.ValueSetDecl):
                refuse(local, "a parser value set")
            else:
                refuse(local, f"{type(local).__name__} in a control")
        return lines

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
            value = self.unsigned(self.ex(k.expr), kt)
            if self.types.scalar(kt)[0] > 64:
                if k.match_kind == "range":
                    refuse(k.expr, "a range match on more than 64 bits")
                # wide keys take two words, high first (binding.py splits entries alike)
                lines.append(f"{{ p4n_u128 _w = {value}; {key}[{j}] = (uint64_t)(_w >> 64); "
                             f"{key}[{j + 1}] = (uint64_t)_w; }}")
                j += 2
            else:
                lines.append(f"{key}[{j}] = {value};")
                j += 1
        entry = self.fresh("entry")
        lines.append(f"p4n_entry *{entry} = p4n_table_lookup(&c->sw->tables[{index}], {key});")
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
                                        entry_args=args)
            lines.append(f"case {i}: {code}; break;")
        lines.append("default: break;")
        lines.append("}")
        if info.implementation is not None:
            # As the Python back end: a hit in a profile's table has no action index of its
            # own (action_run matches no action), a miss runs the default action.
            lines.append(f"{entry}->hit ? (1u << 16) | 0xFFFFu : {entry}->action;")
        else:
            lines.append(f"(((uint32_t){entry}->hit) << 16) | {entry}->action;")
        return "({\n" + "\n".join(lines) + "\n})"

    def profile_choice(self, info, entry, index, lines) -> tuple[str, str]:
        """Lines resolving a hit in a profile's table to (action, args) variables: a member
        entry holds its member's action; a group entry its members, one chosen by the
        selector hash modulo the group size (an empty group runs the default action)."""
        spec = self._profiles[info.implementation.name]
        action, args = self.fresh("act"), self.fresh("args")
        default = f"c->sw->tables[{index}].default_entry"
        lines.append(f"uint32_t {action} = {entry}->action; const uint64_t *{args} = {entry}->args;")
        lines.append(f"if ({entry}->hit) {{")
        lines.append(f"uint64_t _n = {args}[0]; const uint64_t *_m = {args} + 1;")
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
                   f"goto {self.parser_reject}; }} }} while (0)"
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
        refuse(e, f"built-in method {b}")

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
        return f"do {{ {self.union_siblings_off(header)} " \
               f"{self.extract_into(e, ht, self.ex(header), vbits)}; }} while (0)"

    def extract_into(self, e, ht, h, vbits: str = "0") -> str:
        """Lines extracting header type `ht` into lvalue `h`; `vbits` is the varbit field's
        size in bits. Everything is checked first, so a failed extract consumes nothing."""
        fixed = sum(self.types.scalar(ft)[0] for _, ft in ht.fields
                    if not isinstance(strip(ft), T.VarbitType))
        varbit = next((strip(ft) for _, ft in ht.fields if isinstance(strip(ft), T.VarbitType)),
                      None)
        code = self.pc.error_code
        lines = ["uint64_t _vb = (uint64_t)(" + vbits + ");"] if varbit is not None else []
        if varbit is not None:
            lines += [f"if (_vb % 8) {{ c->parser_error = {code('ParserInvalidArgument', e)}; "
                      f"goto {self.parser_reject}; }}",
                      f"if (_vb > {varbit.max_width}) {{ c->parser_error = "
                      f"{code('HeaderTooShort', e)}; goto {self.parser_reject}; }}"]
        total = f"{fixed} + _vb" if varbit is not None else str(fixed)
        lines.append(f"if ((uint64_t)c->len * 8 - c->pos < {total}) {{ "
                     f"c->parser_error = {code('PacketTooShort', e)}; "
                     f"goto {self.parser_reject}; }}")
        offset = "c->pos"
        for name, ft in ht.fields:
            if isinstance(strip(ft), T.VarbitType):
                lines.append(f"({h}).f_{name}.len = (uint32_t)_vb; "
                             f"memset(({h}).f_{name}.data, 0, sizeof(({h}).f_{name}.data));")
                lines.append(f"for (uint32_t _b = 0; _b < _vb / 8; _b++) ({h}).f_{name}.data[_b] "
                             f"= (uint8_t)p4n_get_bits(c->data, {offset} + 8 * _b, 8);")
                offset = f"{offset} + (uint32_t)_vb"
                continue
            w = self.types.scalar(ft)[0]
            raw = f"p4n_get_bits{'128' if w > 64 else ''}(c->data, {offset}, {w})"
            lines.append(f"({h}).f_{name} = {self.from_unsigned(raw, ft)};")
            offset = f"{offset} + {w}"
        lines.append(f"({h}).valid = 1; c->pos += (uint32_t)({total});")
        return "do {\n" + "\n".join(lines) + "\n} while (0)"

    def lookahead(self, e):
        t = strip(e.resolved_type_args[0] if e.resolved_type_args else e.type)
        if isinstance(t, T.HeaderType):
            return self.lookahead_header(e, t)
        sc = self.types.scalar(t)
        if sc is None or sc[0] > 128:
            refuse(e, f"lookahead of {t}")
        width = sc[0]
        return (f"({{ if ((uint64_t)c->len * 8 - c->pos < {width}) {{ c->parser_error = "
                f"{self.pc.error_code('PacketTooShort', e)}; goto {self.parser_reject}; }} "
                f"{self.from_unsigned(f'p4n_get_bits128(c->data, c->pos, {width})' if width > 64 else f'p4n_get_bits(c->data, c->pos, {width})', t)}; }})")

    def lookahead_header(self, e, t) -> str:
        """`lookahead<H>()`: a valid H filled from the next bits, the position unchanged."""
        if any(isinstance(strip(ft), T.VarbitType) for _, ft in t.fields):
            refuse(e, f"lookahead of {t}, a header with a varbit field,")
        ct = self.types.ctype(t, e)
        width = sum(self.types.scalar(ft)[0] for _, ft in t.fields)
        tmp = self.fresh("la")
        lines = [f"if ((uint64_t)c->len * 8 - c->pos < {width}) {{ c->parser_error = "
                 f"{self.pc.error_code('PacketTooShort', e)}; goto {self.parser_reject}; }}",
                 f"{ct} {tmp} = {{0}};"]
        offset = 0
        for name, ft in t.fields:
            w = self.types.scalar(ft)[0]
            raw = f"p4n_get_bits{'128' if w > 64 else ''}(c->data, c->pos + {offset}, {w})"
            lines.append(f"{tmp}.f_{name} = {self.from_unsigned(raw, ft)};")
            offset += w
        lines += [f"{tmp}.valid = 1;", f"{tmp};"]
        return "({\n" + "\n".join(lines) + "\n})"

    def emit_value(self, value):
        return self.emit_src(self.ex(value), strip(value.type), value)

    def emit_src(self, src, t, node):
        if isinstance(t, T.HeaderType):
            lines = [f"if (({src}).valid) {{"]
            for name, ft in t.fields:
                if isinstance(strip(ft), T.VarbitType):
                    lines.append(f"for (uint32_t _b = 0; _b < ({src}).f_{name}.len / 8; _b++) "
                                 f"{{ p4n_put_bits(c->out, c->out_bits, 8, "
                                 f"({src}).f_{name}.data[_b]); c->out_bits += 8; }}")
                    continue
                w = self.types.scalar(ft)[0]
                lines.append(f"p4n_put_bits{'128' if w > 64 else ''}(c->out, c->out_bits, {w}, "
                             f"{self.unsigned(f'({src}).f_{name}', ft)}); c->out_bits += {w};")
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

    def _m_register_read(self, e, inst):
        r = self._register_index[inst.name]
        spec = self.registers[r]
        if spec.width > 64:
            refuse(e, f"a register of {spec.width}-bit values")
        index = self.ex(arg(e, 1))
        target = arg(e, 0)
        value = f"(_i < {spec.size or 0} ? " \
                f"{'(int64_t)' if spec.signed else ''}c->sw->registers[{r}].cells[_i] : 0)"
        return f"do {{ uint64_t _i = (uint64_t)({index}); {self.assign(target, value)} }} while (0)"

    def _m_register_write(self, e, inst):
        r = self._register_index[inst.name]
        spec = self.registers[r]
        if spec.width > 64:
            refuse(e, f"a register of {spec.width}-bit values")
        index, value = self.ex(arg(e, 0)), self.ex(arg(e, 1))
        return f"do {{ uint64_t _i = (uint64_t)({index}); uint64_t _v = (uint64_t)({value}); " \
               f"if (_i < {spec.size or 0}) c->sw->registers[{r}].cells[_i] = _v; }} while (0)"

    def _m_counter_count(self, e, inst):
        k = self._counter_index[inst.name]
        spec = self.counters[k]
        index = self.ex(arg(e, 0))
        return f"do {{ uint64_t _i = (uint64_t)({index}); if (_i < {spec.size or 0}) {{ " \
               f"c->sw->counters[{k}].packets[_i]++; c->sw->counters[{k}].bytes[_i] += c->plen; " \
               f"}} }} while (0)"

    def _m_direct_counter_count(self, e, inst):
        return None          # the table counts its hits, as bmv2 does

    def _m_meter_execute_meter(self, e, inst):
        m = self._meter_index[inst.name]
        spec = self.meters[m]
        cost = "c->plen" if spec.unit == "bytes" else "1"
        value = f"(_i < {spec.size or 0} ? " \
                f"p4n_meter_execute(&c->sw->meters[{m}].cells[_i], c->now_us, {cost}) : 0)"
        target = arg(e, 1)
        return f"do {{ uint64_t _i = (uint64_t)({self.ex(arg(e, 0))}); " \
               f"{self.assign(target, self.wrap(value, target.type))} }} while (0)"

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
            fn = "p4n_fields_add128" if width > 64 else "p4n_fields_add"
            return [f"{fn}(F, {self.unsigned(self.ex(data), t)}, {width});"]
        if isinstance(t, (T.StructLikeType, T.StackType)):
            src = self.ex(data)
            return self._composite_fields(src, t, data)
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
            fn = "p4n_fields_add128" if width > 64 else "p4n_fields_add"
            lines.append(f"{fn}(F, {self.unsigned(f'({src}).f_{name}', ft)}, {width});")
        return lines

    def hash_of(self, algo, data, node, payload=False) -> str:
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
        sm = self.ex(arg(e, 0)) if e.args else None
        if sm is None:
            refuse(e, "mark_to_drop() without standard_metadata")
        return f"do {{ ({sm}).f_egress_spec = 511; ({sm}).f_mcast_grp = 0; }} while (0)"

    def _f_hash(self, e):
        result, algo, base, data, maximum = (arg(e, i) for i in range(5))
        h = self.hash_of(self._algo(e, algo), data, e)
        value = f"p4n_hash_value({h}, (uint64_t)({self.ex(base)}), (uint64_t)({self.ex(maximum)}))"
        return "do { " + self.assign(result, self.wrap(value, result.type)) + " } while (0)"

    def _checksum(self, e, verify, payload):
        cond, data, checksum, algo = (arg(e, i) for i in range(4))
        computed = self.wrap(self.hash_of(self._algo(e, algo), data, e, payload), checksum.type)
        if verify:
            action = f"if (({computed}) != ({self.ex(checksum)})) " \
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

    def _f_digest(self, e):
        data = arg(e, 1)
        name = self.pc.digest_name(e, data)
        t = strip(data.type)
        if isinstance(data, A.ListExpression):
            values = [(self.ex(x), x.type) for x in data.elements]
        elif isinstance(data, A.StructExpression):
            values = [(self.ex(f.value), f.value.type) for f in data.fields]
        elif isinstance(t, T.StructType):
            src = self.ex(data)
            values = [(f"({src}).f_{n}", ft) for n, ft in t.fields]
        else:
            values = [(self.ex(data), t)]
        for _, vt in values:
            if self.types.scalar(vt) is None or self.wide(vt):
                refuse(e, "a digest with a composite or wider than 64-bit field")
        lines = [f"uint64_t _d[{max(1, len(values))}];"]
        lines += [f"_d[{i}] = {self.unsigned(v, vt)};" for i, (v, vt) in enumerate(values)]
        lines.append(f"p4n_queue_msg(c->sw, P4N_MSG_DIGEST, {self.digest_names.index(name)}, "
                     f"(const uint8_t *)_d, {8 * len(values)});")
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
        self.used_field_lists.add(index)
        return index

    def _f_resubmit_preserving_field_list(self, e):
        return f"c->resubmit = {self.field_list_index(e, arg(e, 0))}"

    def _f_recirculate_preserving_field_list(self, e):
        return f"c->recirculate = {self.field_list_index(e, arg(e, 0))}"

    def data_field_list(self, e, data) -> int:
        """A field list for the old-style calls' data: fields of the user metadata (or all
        of it); -1 for none. The same lists as the Python back end's, made here."""
        meta_t = strip(self.pipeline.metadata_type)
        if isinstance(data, A.ListExpression):
            elements = data.elements
        elif isinstance(data, A.StructExpression):
            elements = [f.value for f in data.fields]
        else:
            elements = [data]
        attrs = []
        for x in elements:
            if strip(x.type) == meta_t and isinstance(x, A.PathExpression):
                attrs += [f"f_{name}" for name, _ in meta_t.fields]
            elif isinstance(x, A.MemberExpression) and strip(x.expr.type) == meta_t and \
                    isinstance(x.expr, A.PathExpression):
                attrs.append(f"f_{x.member}")
            else:
                refuse(x, "preserving something other than user metadata fields")
        return self.pc.synthetic_field_list(attrs) if attrs else -1

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
        if self.wide(result.type):
            refuse(e, "random() of more than 64 bits")
        value = f"p4n_random(c->sw, (uint64_t)({self.ex(arg(e, 1))}), " \
                f"(uint64_t)({self.ex(arg(e, 2))}))"
        return "do { " + self.assign(result, self.wrap(value, result.type)) + " } while (0)"

    def _f_truncate(self, e):
        return f"c->truncate = (uint32_t)({self.ex(arg(e, 0))})"

    def _assertion(self, e, what):
        index = len(self.assertions)
        self.assertions.append(f"{what} failed at {e.loc}")
        return f"do {{ if (!({self.ex(arg(e, 0))})) {{ c->sw->assertion = {index}; " \
               f"c->failed = 1; goto {self.stage_exit}; }} }} while (0)"

    def _f_assert(self, e):
        return self._assertion(e, "assert")

    def _f_assume(self, e):
        return self._assertion(e, "assume")

    def _f_log_msg(self, e):
        return None              # trace output only: nothing to do without a trace

    # -- parsers ---------------------------------------------------------------------------------

    def parser_body(self, inst) -> list[str]:
        decl = inst.decl
        states = {s.name: self.fresh("state_" + s.name) for s in decl.states}
        if "start" not in states:
            refuse(decl, "a parser without a start state")
        accept, reject, nomatch = self.fresh("accept"), self.fresh("reject"), \
            self.fresh("nomatch")
        states["accept"], states["reject"] = accept, reject
        self.parser_reject = reject
        lines = self.control_locals_parser(inst)
        lines.append(f"goto {states['start']};")
        for s in decl.states:
            lines.append(f"{states[s.name]}: ;")
            lines += self.statements(s.statements)
            lines += self.transition(s, states, nomatch)
        code = self.pc.error_code("NoMatch", decl)
        lines += [f"{nomatch}: c->parser_error = {code}; goto {reject};",
                  f"{reject}: if (c->parser_error >= 0) "
                  f"({self.sm_param}).f_parser_error = (uint64_t)c->parser_error;",
                  f"{accept}: ;"]
        return lines

    def control_locals_parser(self, inst) -> list[str]:
        lines = []
        for local in inst.decl.locals:
            if isinstance(local, A.VariableDecl):
                lines += self.st_VariableDecl(local)
            elif isinstance(local, A.ValueSetDecl):
                pass
            elif isinstance(local, A.Instantiation):
                refuse(local, "a parser sub-instance or extern")
        return lines

    def transition(self, state, states, nomatch) -> list[str]:
        if state.select is None:
            return [f"goto {states[state.next_state or 'reject']};"]
        sel = state.select
        lines, keys = [], []
        for e in sel.exprs:
            t = strip(e.type)
            if self.types.scalar(t) is None:
                refuse(e, f"a select on {t}")
            k = self.fresh("k")
            lines.append(f"{self.types.ctype(t, e)} {k} = {self.ex(e)};")
            keys.append(k)
        for case in sel.cases:
            cond = self.case_condition(case.keyset, keys, sel)
            lines.append(f"if ({cond}) goto {states[case.next_state]};")
        lines.append(f"goto {nomatch};")
        return ["{"] + lines + ["}"]

    def value_set(self, decl, keys, types) -> str:
        block = self.block
        prefix = block.name + "." if block is not None else ""
        k = self._value_set_index[prefix + decl.name]
        if any(self.wide(t) for t in types):
            refuse(decl, "a value set of more than 64-bit values")
        words = ", ".join(self.unsigned(key, t) for key, t in zip(keys, types))
        return f"({{ uint64_t _vk[] = {{ {words} }}; p4n_value_set_match(" \
               f"&c->sw->value_sets[{k}], _vk, {len(keys)}); }})"

    def case_condition(self, keyset, keys, sel) -> str:
        types = [strip(e.type) for e in sel.exprs]
        if isinstance(keyset, (A.DefaultExpression, A.DontCareExpression)):
            return "1"
        if isinstance(keyset, A.ListExpression) and len(keys) > 1:
            parts = keyset.elements
        else:
            parts = [keyset]
            if len(keys) > 1 and isinstance(keyset, A.PathExpression) and \
                    isinstance(keyset.decl, A.ValueSetDecl):
                return self.value_set(keyset.decl, keys, types)
        conds = []
        for part, key, kt in zip(parts, keys, types):
            if isinstance(part, (A.DefaultExpression, A.DontCareExpression)):
                continue
            if isinstance(part, A.PathExpression) and isinstance(part.decl, A.ValueSetDecl):
                conds.append(self.value_set(part.decl, [key], [kt]))
                continue
            if isinstance(strip(part.type), T.SetType) and not isinstance(
                    part, (A.MaskExpression, A.RangeExpression)):
                refuse(part, "a set keyset")
            if isinstance(part, A.MaskExpression):
                mask = self.ex(part.mask)
                conds.append(f"(({key}) & ({mask})) == (({self.ex(part.value)}) & ({mask}))")
            elif isinstance(part, A.RangeExpression):
                conds.append(f"({self.ex(part.lo)}) <= ({key}) && ({key}) <= ({self.ex(part.hi)})")
            else:
                conds.append(f"({key}) == ({self.ex(part)})")
        return " && ".join(conds) or "1"

    # -- stages ----------------------------------------------------------------------------------

    def stage(self, name, inst, params: list[tuple[str, object]]) -> str:
        """One stage function: the block's parameters bound to the stage's pointers."""
        decl = inst.decl
        c_params = ["p4n_ctx *c"]
        binds = []
        self.sm_param = None
        for (cname, ctype), p in zip(params, decl.params):
            if ctype is None:              # packet_in / packet_out: the context has them
                binds.append((p, "(*packet_unused)"))
                continue
            c_params.append(f"{ctype} *{cname}")
            binds.append((p, f"(*{cname})"))
            if cname == "sm":
                self.sm_param = "(*sm)"
        extra = params[len(decl.params):]
        for cname, ctype in extra:
            c_params.append(f"{ctype} *{cname}")
            if cname == "sm":
                self.sm_param = "(*sm)"
        self.stage_exit = self.fresh("exit")
        self.parser_reject = None
        self.in_parser = isinstance(decl, A.ParserDecl)
        with self.bound(binds), self.in_block(inst):
            if isinstance(decl, A.ParserDecl):
                body = self.parser_body(inst)
            else:
                frame = Frame([], self.fresh("ret"), None)
                self.frames.append(frame)
                try:
                    body = self.control_locals(inst) + self.statement(decl.body) + \
                        [f"{frame.return_label}: ;"]
                finally:
                    self.frames.pop()
        lines = [f"static void {name}({', '.join(c_params)}) {{"] + body + \
            [f"{self.stage_exit}: ;", "}"]
        return "\n".join(lines)

    def preserve_function(self) -> str:
        lines = ["static void p4n_preserve(int index, P4N_META_T *dst, const P4N_META_T *src) {",
                 "switch (index) {"]
        for index, attrs in sorted(self.pc.field_lists().items()):
            lines.append(f"case {index}:")
            lines += [f"dst->{attr} = src->{attr};" for attr in attrs]
            lines.append("break;")
        lines += ["default: break;", "}", "}"]
        return "\n".join(lines)

    def emit(self) -> str:
        p = self.pipeline
        self.used_field_lists = set()
        hdr_t = self.types.ctype(p.headers_type, p.parser.decl)
        meta_t = self.types.ctype(p.metadata_type, p.parser.decl)
        sm_type = strip(param_type(p.ingress.decl.params[2]))
        sm_t = self.types.ctype(sm_type, p.ingress.decl)
        for needed in ("ingress_port", "egress_spec", "egress_port", "instance_type",
                       "packet_length", "mcast_grp", "egress_rid", "parser_error",
                       "checksum_error", "ingress_global_timestamp",
                       "egress_global_timestamp", "enq_timestamp"):
            if needed not in dict(sm_type.fields):
                refuse(p.ingress.decl, f"a standard_metadata_t without {needed}")
        H, M, S = ("hdr", hdr_t), ("meta", meta_t), ("sm", sm_t)
        stages = [
            self.stage("p4n_stage_parser", p.parser, [("pkt", None), H, M, S]),
            self.stage("p4n_stage_verify", p.verify_checksum, [H, M, S]),
            self.stage("p4n_stage_ingress", p.ingress, [H, M, S]),
            self.stage("p4n_stage_egress", p.egress, [H, M, S]),
            self.stage("p4n_stage_compute", p.compute_checksum, [H, M, S]),
            self.stage("p4n_stage_deparser", p.deparser, [("pkt", None), H]),
        ]
        parts = ["#include \"p4n.h\"", "#include <stdlib.h>", "",
                 self.types.source(), "",
                 f"#define P4N_HDR_T {hdr_t}", f"#define P4N_META_T {meta_t}",
                 f"#define P4N_SM_T {sm_t}", "", self.preserve_function(), ""] + stages + \
            ["#include \"tm.inc\"", self.layout_function()]
        return "\n\n".join(parts) + "\n"

    def layout_function(self) -> str:
        """The texts of the assert/assume calls, for the error the binding raises."""
        texts = ", ".join('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'
                          for t in self.assertions) or '""'
        return (f"static const char *const p4n_assertion_texts[] = {{ {texts} }};\n"
                f"const char *p4n_assertion_text(int i) {{ return i >= 0 && i < "
                f"{len(self.assertions)} ? p4n_assertion_texts[i] : \"\"; }}")


def emit_c(program: A.Program, compiled) -> str:
    """The C source of `program`, whose Python compilation is `compiled` (its tables and
    externs are the ones the C code indexes); Unsupported for what the C back end lacks."""
    return CEmitter(program, compiled).emit()
