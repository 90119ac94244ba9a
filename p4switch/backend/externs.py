"""Calls of v1model externs, core built-in methods (extract, emit, isValid, ...) and verify.

Extern objects (registers, counters, meters) are run-time objects of `runtime/externs.py`
bound to module globals; per-packet intrinsic state (clone/resubmit/recirculate requests,
truncation, digests, the packet length and payload) lives on the module global `P`, a
`runtime.v1model.PacketState`. Hash and checksum algorithms come from
`runtime/algorithms.py`, one object per call site (custom CRCs carry state).
"""

from __future__ import annotations

from functools import partialmethod

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.errors import CompileError
from .exprs import strip, wrap_src
from .pytypes import field_attr, scalar_width, from_unsigned_src

# Extern objects whose methods we implement, and the extern functions of v1model.
SUPPORTED_EXTERN_OBJECTS = ("register", "counter", "direct_counter", "meter", "direct_meter",
                            "action_profile", "action_selector")
# Extern objects without run-time state: their calls compile to plain functions.
STATELESS_EXTERN_OBJECTS = ("Checksum16",)


def arg(e, i):
    """The expression of argument `i` of a call, in parameter order."""
    if e.param_args:
        return e.param_args[i][1]
    return e.args[i].value


class ExternMixin:
    """Extern and built-in call compilation for `FunctionCompiler`."""

    # -- built-in methods ----------------------------------------------------------------

    def call_builtin(self, e, want_value):
        b = e.builtin
        if b == "verify":
            cond, err = self.ex(arg(e, 0)), self.ex(arg(e, 1))
            self.w.line(f"if not {cond}: raise ParserException({err})")
            return None
        callee = e.callee
        if not isinstance(callee, A.MemberExpression):
            raise CompileError(e.loc, f"built-in {b} called in an unsupported way")
        target = callee.expr
        tt = strip(target.type)
        if b == "isValid":
            src = self.ex(target)
            return f"{src}.valid" if isinstance(tt, T.HeaderType) else f"{src}._is_valid()"
        if b == "setValid":
            self._union_siblings_off(target)
            self.w.line(f"{self.ex(target)}.valid = True")
            return None
        if b == "setInvalid":
            self.w.line(f"{self.ex(target)}._reset()")
            return None
        if b in ("push_front", "pop_front"):
            self.w.line(f"{self.ex(target)}.{b}({self.ex(arg(e, 0))})")
            return None
        if b == "extract":
            return self._extract(e, target)
        if b == "lookahead":
            return self._lookahead(e, target)
        if b == "advance":
            self.w.line(f"{self.ex(target)}.advance({self.ex(arg(e, 0))})")
            return None
        if b == "length":
            return f"({self.ex(target)}.nbits >> 3)"
        if b == "emit":
            value = arg(e, 0)
            self.w.line(f"{self.ex(value)}._emit({self.ex(target)})")
            return None
        raise CompileError(e.loc, f"built-in method {b} is not supported")

    def _union_siblings_off(self, header):
        if isinstance(header, A.MemberExpression) and \
                isinstance(strip(header.expr.type), T.HeaderUnionType):
            self.w.line(f"{self.ex(header.expr)}._only({field_attr(header.member)!r})")

    def _extract(self, e, packet):
        pkt = self.ex(packet)
        header = arg(e, 0)
        nbits = f", {self.ex(arg(e, 1))}" if len(e.args) > 1 else ""
        if isinstance(header, A.DontCareExpression):     # extract<H>(_): into a temporary
            self.trace("Extracting header '_'")
            cls = self.pc.types.class_name(strip(e.resolved_type_args[0]))
            self.w.line(f"{cls}()._extract({pkt}{nbits})")
            return None
        if not isinstance(strip(header.type), T.HeaderType):
            raise CompileError(e.loc, f"extract into {header.type} is not supported")
        self.trace(f"Extracting header '{self.text(header)}'")
        if isinstance(header, A.MemberExpression) and header.member == "next" and \
                isinstance(strip(header.expr.type), T.StackType):
            stack = self.ex(header.expr)
            tmp = self.temp("h")
            self.w.line(f"{tmp} = {stack}.next()")
            self.w.line(f"{tmp}._extract({pkt}{nbits})")
            self.w.line(f"{stack}.nextIndex += 1")
            return None
        self._union_siblings_off(header)
        self.w.line(f"{self.ex(header)}._extract({pkt}{nbits})")
        if _member_of_next(header):     # extract(us.next.h): a union stack advances too
            self.w.line(f"{self.ex(header.expr.expr)}.nextIndex += 1")
        return None

    def _lookahead(self, e, packet):
        t = strip(e.resolved_type_args[0] if e.resolved_type_args else e.type)
        pkt = self.ex(packet)
        width = scalar_width(t)
        if width is not None:
            return from_unsigned_src(f"{pkt}.lookahead({width})", t)
        if isinstance(t, (T.HeaderType, T.StructType)):
            def plain_bits(ft):          # bit fields, directly or in nested structs
                ft = strip(ft)
                if isinstance(ft, T.StructType):
                    return all(plain_bits(x) for _, x in ft.fields)
                return scalar_width(ft) is not None
            if not all(plain_bits(ft) for _, ft in t.fields):
                raise CompileError(e.loc, f"lookahead of {t}, which has a field that is not "
                                          "bits, is not supported")
            cls = self.pc.types.class_name(t)
            return f"{cls}()._set_bits({pkt}.lookahead({T.bit_width(t)}))"
        raise CompileError(e.loc, f"lookahead of {t} is not supported")

    # -- externs ---------------------------------------------------------------------------

    def call_extern(self, e, want_value):
        if e.call_kind == "extern_method":
            instance = self.pc.extern_instance(e.callee.expr, self.block)
            method = getattr(self, f"_m_{instance.extern}_{e.callee.member}", None)
            if method is None:
                raise CompileError(e.loc, f"method {instance.extern}.{e.callee.member} is "
                                          "not supported")
            if instance.extern in STATELESS_EXTERN_OBJECTS:
                return method(e, None)
            return method(e, self.pc.extern_global(instance))
        name = e.callee_decl.name if e.callee_decl is not None else getattr(e.callee, "name", "?")
        method = getattr(self, f"_f_{name}", None)
        if method is None:
            raise CompileError(e.loc, f"extern function {name} is not supported")
        return method(e)

    # objects

    # Register cells are read and written inline (the list is the module global
    # `<obj>_cells`); with an index outside the array a read leaves its result unwritten and
    # a write writes nothing, as on bmv2.

    def _register_index(self, e, index_expr) -> tuple[str, str]:
        """(index source, condition that the index is inside the array)."""
        index = self.ex(index_expr)
        if not index.replace("_", "").replace(".", "").isalnum():
            tmp = self.temp("i")
            self.w.line(f"{tmp} = {index}")
            index = tmp
        size = self.pc.extern_instance(e.callee.expr, self.block).size or 0
        t = strip(index_expr.type)
        if isinstance(t, T.BitsType) and not t.signed:
            return index, f"{index} < {size}"          # bit<W> values are never negative
        return index, f"0 <= {index} < {size}"

    def _m_register_read(self, e, obj):
        index, inside = self._register_index(e, arg(e, 1))
        cell = f"({obj}_cells[{index}])"
        t = strip(arg(e, 0).type)
        if self.pc.types.packs(t):          # a struct value: its fields from the cell's bits
            cell = f"{self.pc.types.class_name(t)}()._set_bits{cell}"
        self.w.line(f"if {inside}:")
        with self.w.indent():
            self.assign(arg(e, 0), cell)

    def _m_register_write(self, e, obj):
        index, inside = self._register_index(e, arg(e, 0))
        value = self.ex(arg(e, 1))
        if self.pc.types.packs(strip(arg(e, 1).type)):
            value = f"{value}._bits()"
        self.w.line(f"if {inside}: {obj}_cells[{index}] = {value}")

    def _m_counter_count(self, e, obj):
        self.w.line(f"{obj}.count({self.ex(arg(e, 0))}, P.plen)")

    def _m_direct_counter_count(self, e, obj):
        # The table counts its hits itself, as bmv2 does; the call is a no-op.
        return None

    def _m_meter_execute_meter(self, e, obj):
        # The packet's clock reading, as direct meters use: one time per received packet.
        # An index outside the array leaves the colour unwritten (None), as on bmv2.
        color = self.temp("color")
        self.w.line(f"{color} = {obj}.execute({self.ex(arg(e, 0))}, P.plen, P.now_us)")
        self.w.line(f"if {color} is not None:")
        with self.w.indent():
            self.assign(arg(e, 1), color)

    def _m_direct_meter_read(self, e, obj):
        self.assign(arg(e, 0), f"{obj}.color")

    def _m_Checksum16_get(self, e, obj):
        return f"{self.pc.hash_global('csum16', e)}({self.fields_src(arg(e, 0))})"

    # functions

    def _f_mark_to_drop(self, e):
        sm = self.ex(arg(e, 0)) if e.args else "P.sm"
        self.w.line(f"{sm}.f_egress_spec = 511")
        self.w.line(f"{sm}.f_mcast_grp = 0")

    def _hash_object(self, e, algo_expr):
        algo = algo_expr.member if isinstance(algo_expr, A.MemberExpression) else None
        if algo is None:
            raise CompileError(e.loc, "the hash algorithm must be a HashAlgorithm constant")
        return self.pc.hash_global(algo, e)

    def _f_hash(self, e):
        result, algo, base, data, maximum = (arg(e, i) for i in range(5))
        h = self._hash_object(e, algo)
        value = f"_hash_value({h}({self.fields_src(data)}), {self.ex(base)}, {self.ex(maximum)})"
        self.assign(result, wrap_src(value, result.type))

    def _checksum(self, e, verify: bool, payload: bool):
        cond, data, checksum, algo = (arg(e, i) for i in range(4))
        h = self._hash_object(e, algo)
        fields = self.fields_src(data)
        if payload:
            fields = f"{fields} + [P.payload_field()]"
        computed = wrap_src(f"{h}({fields})", checksum.type)
        self.w.line(f"if {self.ex(cond)}:")
        with self.w.indent():
            if verify:
                self.w.line(f"if {computed} != {self.ex(checksum)}: P.sm.f_checksum_error = 1")
            else:
                self.assign(checksum, computed)

    def _f_verify_checksum(self, e):
        self._checksum(e, verify=True, payload=False)

    def _f_update_checksum(self, e):
        self._checksum(e, verify=False, payload=False)

    def _f_verify_checksum_with_payload(self, e):
        self._checksum(e, verify=True, payload=True)

    def _f_update_checksum_with_payload(self, e):
        self._checksum(e, verify=False, payload=True)

    def _f_random(self, e):
        result = arg(e, 0)
        self.assign(result, f"P.random({self.ex(arg(e, 1))}, {self.ex(arg(e, 2))})")

    def _f_digest(self, e):
        data = arg(e, 1)
        name = self.pc.digest_name(e, data)
        self.w.line(f"P.digests.append(({name!r}, {self.values_src(data)}))")

    def _clone_type(self, e, type_expr):
        kind = type_expr.member if isinstance(type_expr, A.MemberExpression) else None
        if kind not in ("I2E", "E2E"):
            raise CompileError(e.loc, "the clone type must be CloneType.I2E or CloneType.E2E")
        return kind

    def _field_list_index(self, e, index_expr):
        index = index_expr.const_value
        if index is None:
            raise CompileError(e.loc, "the field list index must be a constant")
        return index

    def _data_field_list(self, e, data) -> int:
        return self.pc.data_field_list(data)

    def _clone(self, e, keep=None):
        """clone(type, session[, fields]): `keep(self, e, fields)` is the field list to copy."""
        self._clone_type(e, arg(e, 0))
        index = keep(self, e, arg(e, 2)) if keep else None
        self.w.line(f"P.clone_session = {self.ex(arg(e, 1))}; P.clone_fields = {index}")

    def _keep_fields(self, e, what: str, keep):
        """resubmit/recirculate(fields): `keep(self, e, fields)` is the field list to keep."""
        self.w.line(f"P.{what} = {keep(self, e, arg(e, 0))}")

    # clone3, resubmit and recirculate name the fields to copy by a list expression (data);
    # the _preserving_field_list forms by the index of a @field_list annotation.
    _f_clone = _clone
    _f_clone3 = partialmethod(_clone, keep=_data_field_list)
    _f_clone_preserving_field_list = partialmethod(_clone, keep=_field_list_index)
    _f_resubmit = partialmethod(_keep_fields, what="resubmit", keep=_data_field_list)
    _f_resubmit_preserving_field_list = partialmethod(_keep_fields, what="resubmit",
                                                      keep=_field_list_index)
    _f_recirculate = partialmethod(_keep_fields, what="recirculate", keep=_data_field_list)
    _f_recirculate_preserving_field_list = partialmethod(_keep_fields, what="recirculate",
                                                         keep=_field_list_index)

    def _f_truncate(self, e):
        self.w.line(f"P.truncate = {self.ex(arg(e, 0))}")

    def _f_assert(self, e):
        self.w.line(f"if not {self.ex(arg(e, 0))}: "
                    f"raise P4AssertionError({'assert failed at ' + str(e.loc)!r})")

    def _f_assume(self, e):
        self.w.line(f"if not {self.ex(arg(e, 0))}: "
                    f"raise P4AssertionError({'assume failed at ' + str(e.loc)!r})")

    def _f_log_msg(self, e):
        msg = self.ex(arg(e, 0))
        if len(e.args) > 1:
            self.w.line(f"if _trace: _trace(_format_log({msg}, {self.texts_src(arg(e, 1))}))")
        else:
            self.w.line(f"if _trace: _trace({msg})")


def _member_of_next(header):
    """Whether `header` is a member of `stack.next` (a header in a stack of header unions)."""
    return isinstance(header, A.MemberExpression) and \
        isinstance(header.expr, A.MemberExpression) and header.expr.member == "next" and \
        isinstance(strip(header.expr.expr.type), T.StackType)
