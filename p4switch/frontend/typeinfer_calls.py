"""Type inference for calls and keysets (the `CallTyping` part of `typeinfer.TypeInference`):
actions, functions, extern functions and methods (overloads picked by arity, type
variables inferred), table and block apply, the built-in header, stack and packet methods,
argument binding by position or name; keysets of select cases and table entries."""

from __future__ import annotations

from . import ast as A
from . import types as T
from .constfold import SIZE_METHODS, value
from .errors import CompileError
from .printer import expr_text
from .resolve import unsupported
from .typeinfer_types import BuiltinMethod


class CallTyping:
    """Types calls and keysets; mixed into `typeinfer.TypeInference`."""

    def call(self, e: A.MethodCallExpression, expected):
        callee = e.callee
        type_args = [self.resolve(t) for t in e.type_args]
        e.resolved_type_args = type_args
        if isinstance(callee, A.PathExpression):
            self.expr(callee)
            decl = callee.decl
            candidates = decl if isinstance(decl, list) else [decl]
            first = candidates[0]
            if isinstance(first, A.ActionDecl):
                return self.action_call(e, first)
            if isinstance(first, (A.FunctionDecl, A.ExternFunctionDecl)):
                fn = self.pick_overload(candidates, e, callee.name)
                callee.decl = fn
                return self.function_call(e, fn, type_args, expected)
            raise CompileError(callee.loc, f"'{callee.name}' is not a function or action")
        if isinstance(callee, A.MemberExpression):
            bt = self.expr(callee)
            if not isinstance(bt, BuiltinMethod):
                raise CompileError(callee.loc, f"'{expr_text(callee)}' is not a method")
            return self.method_call(e, callee, bt, type_args, expected)
        self.expr(callee)
        raise CompileError(callee.loc, f"'{expr_text(callee)}' cannot be called")

    def pick_overload(self, candidates, e: A.MethodCallExpression, name):
        fits = [c for c in candidates if self.arity_matches(c.params, e.args)]
        if not fits:
            counts = sorted({len(c.params) for c in candidates})
            raise CompileError(e.loc, f"'{name}' expects {' or '.join(map(str, counts))} "
                                      f"argument{'s' if counts != [1] else ''}, got {len(e.args)}")
        return fits[0]

    def arity_matches(self, params, args) -> bool:
        if any(a.name for a in args):
            names = {p.name for p in params}
            return all(a.name in names for a in args) and all(
                p.name in {a.name for a in args} or p.optional or p.default is not None for p in params)
        required = sum(1 for p in params if not (p.optional or p.default is not None))
        return required <= len(args) <= len(params)

    def action_call(self, e: A.MethodCallExpression, action: A.ActionDecl):
        if self.ctx.kind == "parser":
            raise CompileError(e.loc, "actions cannot be called from a parser")
        e.callee_decl = action
        e.call_kind = "action"
        e.param_args = self.bind_arguments(action.params, e.args, action.name, e.loc)
        return T.VOID

    def function_call(self, e, fn, type_args, expected):
        e.callee_decl = fn
        is_extern = isinstance(fn, A.ExternFunctionDecl)
        e.call_kind = "extern_function" if is_extern else "function"
        if is_extern and fn.name == "verify" and fn.loc.file.endswith("core.p4"):
            e.call_kind = "builtin"
            e.builtin = "verify"
            if self.ctx.kind != "parser":
                raise CompileError(e.loc, "verify can only be called in a parser")
        mapping = self.explicit_type_args(fn.type_params, type_args, e, fn.name)
        e.param_args = self.bind_arguments(fn.params, e.args, fn.name, e.loc, mapping,
                                           generic=fn.type_params)
        e.resolved_type_args = [mapping.get(tp) for tp in fn.type_params]
        if is_extern and fn.name == "static_assert" and fn.loc.file.endswith("core.p4"):
            self.static_assert(e)
        return self.substitute(fn.return_type.type, mapping)

    def static_assert(self, e: A.MethodCallExpression):
        check = e.param_args[0][1]
        if self.require_const(check, "the condition of static_assert") is not True:
            message = "static assertion failed"
            if len(e.param_args) > 1 and e.param_args[1][1] is not None:
                message += f": {value(e.param_args[1][1])}"
            raise CompileError(e.loc, message)

    def explicit_type_args(self, type_params, type_args, e, name) -> dict:
        if type_args and len(type_args) != len(type_params):
            raise CompileError(e.loc, f"'{name}' takes {len(type_params)} type arguments, got {len(type_args)}")
        return {tp: ta for tp, ta in zip(type_params, type_args) if not isinstance(ta, T.DontCareType)}

    def method_call(self, e, callee: A.MemberExpression, m: "BuiltinMethod", type_args, expected):
        owner = m.owner
        name = m.name
        if isinstance(owner, T.ExternType):
            candidates = callee.decl if isinstance(callee.decl, list) else [callee.decl]
            method = self.pick_overload(candidates, e, f"{owner.name}.{name}")
            callee.decl = method
            e.callee_decl = method
            extern_decl = owner.decl
            if extern_decl.name in ("packet_in", "packet_out") and extern_decl.loc.file.endswith("core.p4"):
                e.call_kind = "builtin"
                e.builtin = name
                if extern_decl.name == "packet_in" and self.ctx.kind not in ("parser",):
                    raise CompileError(e.loc, f"packet_in.{name} can only be called in a parser")
            else:
                e.call_kind = "extern_method"
            mapping = {tp: ta for tp, ta in zip(extern_decl.type_params, owner.type_args)
                       if not isinstance(ta, T.TypeVar) or ta.decl is not tp}
            mapping.update(self.explicit_type_args(method.type_params, type_args, e, name))
            free = [tp for tp in list(extern_decl.type_params) + list(method.type_params) if tp not in mapping]
            # An extern's own type parameters left open by its instantiation (v1model's
            # `counter(1024, CounterType.packets) c;`) default to bit<32> for int arguments.
            open_extern_params = [tp for tp in extern_decl.type_params if tp not in mapping]
            e.param_args = self.bind_arguments(method.params, e.args, f"{owner.name}.{name}",
                                               e.loc, mapping, generic=free, int_default=open_extern_params)
            e.resolved_type_args = [mapping.get(tp) for tp in method.type_params]
            ret = self.substitute(method.return_type.type, mapping)
            if isinstance(ret, T.TypeVar):
                raise CompileError(e.loc, f"cannot infer the result type of {owner.name}.{name}; "
                                          f"give it explicitly, e.g. {name}<bit<8>>()")
            if e.builtin == "extract":
                self.check_extract(e)
            if e.builtin == "emit":
                self.check_emit(e)
            return ret
        e.call_kind = "builtin"
        e.builtin = name
        if isinstance(owner, T.TableType):
            if e.args:
                raise CompileError(e.loc, "apply() of a table takes no arguments")
            if self.ctx.kind != "control":
                raise CompileError(e.loc, "tables can only be applied in a control's apply block")
            e.call_kind = "table_apply"
            e.builtin = None
            e.callee_decl = owner.decl
            return T.TableResultType(owner.name, owner.decl)
        if isinstance(owner, T.ParserType):
            e.call_kind = "block_apply"
            e.builtin = None
            base = callee.expr
            e.callee_decl = base.decl if isinstance(base, A.PathExpression) else owner.decl
            decl = owner.decl
            if isinstance(owner, T.ControlType) != (self.ctx.kind != "parser"):
                what = "controls" if isinstance(owner, T.ControlType) else "parsers"
                where = "parsers" if isinstance(owner, T.ControlType) else "controls"
                raise CompileError(e.loc, f"{what} cannot be applied in {where}")
            e.param_args = self.bind_arguments(decl.params, e.args, decl.name, e.loc)
            return T.VOID
        if name in ("isValid", "setValid", "setInvalid"):
            if e.args:
                raise CompileError(e.loc, f"{name}() takes no arguments")
            if isinstance(owner, T.HeaderUnionType) and name != "isValid":
                raise CompileError(e.loc, f"{name}() cannot be called on a header_union")
            if name != "isValid":
                return T.VOID     # the receiver must be writable: lvalues.py
            return T.BOOL
        if name in ("push_front", "pop_front"):
            if len(e.args) != 1:
                raise CompileError(e.loc, f"{name} expects 1 argument, got {len(e.args)}")
            self.expr(e.args[0].value, T.INT)
            self.require_const(e.args[0].value, f"argument of {name}")
            e.param_args = [(None, e.args[0].value)]
            return T.VOID
        if name in SIZE_METHODS:
            if e.args:
                raise CompileError(e.loc, f"{name}() takes no arguments")
            return T.INT     # the value: constfold.py
        unsupported(e.loc, f"method {name}()")

    def check_extract(self, e):
        arg = e.args[0].value if e.args else None
        t = T.strip_newtype(arg.type) if arg is not None else None
        if isinstance(arg, A.DontCareExpression):
            # extract<H>(_): the header is parsed (and its bits consumed) into a temporary.
            t = T.strip_newtype(e.resolved_type_args[0]) if e.resolved_type_args else None
            if t is None or isinstance(t, (T.TypeVar, T.DontCareType)):
                raise CompileError(arg.loc, "extract into '_' needs the header type: extract<H>(_)")
        if not isinstance(t, T.HeaderType):
            raise CompileError(arg.loc if arg is not None else e.loc,
                               f"extract needs a header, not {arg.type if arg is not None else 'nothing'}")
        varbits = [n for n, ft in t.fields if isinstance(ft, T.VarbitType)]
        if len(e.args) == 1 and varbits:
            raise CompileError(e.loc, f"extract of header {t} with a varbit field needs a size argument")
        if len(e.args) == 2 and not varbits:
            raise CompileError(e.loc, f"two-argument extract needs a header with a varbit field; {t} has none")
        self.require_whole_bytes(t, arg.loc, "extract")

    def check_emit(self, e):
        arg = e.args[0].value
        t = T.strip_newtype(arg.type)
        if not isinstance(t, (T.HeaderType, T.HeaderUnionType, T.StackType, T.StructType)):
            raise CompileError(arg.loc, f"emit needs a header, header union, stack or struct, not {arg.type}")
        self.require_whole_bytes(t, arg.loc, "emit")

    def require_whole_bytes(self, t: T.Type, loc, operation: str):
        """v1model (bmv2) packets are byte strings: every header extracted or emitted must
        be a whole number of bytes (a varbit field counts as 0 bits: its size is checked
        when the packet is parsed)."""
        t = T.strip_newtype(t)
        if isinstance(t, T.StackType):
            self.require_whole_bytes(t.element, loc, operation)
        elif isinstance(t, (T.StructType, T.HeaderUnionType)):
            for _, ft in t.fields:
                self.require_whole_bytes(ft, loc, operation)
        elif isinstance(t, T.HeaderType):
            width = sum(T.bit_width(ft) for _, ft in t.fields
                        if not isinstance(T.strip_newtype(ft), T.VarbitType))
            if width % 8:
                raise CompileError(loc, f"unsupported: {operation} of header {t.name}, whose "
                                        f"fixed-size fields are {width} bits, not a whole "
                                        "number of bytes")

    def bind_arguments(self, params, args, callee_name, loc, mapping=None, generic=(),
                       int_default=()):
        """Match arguments to parameters (positional or named), type-check them, infer type
        variables into `mapping`; returns [(Parameter, Expression or None)]."""
        mapping = {} if mapping is None else mapping
        if any(a.name for a in args):
            if not all(a.name for a in args):
                raise CompileError(loc, f"call to '{callee_name}' mixes named and positional arguments")
            by_name = {}
            for a in args:
                if a.name not in {p.name for p in params}:
                    raise CompileError(a.loc, f"'{callee_name}' has no parameter named '{a.name}'")
                if a.name in by_name:
                    raise CompileError(a.loc, f"argument '{a.name}' is given twice")
                by_name[a.name] = a
            pairs = [(p, by_name[p.name].value if p.name in by_name else None) for p in params]
        else:
            required = sum(1 for p in params if not (p.optional or p.default is not None))
            if not (required <= len(args) <= len(params)):
                expect = str(len(params)) if required == len(params) else f"{required} to {len(params)}"
                raise CompileError(loc, f"'{callee_name}' expects {expect} argument"
                                        f"{'s' if expect != '1' else ''}, got {len(args)}")
            pairs = [(p, args[i].value if i < len(args) else None) for i, p in enumerate(params)]
        for p, a in pairs:
            if a is None and not (p.optional or p.default is not None):
                raise CompileError(loc, f"missing argument for parameter '{p.name}' of '{callee_name}'")
        # First pass: arguments whose type does not depend on inference.
        for p, a in pairs:
            if a is None:
                continue
            want = self.substitute(p.type, mapping)
            if self.has_typevar(want):
                self.expr(a)
                if not self.unify(want, a.type, mapping):
                    raise CompileError(a.loc, f"argument '{p.name}' of '{callee_name}': {a.type} does "
                                              f"not match {want}")
        # Second pass: check every argument against its (now known) parameter type.
        for p, a in pairs:
            if a is None:
                continue
            want = self.substitute(p.type, mapping)
            if isinstance(want, T.TypeVar) and want.decl in int_default and isinstance(a.type, T.IntType):
                mapping[want.decl] = want = T.bit(32)
            if self.has_typevar(want):
                if isinstance(a.type, T.IntType):
                    raise CompileError(a.loc, f"cannot infer the width of argument '{p.name}' of "
                                              f"'{callee_name}'; give it a width, e.g. (bit<32>){expr_text(a)}")
                if isinstance(a.type, T.TupleType) and any(isinstance(x, T.IntType) for x in a.type.elements):
                    raise CompileError(a.loc, f"a list passed as '{p.name}' of '{callee_name}' contains "
                                              "an integer without a width")
                continue
            if a.type is None or isinstance(a, (A.ListExpression, A.StructExpression, A.InvalidHeaderExpression)):
                self.expr(a, want)
            elif isinstance(a.type, T.IntType):
                self.coerce(a, want, None)
            self.coerce(a, want, lambda at, t, n=p.name: (
                f"argument '{n}' of '{callee_name}' has type {at}, expected {t}"))
        return pairs

    def keyset(self, ks: A.Expression, types: list, where):
        if isinstance(ks, (A.DefaultExpression, A.DontCareExpression)):
            ks.type = T.DONTCARE
            return
        if len(types) == 1 and not isinstance(ks, A.ListExpression):
            self.keyset_element(ks, types[0], where)
            return
        if isinstance(ks, A.PathExpression):
            self.expr(ks)
            if isinstance(ks.decl, A.ValueSetDecl):
                return
        if not isinstance(ks, A.ListExpression) or len(ks.elements) != len(types):
            raise CompileError(ks.loc, f"the keyset needs {len(types)} elements")
        for el, t in zip(ks.elements, types):
            self.keyset_element(el, t, where)
        ks.type = T.SetType(T.TupleType(types))

    def keyset_element(self, ks: A.Expression, t: T.Type, where):
        if isinstance(ks, (A.DefaultExpression, A.DontCareExpression)):
            ks.type = T.DONTCARE
            return
        if isinstance(ks, (A.MaskExpression, A.RangeExpression)):
            # Masks and ranges are defined on bits: for a serializable-enum key their operands
            # are values of the enum's representation type (enum members convert to it).
            base = T.strip_newtype(t)
            part_type = base.underlying if isinstance(base, T.EnumType) and base.underlying else t
            parts = (ks.value, ks.mask) if isinstance(ks, A.MaskExpression) else (ks.lo, ks.hi)
            for part in parts:
                self.keyset_value(part, part_type)
            ks.type = T.SetType(t)
            return
        if isinstance(ks, A.PathExpression):
            self.expr(ks, t)
            if isinstance(ks.decl, A.ValueSetDecl):
                if ks.type.element != t and not isinstance(ks.type.element, T.StructType):
                    raise CompileError(ks.loc, f"value_set of {ks.type.element} used for a {t} key")
                return
            self.coerce(ks, t, lambda a, w: f"keyset value of type {a} does not match {w}")
            self.require_const(ks, "a keyset value")
            return
        self.keyset_value(ks, t)

    def keyset_value(self, e, t):
        self.expr(e, t)
        self.coerce(e, t, lambda a, w: f"keyset value of type {a} does not match {w}")
        self.require_const(e, "a keyset value")
