"""Expressions: P4 expression nodes to Python expression source.

Values: bit<W> is an int in [0, 2^W), int<W> an int in the two's complement range, bool a
bool, error / plain enums their index, serializable enums their value, varbit a
(bit_length, value) tuple, headers/structs/unions objects of the generated classes. Every
arithmetic result is wrapped back into its type's range right where it is computed.
"""

from __future__ import annotations

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.errors import CompileError
from .pytypes import field_attr, scalar_width, to_unsigned_src, from_unsigned_src


def strip(t):
    return T.strip_newtype(t)


def wrap_src(src: str, t) -> str:
    """`src` reduced into the range of integer type `t` (no-op for the infinite int)."""
    t = strip(t)
    if isinstance(t, T.BitsType):
        if t.signed:
            half = 1 << (t.width - 1)
            return f"(((({src}) + {half}) & {t.mask}) - {half})"
        return f"(({src}) & {t.mask})"
    return src


def literal(value, t) -> str:
    t = strip(t)
    if isinstance(value, bool) or isinstance(t, T.BoolType):
        return "True" if value else "False"
    if isinstance(value, str):
        return repr(value)
    if isinstance(t, T.BitsType):
        return repr(t.wrap(int(value)))
    return repr(value)


def source_text(e) -> str:
    """Source-like text of an lvalue (`hdr.s[2].f`), for messages and traces."""
    if isinstance(e, A.PathExpression):
        return e.name
    if isinstance(e, A.MemberExpression):
        return f"{source_text(e.expr)}.{e.member}"
    if isinstance(e, A.IndexExpression):
        index = e.index.const_value
        return f"{source_text(e.expr)}[{index if index is not None else '?'}]"
    return type(e).__name__


def is_composite(t) -> bool:
    return isinstance(strip(t), (T.StructLikeType, T.StackType))


def member_kind(e) -> tuple:
    """(what member expression `e` reads, the type of its base): "constant" (an enum, error
    or match_kind member), "field" (of a struct, header or union), "stack" (a header stack's
    next, last, size, ...), "result" (of a table's apply()) or None."""
    base_t = strip(e.expr.type) if e.expr.type is not None else None
    if isinstance(e.decl, A.EnumMember) or isinstance(e.expr, A.PathExpression) and \
            isinstance(e.expr.decl, (A.EnumDecl, A.ErrorDecl, A.MatchKindDecl)):
        return "constant", base_t
    if isinstance(base_t, T.StructLikeType):
        return "field", base_t
    if isinstance(base_t, T.StackType):
        return "stack", base_t
    if isinstance(base_t, T.TableResultType) or isinstance(e.expr, A.MethodCallExpression) \
            and e.expr.call_kind == "table_apply":
        return "result", base_t
    return None, base_t


# The header stack members the runtime's stack object implements, and a table's apply()
# result's hit/miss, as Python source templates for the stack or result.
_STACK_MEMBERS = {"next": "{}.next()", "last": "{}.last()", "lastIndex": "{}.lastIndex",
                  "nextIndex": "{}.nextIndex"}
_RESULT_MEMBERS = {"hit": "{}.hit", "miss": "(not {}.hit)"}


class ExpressionMixin:
    """Expression compilation for `FunctionCompiler` (see body.py)."""

    # -- entry points --------------------------------------------------------------------

    def ex(self, e) -> str:
        """Python source computing expression `e`."""
        if id(e) in self.evaluated:
            return self.evaluated[id(e)]
        t = strip(e.type)
        cv = e.const_value
        if cv is not None and isinstance(t, (T.BitsType, T.IntType, T.BoolType, T.StringType)) \
                and not isinstance(e, A.MethodCallExpression):
            return literal(cv, t)
        if cv is not None and isinstance(t, T.EnumType) and isinstance(cv, int) \
                and t.underlying is not None:
            return repr(cv)
        method = getattr(self, "ex_" + type(e).__name__, None)
        if method is None:
            raise CompileError(e.loc, f"expression {type(e).__name__} is not supported")
        return method(e, t)

    def ex_as(self, e, target) -> str:
        """Like `ex`, building a struct/header when `e` is a list or struct expression
        whose value must have type `target`."""
        target = strip(target)
        if isinstance(e, (A.ListExpression, A.StructExpression)) \
                and isinstance(target, T.StructLikeType):
            return self.make_struct(e, target)
        if isinstance(e, A.InvalidHeaderExpression) and isinstance(target, T.StructLikeType):
            return self.pc.types.default_src(target)
        return self.ex(e)

    def ex_value(self, e, target=None) -> str:
        """A value to store: composite lvalues are copied (P4 assignment copies)."""
        src = self.ex_as(e, target if target is not None else e.type)
        if is_composite(e.type) and isinstance(e, (A.PathExpression, A.MemberExpression,
                                                    A.IndexExpression)):
            return f"{src}.copy()"
        return src

    def make_struct(self, e, target) -> str:
        cls = self.pc.types.class_name(target)
        if isinstance(e, A.ListExpression):
            values = e.elements
            if len(values) != len(target.fields):
                raise CompileError(e.loc, f"{len(values)} values for {target} with "
                                          f"{len(target.fields)} fields")
        else:
            by_name = {f.name: f.value for f in e.fields}
            values = [by_name.get(name) for name, _ in target.fields]
            if any(v is None for v in values):
                raise CompileError(e.loc, f"struct expression does not give every field of "
                                          f"{target}")
        args = self.values_in_order(values, [ft for _, ft in target.fields])
        return f"{cls}._make({', '.join(args)})"

    _CALLS_WITH_EFFECTS = ("action", "function", "extern_function", "extern_method",
                           "table_apply", "block_apply")

    def has_side_effects(self, e) -> bool:
        """Whether computing `e` may change state (it calls something)."""
        return any(isinstance(n, A.MethodCallExpression) and
                   n.call_kind in self._CALLS_WITH_EFFECTS for n in A.iter_nodes(e))

    def values_in_order(self, elements, types) -> list[str]:
        """Values of list/struct elements evaluated left to right: an element followed by
        one with side effects is stored before that one runs (its statements come first)."""
        last_effect = max((i for i, x in enumerate(elements) if self.has_side_effects(x)),
                          default=-1)
        values = []
        for i, (x, xt) in enumerate(zip(elements, types)):
            src = self.ex_value(x, xt)
            if i < last_effect:
                tmp = self.temp("el")
                self.w.line(f"{tmp} = {src}")
                src = tmp
            values.append(src)
        return values

    # -- names and members ---------------------------------------------------------------

    def ex_PathExpression(self, e, t) -> str:
        decl = e.decl
        if isinstance(decl, (A.Parameter, A.VariableDecl)):
            ctor = self.ctor_value(decl)
            if ctor is not None:
                return ctor
            return self.var_name(decl, e)
        if isinstance(decl, A.ConstantDecl):
            cv = decl.value.const_value
            if cv is None or isinstance(t, (T.EnumType, T.ErrorType)) and isinstance(cv, str):
                return self.ex_as(decl.value, decl.type if decl.type else decl.value.type)
            return literal(cv, t)
        if isinstance(decl, A.EnumMember):
            return repr(self.enum_value(t, decl.name, e))
        raise CompileError(e.loc, f"use of {e.name} ({type(decl).__name__}) as a value is "
                                  "not supported")

    def _fixed_composite(self, e) -> bool:
        """Whether `e` is a composite parameter of this function or a struct-like member
        of one: objects that stay the same for the whole call (composite assignment
        copies into the object, `_assign`), so members of it can be read once into
        locals at the start (`member_locals`)."""
        if isinstance(e, A.PathExpression):
            return isinstance(e.decl, A.Parameter) and e.decl in self.locals and \
                isinstance(strip(e.type), T.StructLikeType)
        return isinstance(e, A.MemberExpression) and \
            isinstance(strip(e.expr.type), T.StructLikeType) and self._fixed_composite(e.expr)

    def enum_value(self, t, member: str, node) -> int:
        t = strip(t)
        if isinstance(t, T.ErrorType):
            return self.pc.error_code(member, node)
        if isinstance(t, T.EnumType):
            if t.underlying is not None:
                return t.values[member]
            return t.members.index(member)
        if isinstance(t, T.MatchKindType):
            return t.members.index(member)
        raise CompileError(node.loc, f"{member} is not a member of an enum")

    def ex_MemberExpression(self, e, t) -> str:
        kind, base_t = member_kind(e)
        if kind == "constant":
            return repr(self.enum_value(t, e.member, e))
        if kind == "field":
            src = f"{self.ex(e.expr)}.{field_attr(e.member)}"
            if self.member_locals is not None and isinstance(strip(e.type), T.StructLikeType) \
                    and self._fixed_composite(e.expr):
                name = self.member_locals.get(src)
                if name is None:
                    name = self.member_locals[src] = self.temp(e.member)
                return name
            return src
        if kind == "stack":
            if e.member == "size":      # a constant: the stack itself is not read
                return repr(base_t.size)
            if e.member in _STACK_MEMBERS:
                return _STACK_MEMBERS[e.member].format(self.ex(e.expr))
        if kind == "result":
            entry = self.ex(e.expr)
            if e.member in _RESULT_MEMBERS:
                return _RESULT_MEMBERS[e.member].format(entry)
            if e.member == "action_run":
                # a table with an action profile runs no action of its own (a hit runs a
                # member's, a miss none, as on bmv2): its entries' index is -1
                return f"{entry}.action_index" if not self._has_profile(e.expr) else \
                    f"({entry}.action_index if {entry}.hit else -1)"
        raise CompileError(e.loc, f"member .{e.member} of {base_t} is not supported")

    def _has_profile(self, apply_call) -> bool:
        """Whether the table `apply_call` applies has an action profile or selector."""
        if not (isinstance(apply_call, A.MethodCallExpression) and
                apply_call.call_kind == "table_apply"):
            return False
        return self.pc.table_of_apply(apply_call, self.block).implementation is not None

    def ex_IndexExpression(self, e, t) -> str:
        base_t = strip(e.expr.type)
        base = self.ex(e.expr)
        index = e.index.const_value
        if isinstance(base_t, T.StackType):
            if index is not None and 0 <= index < base_t.size:
                return f"{base}.elems[{index}]"
            if self.in_parser():
                return f"{base}.at({self.ex(e.index)})"
            return f"{base}.at_in_control({self.ex(e.index)})"
        if isinstance(base_t, T.TupleType) and index is not None:
            return f"{base}[{index}]"
        raise CompileError(e.loc, f"indexing a value of type {base_t} is not supported")

    def ex_SliceExpression(self, e, t) -> str:
        hi, lo = e.hi.const_value, e.lo.const_value
        if hi is None or lo is None:
            raise CompileError(e.loc, "slices with non-constant bounds are not supported")
        mask = (1 << (hi - lo + 1)) - 1
        value = self.ex(e.expr)
        if lo:
            value = f"({value} >> {lo})"
        return f"({value} & {mask})"

    # -- operators -----------------------------------------------------------------------

    def ex_UnaryExpression(self, e, t) -> str:
        a = self.ex(e.operand)
        if e.op == "!":
            return f"(not {a})"
        if e.op == "~":
            if isinstance(t, T.BitsType) and not t.signed:
                return f"({a} ^ {t.mask})"
            return f"(~{a})"
        if e.op == "-":
            return wrap_src(f"-{a}", t)
        if e.op == "+":
            return a
        raise CompileError(e.loc, f"unary operator {e.op} is not supported")

    def operands_left_first(self, e) -> tuple[str, str]:
        """Sources of a binary expression's operands. P4 evaluates the left one first: when
        the right one runs statements (a call with out arguments, which may write what the
        left one reads), the left value is stored before them."""
        a = self.ex(e.left)
        mark = self.w.mark()
        b = self.ex(e.right)
        if self.w.mark() != mark and e.left.const_value is None:
            hoisted = self.w.take_since(mark)
            tmp = self.temp("l")
            self.w.line(f"{tmp} = {a}")
            self.w.lines.extend(hoisted)
            a = tmp
        return a, b

    def ex_BinaryExpression(self, e, t) -> str:
        op = e.op
        if op in ("&&", "||"):
            a = self.ex(e.left)
            mark = self.w.mark()
            b = self.ex(e.right)
            if self.w.mark() == mark:
                return f"({a} {'and' if op == '&&' else 'or'} {b})"
            # The right operand needed statements (a call with out arguments): run them
            # only when the left operand does not decide, as short-circuiting requires.
            hoisted = self.w.take_since(mark)
            result = self.temp("c")
            self.w.line(f"{result} = {a}")
            self.w.line(f"if {'' if op == '&&' else 'not '}{result}:")
            self.w.nest(hoisted)
            with self.w.indent():
                self.w.line(f"{result} = {b}")
            return result
        a, b = self.operands_left_first(e)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return wrap_src(f"{a} {op} {b}", t)
        if op in ("/", "%"):
            helper = "_div" if op == "/" else "_mod"
            return wrap_src(f"{helper}({a}, {b})", t)
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("|+|", "|-|"):
            pyop = "+" if op == "|+|" else "-"
            if isinstance(t, T.BitsType):
                lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed \
                    else (0, t.mask)
                # Clamped without max()/min() calls: the sum is usually in range.
                tmp = self.temp("sat")
                return (f"({tmp} if {lo} <= ({tmp} := {a} {pyop} {b}) <= {hi} else "
                        f"({lo} if {tmp} < {lo} else {hi}))")
            return f"({a} {pyop} {b})"
        if op == "<<":
            shift = e.right.const_value
            if isinstance(t, T.BitsType):
                if shift is not None:
                    return "0" if shift >= t.width else wrap_src(f"{a} << {shift}", t)
                return wrap_src(f"_shl({a}, {b}, {t.width})", t)
            return f"({a} << {b})"
        if op == ">>":
            return f"({a} >> {b})"
        if op == "++":
            lt, rt = strip(e.left.type), strip(e.right.type)
            rw = scalar_width(rt)
            joined = f"(({to_unsigned_src(a, lt)} << {rw}) | {to_unsigned_src(b, rt)})"
            return from_unsigned_src(joined, t)
        raise CompileError(e.loc, f"operator {op} is not supported")

    def ex_TernaryExpression(self, e, t) -> str:
        cond = self.ex(e.cond)
        mark = self.w.mark()
        then = self.ex_as(e.then, t)
        then_lines = self.w.take_since(mark)
        other = self.ex_as(e.else_, t)
        other_lines = self.w.take_since(mark)
        if not then_lines and not other_lines:
            return f"({then} if {cond} else {other})"
        # A branch needed statements: evaluate only the branch selected.
        result = self.temp("c")
        self.w.line(f"if {cond}:")
        self.w.nest(then_lines)
        with self.w.indent():
            self.w.line(f"{result} = {then}")
        self.w.line("else:")
        self.w.nest(other_lines)
        with self.w.indent():
            self.w.line(f"{result} = {other}")
        return result

    def ex_CastExpression(self, e, t) -> str:
        src_t = strip(e.expr.type)
        if isinstance(e.expr, (A.ListExpression, A.StructExpression)) \
                and isinstance(t, T.StructLikeType):
            return self.make_struct(e.expr, t)
        a = self.ex(e.expr)
        if isinstance(t, T.BoolType):
            return a if isinstance(src_t, T.BoolType) else f"({a} != 0)"
        if isinstance(t, T.BitsType):
            if isinstance(src_t, T.BoolType):
                return f"int({a})"
            if isinstance(src_t, T.EnumType) and src_t.underlying is not None:
                src_t = src_t.underlying
            if isinstance(src_t, T.BitsType) and not src_t.signed and not t.signed \
                    and src_t.width <= t.width:
                return a
            if src_t == t:
                return a
            if isinstance(src_t, T.BitsType) and not src_t.signed and t.signed \
                    and src_t.width == t.width:
                # Reinterpreting bit<W> (already in 0 .. 2**W-1) as int<W>: two operations.
                half = 1 << (t.width - 1)
                return f"(({a} ^ {half}) - {half})"
            return wrap_src(a, t)
        if isinstance(t, T.EnumType) and t.underlying is not None:
            return wrap_src(a, t.underlying)
        if src_t == t or isinstance(t, (T.StructLikeType, T.StackType, T.TupleType,
                                        T.ErrorType, T.EnumType, T.VarbitType)):
            return a
        raise CompileError(e.loc, f"cast from {src_t} to {t} is not supported")

    def ex_ListExpression(self, e, t) -> str:
        if isinstance(t, T.StructLikeType):
            return self.make_struct(e, t)
        elems = t.elements if isinstance(t, T.TupleType) else [x.type for x in e.elements]
        return "(" + "".join(v + ", " for v in self.values_in_order(e.elements, elems)) + ")"

    def ex_StructExpression(self, e, t) -> str:
        if isinstance(t, T.StructLikeType):
            return self.make_struct(e, t)
        raise CompileError(e.loc, "a struct expression needs a known struct type here")

    def ex_InvalidHeaderExpression(self, e, t) -> str:
        return self.pc.types.default_src(t)

    def ex_MethodCallExpression(self, e, t) -> str:
        src = self.call(e, want_value=True)
        if src is None:
            raise CompileError(e.loc, "a call without a value is used as a value")
        return src

    # -- flattening for hashes, checksums and digests ------------------------------------

    def fields_src(self, e) -> str:
        """Source of the `(value, width)` list of an "any data" extern argument. Scalar
        fields of known widths are packed into one field right here (concatenation is
        what the algorithms do first anyway), which saves building a list per packet."""
        items = self._field_items(e)
        if items and all(isinstance(i, tuple) for i in items):
            total = sum(width for _, width in items)
            parts, shift = [], total
            for value, width in items:
                shift -= width
                parts.append(f"({value} << {shift})" if shift else value)
            return f"[({' | '.join(parts)}, {total})]"
        return "[" + ", ".join(i if isinstance(i, str) else f"({i[0]}, {i[1]})"
                               for i in items) + "]"

    def _field_items(self, e) -> list:
        """(value source, width) for scalars, "*obj._fields()" source for composites."""
        t = strip(e.type)
        if isinstance(e, A.ListExpression):
            items = []
            for x in e.elements:
                items += self._field_items(x)
            return items
        if isinstance(e, A.StructExpression):
            items = []
            for f in e.fields:
                items += self._field_items(f.value)
            return items
        width = scalar_width(t)
        if width is not None:
            return [(to_unsigned_src(self.ex(e), t), width)]
        if isinstance(t, (T.StructLikeType, T.StackType)):
            _check_flattenable(t, e)
            return [f"*{self.ex(e)}._fields()"]
        if isinstance(t, T.VarbitType):
            v = self.ex(e)
            return [f"({v}[1], {v}[0])"]
        if isinstance(t, T.TupleType) and isinstance(e, A.PathExpression):
            raise CompileError(e.loc, "tuple variables as extern data are not supported")
        raise CompileError(e.loc, f"a value of type {t} cannot be used as a field list")

    def values_src(self, e) -> str:
        """Source of the list of field values of a digest's data (one per field, scalars as
        unsigned ints)."""
        t = strip(e.type)
        if isinstance(e, A.ListExpression):
            return "[" + ", ".join(self._plain(self.ex(x), x.type) for x in e.elements) + "]"
        if isinstance(e, A.StructExpression):
            return "[" + ", ".join(self._plain(self.ex(f.value), f.value.type)
                                   for f in e.fields) + "]"
        if isinstance(t, T.StructLikeType):
            v = self.ex(e)
            return "[" + ", ".join(self._plain(f"{v}.{field_attr(n)}", ft)
                                   for n, ft in t.fields) + "]"
        return f"[{self._plain(self.ex(e), t)}]"

    def texts_src(self, e) -> str:
        """Source of the list of what log_msg writes for each "{}": the values of
        `values_src`, a composite one as text (`log_text_src`)."""
        t = strip(e.type)
        if isinstance(e, A.ListExpression):
            pairs = [(self.ex(x), x.type) for x in e.elements]
        elif isinstance(e, A.StructExpression):
            pairs = [(self.ex(f.value), f.value.type) for f in e.fields]
        elif isinstance(t, T.StructLikeType):
            v = self.ex(e)
            pairs = [(f"{v}.{field_attr(n)}", ft) for n, ft in t.fields]
        else:
            pairs = [(self.ex(e), t)]
        return "[" + ", ".join(log_text_src(src, pt) for src, pt in pairs) + "]"

    @staticmethod
    def _plain(src, t) -> str:
        """Control-plane form of a value: the unsigned bit pattern of scalars."""
        return to_unsigned_src(src, t) if scalar_width(t) is not None else src


def log_text_src(src: str, t) -> str:
    """Source of what log_msg writes for a value: a scalar's unsigned bit pattern (an error
    or plain enum: its code), a varbit's value; a struct, header or union as
    `{a = 1, b = 2}`, an invalid header as `{#}` (P4's invalid header), a stack or tuple as
    `{x, y}` -- the C back end writes the same text."""
    t = strip(t)
    if scalar_width(t) is not None:
        return to_unsigned_src(src, t)
    if isinstance(t, T.VarbitType):
        return f"{src}[1]"
    if isinstance(t, T.StructLikeType):
        parts = [f"'{n} = ' + str({log_text_src(f'{src}.{field_attr(n)}', ft)})"
                 for n, ft in t.fields]
        text = "('{' + " + " + ', ' + ".join(parts) + " + '}')" if parts else "'{}'"
        if isinstance(t, T.HeaderType):
            return f"({text} if {src}.valid else '{{#}}')"
        return text
    if isinstance(t, (T.StackType, T.TupleType)):
        items = [f"{src}.elems[{i}]" for i in range(t.size)] if isinstance(t, T.StackType) \
            else [f"{src}[{i}]" for i in range(len(t.elements))]
        types = [t.element] * t.size if isinstance(t, T.StackType) else list(t.elements)
        parts = [f"str({log_text_src(x, xt)})" for x, xt in zip(items, types)]
        return "('{' + " + " + ', ' + ".join(parts) + " + '}')" if parts else "'{}'"
    return src            # error codes, plain enums: their number


def _check_flattenable(t, node) -> None:
    """CompileError unless every field of `t` has bits (what `_fields()` can list)."""
    t = strip(t)
    if isinstance(t, T.StackType):
        _check_flattenable(t.element, node)
    elif isinstance(t, T.StructLikeType):
        for name, ft in t.fields:
            ft = strip(ft)
            if isinstance(ft, (T.StructLikeType, T.StackType)):
                _check_flattenable(ft, node)
            elif scalar_width(ft) is None and not isinstance(ft, (T.VarbitType, T.ErrorType)):
                raise CompileError(node.loc, f"field {name} of type {ft} cannot be part of "
                                             "a field list")
