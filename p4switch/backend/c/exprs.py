"""Values and expressions for the C emitter (emit.py): P4 expressions to C expressions.

Scalars keep the Python back end's ranges (exprs.py): every result is wrapped into its type
where it is computed; 65- to 128-bit values use unsigned __int128 (p4n_u128)."""

from __future__ import annotations

from ...frontend import ast as A
from ...frontend import types as T
from ..body import param_type
from ..exprs import member_kind, strip
from .c_types import _int, _wide, refuse


# A stack's indexes and a table's apply() result (hit bit 16, action index in the low 16
# bits), as C source templates for the stack or result.
# Saturating + and - of values up to this width are done in 64 bits (p4n_values.h's
# p4n_usat64, p4n_ssat64): two such values' sum or difference fits in an int64_t.
# tests/p4/saturating_widths.p4 checks 32, 62, 63 and 64.
SAT64_WIDTH = 62
_STACK_INDEXES = {"lastIndex": "((uint64_t)((({0}).nextIndex - 1u) & 0xFFFFFFFFu))",
                  "nextIndex": "((uint64_t)({0}).nextIndex)"}
_RESULT_MEMBERS = {"hit": "((({0}) >> 16) & 1)", "miss": "(!((({0}) >> 16) & 1))",
                   "action_run": "(({0}) & 0xFFFF)"}


class ExpressionMixin:
    """Values, expressions, lvalues and assignment of `CEmitter`."""

    # -- values -------------------------------------------------------------------------------

    def wrap(self, src: str, t) -> str:
        sc = self.types.scalar(t)
        if sc is None:
            return src
        width, signed = sc
        if isinstance(strip(t), T.BoolType):
            return f"(({src}) != 0)"
        if self.big(t):         # an integer (uint64_t or p4n_u128) into a p4n_big
            return f"p4n_big_u128((p4n_u128)({src}), {width})"
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
        if self.big(t):
            return src
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
        if self.big(t):
            return src
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
                return self.big_literal(value, t.width)
            if t.width > 64:
                return _wide(value)
            return _int(value) if not t.signed else f"((int64_t){_int(value)})"
        if isinstance(value, int):
            return _int(value)
        refuse(None, f"the constant {value!r}")

    # -- expressions ----------------------------------------------------------------------------

    _CALLS_WITH_EFFECTS = ("action", "function", "extern_function", "extern_method",
                           "table_apply", "block_apply")

    def has_side_effects(self, e) -> bool:
        """Whether computing `e` may change state (it calls something)."""
        return any(isinstance(n, A.MethodCallExpression) and
                   n.call_kind in self._CALLS_WITH_EFFECTS for n in A.iter_nodes(e))

    # -- evaluation order ---------------------------------------------------------------------
    #
    # C leaves the order of operands open; the Python back end (the reference) runs some calls
    # as statements before the expression they are in ("hoists" them): calls of functions
    # with out/inout parameters and table applies. The operands around them are read after,
    # when the expression itself is computed. So here too: while an expression is written,
    # such calls go into `self.hoist` as declarations of temporaries, in the order the Python
    # back end writes them, and the expression becomes `({ temporaries; expression; })`.
    # Short-circuit and conditional operands get scopes of their own (run only when needed).

    def rooted(self, compute, e) -> str:
        """`compute()` (C source of `e`), with what it hoists run first; nested calls join
        the enclosing expression's hoisted statements."""
        if self.hoist is not None:
            return compute()
        self.hoist = []
        try:
            src = compute()
            lines = self.hoist
        finally:
            self.hoist = None
        if not lines:
            return src
        if self.is_lvalue(e):
            return f"(*({{ {' '.join(lines)} &({src}); }}))"
        return f"({{ {' '.join(lines)} {src}; }})"

    @staticmethod
    def is_lvalue(e) -> bool:
        while isinstance(e, (A.MemberExpression, A.IndexExpression)):
            e = e.expr
        return isinstance(e, A.PathExpression)

    def scoped(self, compute) -> tuple[list[str], str]:
        """(hoisted statements, C source) of a conditionally evaluated operand."""
        saved, self.hoist = self.hoist, []
        try:
            src = compute()
            return self.hoist, src
        finally:
            self.hoist = saved

    def hoisted_by_python(self, e) -> bool:
        """Whether the Python back end runs call `e` as a statement before its expression."""
        if e.call_kind == "table_apply":
            return True
        return e.call_kind == "function" and any(
            p.direction in ("out", "inout") for p, a in e.param_args if a is not None)

    def ex(self, e) -> str:
        return self.rooted(lambda: self.ex_unrooted(e), e)

    def ex_unrooted(self, e) -> str:
        if id(e) in self.evaluated:
            return self.evaluated[id(e)]
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
        kind, base_t = member_kind(e)
        if kind == "constant":
            return _int(self.enum_value(t, e.member, e))
        if kind == "field":
            return f"({self.ex(e.expr)}).f_{e.member}"
        if kind == "stack":
            if e.member == "size":      # a constant: the stack itself is not read
                return _int(base_t.size)
            stack = self.ex(e.expr)
            if e.member == "next":
                return self.stack_element(stack, base_t, f"({stack}).nextIndex", e)
            if e.member == "last":
                return self.stack_element(stack, base_t, f"(({stack}).nextIndex - 1u)", e,
                                          last=True)
            if e.member in _STACK_INDEXES:
                return _STACK_INDEXES[e.member].format(stack)
        if kind == "result":
            r = self.ex(e.expr)
            if e.member in _RESULT_MEMBERS:
                return _RESULT_MEMBERS[e.member].format(r)
        refuse(e, f"member .{e.member} of {base_t}")

    def stack_error(self) -> str:
        """What a stack index out of range does: a parser error in a parser (the packet goes
        on), the packet dropped elsewhere (as the Python back end's ParserException)."""
        if self.in_parser:
            code = self.pc.error_code("StackOutOfBounds", None)
            return f"c->parser_error = {code}; goto {self.parser_reject};"
        return f"c->failed = 1; goto {self.stage_end};"

    def stack_element(self, stack, t, index, node, last=False) -> str:
        """`stack.next` / `stack.last`: the element, or the stack error."""
        element = self.types.ctype(t.element, node)
        bad = f"({stack}).nextIndex == 0" if last else f"({stack}).nextIndex >= {t.size}"
        return f"(*({{ if ({bad}) {{ {self.stack_error()} }} " \
               f"({element} *)&({stack}).elems[{index}]; }}))"

    def ex_IndexExpression(self, e, t):
        base_t = strip(e.expr.type)
        if isinstance(base_t, T.TupleType) and e.index.const_value is not None:
            return f"({self.ex(e.expr)}).f_{e.index.const_value}"
        if not isinstance(base_t, T.StackType):
            refuse(e, f"indexing a value of type {base_t}")
        base = self.ex(e.expr)
        index = e.index.const_value
        if index is not None and 0 <= index < base_t.size:
            return f"({base}).elems[{index}]"
        element = self.types.ctype(base_t.element, e)
        i = self.index_of(e.index)
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
        return self.slice_of(self.ex(e.expr), strip(e.expr.type), hi, lo)

    def ex_UnaryExpression(self, e, t):
        a = self.ex(e.operand)
        if e.op == "!":
            return f"(!({a}))"
        if e.op in ("~", "-") and self.big(t):
            fn = "p4n_big_not" if e.op == "~" else "p4n_big_neg"
            return f"{fn}({a}, {self.width(t)})"
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

    def operands_left_first(self, e) -> tuple[str, str]:
        """Sources of a binary expression's operands, the left one read before what the right
        one hoists (as the Python back end stores it, P4's left-to-right order)."""
        a = self.ex(e.left)
        at = len(self.hoist) if self.hoist is not None else 0
        b = self.ex(e.right)
        if self.hoist is not None and len(self.hoist) > at and e.left.const_value is None:
            tmp = self.fresh("l")
            self.hoist.insert(at, f"{self.types.ctype(strip(e.left.type), e.left)} {tmp} = {a};")
            a = tmp
        return a, b

    def ex_BinaryExpression(self, e, t):
        op = e.op
        if op in ("&&", "||"):
            a = self.ex(e.left)
            lines, b = self.scoped(lambda: self.ex(e.right))
            if not lines:
                return f"(({a}) {op} ({b}))"
            tmp = self.fresh("c")
            self.hoist.append(f"uint8_t {tmp} = ({a}) {op} ({{ {' '.join(lines)} ({b}); }});")
            return tmp
        if op in ("==", "!=") and self.is_composite(strip(e.left.type)):
            lt = strip(e.left.type)
            a = self.value_as(e.left, lt)
            b = self.value_as(e.right, lt)
            ct = self.types.ctype(lt, e)
            same = self.equal_src("_a", "_b", lt, e)
            test = f"({{ {ct} _a = {a}; {ct} _b = {b}; {same}; }})"
            return test if op == "==" else f"(!{test})"
        a, b = self.operands_left_first(e)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return self.compare(op, a, b, strip(e.left.type))
        sc = self.types.scalar(t) if t is not None else None
        if sc is None:
            refuse(e, f"operator {op} on {t}")
        width, signed = sc
        right_t = strip(e.right.type)
        if op == "++" and self.big(t):
            return self.concat(a, strip(e.left.type), b, right_t, t)
        if self.big(t):
            return self.big_binary(op, a, b, t, e, right_t)
        W = self.word(t)
        if op in ("+", "-", "*"):
            return self.wrap(f"({W})({a}) {op} ({W})({b})", t)
        if op in ("/", "%"):
            if width > 64:
                if signed:       # the front end forbids signed division: nothing runs this
                    refuse(e, f"{op} of {width}-bit signed values")
                return self.wrap(f"p4n_u{'div' if op == '/' else 'mod'}128({a}, {b})", t)
            fn = {("/", False): "p4n_udiv", ("%", False): "p4n_umod",
                  ("/", True): "p4n_sdiv", ("%", True): "p4n_smod"}[op, signed]
            return self.wrap(f"{fn}({a}, {b})", t)
        if op in ("&", "|", "^"):
            return f"(({a}) {op} ({b}))"
        if op in ("|+|", "|-|"):
            if width > 64:     # through p4n_big, which has room for the carry
                self.types.note_width(width + 1)
                sub = int(op == "|-|")
                if signed:
                    return f"p4n_sext128(p4n_big_lo128(p4n_big_ssat(p4n_big_s128({a}, {width}), " \
                           f"p4n_big_s128({b}, {width}), {sub}, {width})), {width})"
                return f"p4n_big_lo128(p4n_big_usat(p4n_big_u128({a}, {width}), " \
                       f"p4n_big_u128({b}, {width}), {sub}, {width}))"
            cop = "+" if op == "|+|" else "-"
            fn = "p4n_ssat" if signed else "p4n_usat"
            if width <= SAT64_WIDTH:         # the result before saturation fits in 64 bits
                return f"{fn}64((int64_t)({a}) {cop} (int64_t)({b}), {width})"
            cast = "(__int128)(int64_t)" if signed else "(__int128)(uint64_t)"
            return f"{fn}({cast}({a}) {cop} {cast}({b}), {width})"
        n = self.shift_amount(b, right_t if self.types.scalar(right_t) else None)
        if op == "<<":
            if width > 64:
                fn = "p4n_sshl128" if signed else "p4n_ushl128"
                return f"{fn}({a}, (p4n_u128){n}, {width})"
            if signed:
                return f"p4n_sshl({a}, {n}, {width})"
            return f"p4n_ushl({a}, {n}, {width})"
        if op == ">>":
            if width > 64:
                fn = "p4n_sshr128" if signed else "p4n_ushr128"
                return f"{fn}({a}, (p4n_u128){n})"
            return f"p4n_sshr({a}, {n})" if signed else f"p4n_ushr({a}, {n})"
        if op == "++":
            lt, rt = strip(e.left.type), strip(e.right.type)
            rw = self.types.scalar(rt)[0]
            joined = f"(((({W}){self.unsigned(a, lt)}) << {rw}) | (({W}){self.unsigned(b, rt)}))"
            return self.from_unsigned(joined, t)
        refuse(e, f"operator {op}")

    def equal_src(self, a: str, b: str, t, node) -> str:
        """Whether composite values `a` and `b` of type `t` are equal, as the Python back
        end's __eq__: headers by validity and, when valid, their fields; structs and unions
        field by field; stacks element by element."""
        t = strip(t)
        if isinstance(t, T.StackType):
            return " && ".join(self.equal_src(f"({a}).elems[{i}]", f"({b}).elems[{i}]",
                                              t.element, node) for i in range(t.size)) or "1"
        if isinstance(t, T.VarbitType):
            return f"(({a}).len == ({b}).len && !memcmp(({a}).data, ({b}).data, " \
                   f"({a}).len / 8))"
        if self.types.scalar(t) is not None:
            return self.compare("==", a, b, t)
        if isinstance(t, T.TupleType):
            return " && ".join(self.equal_src(f"({a}).f_{i}", f"({b}).f_{i}", et, node)
                               for i, et in enumerate(t.elements)) or "1"
        fields = " && ".join(self.equal_src(f"({a}).f_{n}", f"({b}).f_{n}", ft, node)
                             for n, ft in t.fields) or "1"
        if isinstance(t, T.HeaderType):
            return f"(({a}).valid == ({b}).valid && (!({a}).valid || ({fields})))"
        return f"({fields})"

    def ex_TernaryExpression(self, e, t):
        cond = self.ex(e.cond)
        then_lines, then = self.scoped(lambda: self.value_as(e.then, t))
        else_lines, other = self.scoped(lambda: self.value_as(e.else_, t))
        if not then_lines and not else_lines:
            return f"(({cond}) ? ({then}) : ({other}))"
        tmp = self.fresh("c")
        self.hoist.append(f"{self.types.ctype(t, e)} {tmp}; if ({cond}) {{ "
                          f"{' '.join(then_lines)} {tmp} = {then}; }} else {{ "
                          f"{' '.join(else_lines)} {tmp} = {other}; }}")
        return tmp

    def ex_CastExpression(self, e, t):
        src_t = strip(e.expr.type)
        if isinstance(e.expr, (A.ListExpression, A.StructExpression)):
            return self.make_struct(e.expr, t)
        a = self.ex(e.expr)
        if isinstance(t, T.BoolType):
            return a if isinstance(src_t, T.BoolType) else f"(({a}) != 0)"
        if isinstance(src_t, T.IntType):
            if self.big(t):
                return f"p4n_big_s128((p4n_s128)({a}), {self.width(t)})"
            return self.wrap(a, t)
        if isinstance(t, T.BitsType) or isinstance(t, T.EnumType) and t.underlying is not None:
            target = t.underlying if isinstance(t, T.EnumType) else t
            if isinstance(src_t, T.BoolType) and not self.big(target):
                return f"((uint64_t)({a}))"
            if src_t == t:
                return a
            src_sc = self.types.scalar(src_t)
            if src_sc is None:
                refuse(e, f"a cast from {src_t}")
            return self.convert(a, src_t, target)
        if src_t == t or isinstance(t, (T.ErrorType, T.EnumType, T.StructLikeType,
                                        T.TupleType, T.StackType)):
            return a
        refuse(e, f"a cast from {src_t} to {t}")

    def ex_MethodCallExpression(self, e, t):
        src = self.call(e, want_value=True)
        if src is None:
            refuse(e, "a call without a value used as a value")
        if self.hoisted_by_python(e):
            tmp = self.fresh("call")
            ct = "uint32_t" if e.call_kind == "table_apply" else self.types.ctype(t, e)
            self.hoist.append(f"{ct} {tmp} = {src};")
            return tmp
        return src

    def ex_ListExpression(self, e, t):
        return self.make_struct(e, t)

    def ex_StructExpression(self, e, t):
        if not isinstance(t, T.StructLikeType):
            refuse(e, "a struct expression without a struct type")
        return self.make_struct(e, t)

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
            if self.big(base_t):
                part = self.to_big(src, strip(lhs.type), width)
                merged = f"p4n_big_set_slice({self.ex(lhs.expr)}, {part}, {lo}, " \
                         f"{hi - lo + 1}, {width})"
                return self.assign(lhs.expr, merged)
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
        return self.rooted(lambda: self.value_as_unrooted(e, target_t), e)

    def value_as_unrooted(self, e, target_t) -> str:
        if isinstance(e, A.InvalidHeaderExpression):
            return f"(({self.types.ctype(target_t, e)}){{0}})"
        if isinstance(e, (A.ListExpression, A.StructExpression)):
            return self.make_struct(e, strip(target_t))
        return self.ex(e)

    def make_struct(self, e, t) -> str:
        """A header, struct or tuple value from a list or struct expression."""
        t = strip(t)
        if isinstance(t, T.TupleType):
            fields = [(str(i), et) for i, et in enumerate(t.elements)]
        elif isinstance(t, (T.HeaderType, T.StructType)):
            fields = t.fields
        else:
            refuse(e, f"a list expression of type {t}")
        if isinstance(e, A.ListExpression):
            values = e.elements
        else:
            by_name = {f.name: f.value for f in e.fields}
            values = [by_name.get(name) for name, _ in fields]
        if len(values) != len(fields) or any(v is None for v in values):
            refuse(e, "a struct expression that does not give every field")
        # C leaves the order of initializers open; P4 evaluates left to right: the values
        # before the last one with side effects are computed first, in order.
        last_effect = max((i for i, v in enumerate(values) if self.has_side_effects(v)),
                          default=-1)
        sources = []
        for i, ((name, ft), v) in enumerate(zip(fields, values)):
            src = self.value_as(v, ft)
            if i < last_effect:
                tmp = self.fresh("el")
                self.hoist.append(f"{self.types.ctype(ft, v)} {tmp} = {src};")
                src = tmp
            sources.append(f".f_{name} = {src}")
        if isinstance(t, T.HeaderType):
            sources.insert(0, ".valid = 1")
        return f"(({self.types.ctype(t, e)}){{{', '.join(sources)}}})"
