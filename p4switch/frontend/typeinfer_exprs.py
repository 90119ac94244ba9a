"""Type inference for expressions (the `ExpressionTyping` part of `typeinfer.TypeInference`):
literals take the width their context gives them, operators are checked, members of
headers, structs, stacks, externs and tables are looked up by type. Values that a type
depends on (widths, sizes, slice bounds) and values that must be constants are asked of
constfold.py; everything else is folded by the constant-folding pass afterwards."""

from __future__ import annotations

from . import ast as A
from . import types as T
from . import constfold
from .constfold import SIZE_METHODS, value
from .errors import CompileError
from .printer import expr_text
from .resolve import is_type_decl
from .typeinfer_types import BuiltinMethod, TypeName


class ExpressionTyping:
    """Types expressions; mixed into `typeinfer.TypeInference`."""

    def expr(self, e: A.Expression, expected: T.Type = None) -> T.Type:
        """Type-check `e`; `expected` (if known) types literals and untyped aggregates."""
        name = self._EXPRESSIONS.get(type(e))
        if name is None:
            raise CompileError(e.loc, f"'{expr_text(e)}' is not allowed here")
        t = getattr(self, name)(e, expected)
        e.type = t
        if isinstance(t, T.IntType):
            value(e)   # infinite-precision values are folded before the context sizes them
        if expected is not None and isinstance(t, T.IntType) and e.const_value is not None:
            self.coerce(e, expected, None)
        return e.type

    def int_literal(self, e: A.IntLiteral, expected):
        if e.width is None:
            return T.INT
        if e.signed and e.width < 1:
            raise CompileError(e.loc, "int<W> literals need a width of at least 1")
        return T.BitsType(e.width, e.signed)

    def bool_literal(self, e, expected):
        return T.BOOL

    def string_literal(self, e, expected):
        return T.STRING

    def path(self, e: A.PathExpression, expected):
        if e.name == "error" and e.decl is None:
            return self.error_type
        if e.decl is None:     # only the labels of a switch are resolved leniently
            raise CompileError(e.loc, f"'{e.name}' is not declared")
        decl = e.decl[0] if isinstance(e.decl, list) else e.decl
        if isinstance(decl, A.ConstantDecl):
            return decl.type
        if isinstance(decl, (A.VariableDecl, A.Parameter, A.Instantiation, A.ValueSetDecl,
                             A.ParserState, A.TableDecl)):
            return decl.type
        if isinstance(decl, (A.ActionDecl, A.FunctionDecl, A.ExternFunctionDecl)):
            return T.ActionType(decl.name, decl)
        if isinstance(decl, A.EnumMember):  # a match_kind member
            return decl.type
        if is_type_decl(decl):
            return TypeName(decl)
        raise CompileError(e.loc, f"'{e.name}' cannot be used as a value")

    def member(self, e: A.MemberExpression, expected):
        base = e.expr
        bt = self.expr(base)
        name = e.member
        if isinstance(bt, TypeName):
            return self.static_member(e, bt.decl)
        if isinstance(bt, T.ErrorType) and isinstance(base, A.PathExpression) and base.name == "error":
            return self.error_type     # e.decl: the member (resolve.py)
        t = T.strip_newtype(bt)
        if isinstance(t, T.StructLikeType):
            ft = t.field_type(name)
            if ft is not None:
                e.decl = t.decl.field_named(name) if t.decl is not None else None
                return ft
            if isinstance(t, (T.HeaderType, T.HeaderUnionType)) and name in ("isValid", "setValid", "setInvalid"):
                return BuiltinMethod(name, t)
            if name in SIZE_METHODS:
                return BuiltinMethod(name, t)
            raise CompileError(e.loc, f"{t} has no field '{name}'")
        if isinstance(t, T.StackType):
            if name in ("next", "last"):
                if self.ctx.kind != "parser":
                    raise CompileError(e.loc, f"'{name}' of a header stack can only be used in a parser")
                return t.element
            if name in ("size", "lastIndex", "nextIndex"):
                return T.bit(32)
            if name in ("push_front", "pop_front"):
                return BuiltinMethod(name, t)
            raise CompileError(e.loc, f"header stack has no member '{name}'")
        if isinstance(t, T.ExternType):
            methods = t.decl.methods_named(name)
            if not methods:
                raise CompileError(e.loc, f"extern {t.decl.name} has no method '{name}'")
            e.decl = methods[0] if len(methods) == 1 else methods
            return BuiltinMethod(name, t)
        if isinstance(t, T.TableType):
            if name != "apply":
                raise CompileError(e.loc, f"table {t.name} has no member '{name}'")
            return BuiltinMethod(name, t)
        if isinstance(t, T.TableResultType):
            if name in ("hit", "miss"):
                return T.BOOL
            if name == "action_run":
                return T.ActionEnumType(t.name, t.decl)
            raise CompileError(e.loc, f"a table apply result has no member '{name}'")
        if isinstance(t, T.ParserType):
            if name != "apply":
                raise CompileError(e.loc, f"{t.name} has no member '{name}'")
            return BuiltinMethod(name, t)
        raise CompileError(e.loc, f"a value of type {bt} has no member '{name}'")

    def static_member(self, e: A.MemberExpression, decl):
        name = e.member
        if isinstance(decl, A.EnumDecl):
            etype: T.EnumType = decl.type
            if name not in etype.members:
                raise CompileError(e.loc, f"{decl.name} has no member '{name}'")
            e.decl = next(m for m in decl.members if m.name == name)
            return etype
        if isinstance(decl, A.TypedefDecl) and isinstance(T.strip_newtype(decl.type), T.EnumType):
            return self.static_member(e, T.strip_newtype(decl.type).decl)
        if isinstance(decl, (A.ParserDecl, A.ControlDecl)) and name == "apply":
            return BuiltinMethod("apply", decl.type)
        if isinstance(decl, A.StructLikeDecl) and name in SIZE_METHODS:
            return BuiltinMethod(name, decl.type)
        raise CompileError(e.loc, f"type {decl.name} has no member '{name}'")

    def unary(self, e: A.UnaryExpression, expected):
        op = e.op
        if op == "!":
            self.expr(e.operand, T.BOOL)
            if not isinstance(e.operand.type, T.BoolType):
                raise CompileError(e.loc, f"'!' needs a bool operand, not {e.operand.type}")
            return T.BOOL
        t = self.expr(e.operand, expected if self.is_numeric(expected) else None)
        base = T.strip_newtype(t)
        if not isinstance(base, (T.BitsType, T.IntType)):
            raise CompileError(e.loc, f"'{op}' needs an integer operand, not {t}")
        if op == "~" and isinstance(base, T.IntType):
            raise CompileError(e.loc, "'~' cannot be applied to an integer without a width; "
                                      "give it one, e.g. (bit<8>)x")
        return t

    def is_numeric(self, t) -> bool:
        return t is not None and isinstance(T.strip_newtype(t), (T.BitsType, T.IntType))

    def binary(self, e: A.BinaryExpression, expected):
        op = e.op
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                self.expr(side, T.BOOL)
                if not isinstance(side.type, T.BoolType):
                    raise CompileError(side.loc, f"'{op}' needs bool operands, not {side.type}")
            return T.BOOL
        if op == "++":
            return self.concat(e)
        if op in ("<<", ">>"):
            return self.shift(e, expected)
        lt = self.expr(e.left, None)
        rt = self.expr(e.right, None)
        if isinstance(lt, T.IntType) and not isinstance(rt, T.IntType):
            self.coerce_operand(e.left, rt, e)
        elif isinstance(rt, T.IntType) and not isinstance(lt, T.IntType):
            self.coerce_operand(e.right, lt, e)
        lt, rt = self.enum_to_underlying(e.left, rt), self.enum_to_underlying(e.right, lt)
        if op in ("==", "!="):
            if not self.same_type(lt, rt):
                raise CompileError(e.loc, f"cannot compare values of types {lt} and {rt}")
            return T.BOOL
        base = T.strip_newtype(lt)
        if not isinstance(base, (T.BitsType, T.IntType)):
            raise CompileError(e.loc, f"'{op}' needs integer operands, not {lt}")
        if not self.same_type(lt, rt):
            if isinstance(base, T.BitsType) and isinstance(T.strip_newtype(rt), T.BitsType):
                rb = T.strip_newtype(rt)
                if base.signed != rb.signed:
                    raise CompileError(e.loc, f"'{op}' on values of different signedness: {lt} and {rt}")
                raise CompileError(e.loc, f"'{op}' on values of different widths: {lt} and {rt}")
            raise CompileError(e.loc, f"'{op}' on values of different types: {lt} and {rt}")
        if op in ("/", "%"):
            if isinstance(base, T.BitsType) and base.signed:
                raise CompileError(e.loc, f"'{op}' is not allowed on signed values ({lt})")
            rv = value(e.right)
            if rv == 0:
                raise CompileError(e.right.loc, "division by zero")
            if isinstance(base, T.IntType) and ((value(e.left) or 0) < 0 or (rv or 0) < 0):
                raise CompileError(e.loc, f"'{op}' on negative integers is not allowed")
        if op in ("|+|", "|-|") and isinstance(base, T.IntType):
            raise CompileError(e.loc, f"saturating '{op}' needs operands with a width")
        if op in ("<", ">", "<=", ">="):
            return T.BOOL
        return lt

    def enum_to_underlying(self, operand, other_type):
        """A serializable enum operand next to a value of its representation type takes that type."""
        t = operand.type
        if isinstance(t, T.EnumType) and t.underlying is not None and t.underlying == other_type:
            operand.type = t.underlying
        return operand.type

    def coerce_operand(self, operand, target, e):
        if isinstance(T.strip_newtype(target), (T.BitsType,)) or isinstance(target, T.NewType):
            self.coerce(operand, target, lambda a, t: f"'{e.op}' on values of types {a} and {t}")
        elif isinstance(target, T.EnumType) and target.underlying is not None:
            raise CompileError(e.loc, f"'{e.op}' on values of types {target} and int: cast one of them")
        elif isinstance(target, (T.BoolType, T.EnumType, T.ErrorType, T.StructLikeType)):
            raise CompileError(e.loc, f"'{e.op}' on values of types int and {target}")

    def same_type(self, a, b) -> bool:
        return a == b

    def shift(self, e: A.BinaryExpression, expected):
        lt = self.expr(e.left, expected if self.is_numeric(expected) else None)
        rt = self.expr(e.right)
        base = T.strip_newtype(lt)
        if not isinstance(base, (T.BitsType, T.IntType)):
            raise CompileError(e.loc, f"'{e.op}' needs an integer left operand, not {lt}")
        rb = T.strip_newtype(rt)
        if isinstance(rb, T.BitsType) and rb.signed:
            raise CompileError(e.right.loc, "a shift amount must be unsigned")
        if isinstance(rb, T.IntType):
            if value(e.right) is None or value(e.right) < 0:
                raise CompileError(e.right.loc, "a shift amount must be a non-negative constant or unsigned")
        elif not isinstance(rb, T.BitsType):
            raise CompileError(e.right.loc, f"a shift amount must be an integer, not {rt}")
        if isinstance(base, T.IntType) and value(e.right) is None:
            raise CompileError(e.loc, "shifting an integer without a width needs a constant amount")
        return lt

    def concat(self, e: A.BinaryExpression):
        lt = self.expr(e.left)
        rt = self.expr(e.right)
        lb, rb = T.strip_newtype(lt), T.strip_newtype(rt)
        for side, b in ((e.left, lb), (e.right, rb)):
            if isinstance(b, T.IntType):
                raise CompileError(side.loc, f"'++' needs operands with a width; '{expr_text(side)}' has none")
            if not isinstance(b, T.BitsType):
                raise CompileError(side.loc, f"'++' needs bit<W> or int<W> operands, not {b}")
        return T.BitsType(lb.width + rb.width, lb.signed)

    def ternary(self, e: A.TernaryExpression, expected):
        self.condition(e.cond, "'?:'")
        tt = self.expr(e.then, expected)
        et = self.expr(e.else_, expected if expected is not None else
                       (tt if not isinstance(tt, T.IntType) else None))
        if isinstance(tt, T.IntType) and not isinstance(et, T.IntType):
            self.coerce(e.then, et, None)
        tt = e.then.type
        if not self.same_type(tt, et):
            raise CompileError(e.loc, f"the branches of '?:' have different types: {tt} and {et}")
        if isinstance(tt, T.IntType) and value(e.cond) is None:
            raise CompileError(e.loc, "'?:' with integer branches without a width needs a constant condition")
        return tt

    def cast(self, e: A.CastExpression, expected):
        target = self.resolve(e.type_ref)
        if isinstance(e.expr, (A.ListExpression, A.StructExpression, A.InvalidHeaderExpression)):
            self.expr(e.expr, target)
            self.coerce(e.expr, target, lambda a, t: f"cannot cast {a} to {t}")
            return target
        st = self.expr(e.expr, None)
        src, dst = T.strip_newtype(st), T.strip_newtype(target)
        if not self.castable(src, dst, st, target):
            raise CompileError(e.loc, f"cannot cast a value of type {st} to {target}")
        return target

    def castable(self, src, dst, st, target) -> bool:
        if src == dst:
            return True
        ints = (T.BitsType, T.IntType)
        if isinstance(dst, T.BitsType) and isinstance(src, ints):
            return not (isinstance(src, T.BitsType) and src.signed != dst.signed and src.width != dst.width)
        if isinstance(dst, T.BitsType) and isinstance(src, T.BoolType):
            return dst.width == 1 and not dst.signed
        if isinstance(dst, T.BoolType) and isinstance(src, ints):
            return isinstance(src, T.IntType) or (src.width == 1 and not src.signed)
        if isinstance(dst, T.EnumType) and dst.underlying is not None:
            return isinstance(src, ints) or (isinstance(src, T.EnumType) and src.underlying is not None)
        if isinstance(src, T.EnumType) and src.underlying is not None and isinstance(dst, ints):
            return True
        if isinstance(dst, T.IntType) and isinstance(src, ints):
            return True
        return False

    def slice(self, e: A.SliceExpression, expected):
        t = self.expr(e.expr)
        base = T.strip_newtype(t)
        self.expr(e.hi, T.INT)
        self.expr(e.lo, T.INT)
        hi = self.require_const(e.hi, "slice bound")
        lo = self.require_const(e.lo, "slice bound")
        if isinstance(base, T.IntType):
            if value(e.expr) is None:
                raise CompileError(e.loc, "cannot slice an integer without a width")
        elif not isinstance(base, T.BitsType):
            raise CompileError(e.loc, f"cannot slice a value of type {t}")
        if not (isinstance(hi, int) and isinstance(lo, int)) or lo < 0 or hi < lo:
            raise CompileError(e.loc, f"invalid slice [{hi}:{lo}]")
        if isinstance(base, T.BitsType) and hi >= base.width:
            raise CompileError(e.loc, f"slice [{hi}:{lo}] is out of range for {t}")
        return T.bit(hi - lo + 1)

    def index(self, e: A.IndexExpression, expected):
        t = T.strip_newtype(self.expr(e.expr))
        self.expr(e.index)
        if not self.is_numeric(e.index.type):
            raise CompileError(e.index.loc, f"an index must be an integer, not {e.index.type}")
        if isinstance(e.index.type, T.IntType):
            self.coerce(e.index, T.bit(32), None)
        i = value(e.index)
        if isinstance(t, T.StackType):
            if i is not None and not (0 <= i < t.size):
                raise CompileError(e.index.loc, f"index {i} is out of range for a stack of size {t.size}")
            return t.element
        if isinstance(t, T.TupleType):
            if i is None or not (0 <= i < len(t.elements)):
                raise CompileError(e.index.loc, "a tuple index must be a constant in range")
            return t.elements[i]
        raise CompileError(e.loc, f"cannot index a value of type {t}")

    def list_expression(self, e: A.ListExpression, expected):
        target = T.strip_newtype(expected) if expected is not None else None
        if isinstance(target, T.StructLikeType) and not isinstance(target, T.HeaderUnionType):
            if len(e.elements) != len(target.fields):
                raise CompileError(e.loc, f"{target} has {len(target.fields)} fields, the list has "
                                          f"{len(e.elements)} elements")
            for el, (fname, ftype) in zip(e.elements, target.fields):
                self.expr(el, ftype)
                self.coerce(el, ftype, lambda a, t, n=fname: f"field '{n}': cannot use {a} as {t}")
            constfold.fold_aggregate(e, [(n, el) for (n, _), el in zip(target.fields, e.elements)])
            return expected
        if isinstance(target, T.TupleType) and len(target.elements) == len(e.elements):
            for el, et in zip(e.elements, target.elements):
                self.expr(el, et)
                self.coerce(el, et, lambda a, t: f"cannot use {a} as {t}")
            constfold.fold_aggregate(e, [(None, el) for el in e.elements])
            return expected
        if isinstance(target, T.ListType):
            for el in e.elements:
                self.expr(el, target.element)
                self.coerce(el, target.element, lambda a, t: f"list element of type {a} is not a {t}")
            constfold.fold_aggregate(e, [(None, el) for el in e.elements])
            return expected
        if isinstance(target, T.StackType) and len(e.elements) == target.size:
            for el in e.elements:
                self.expr(el, target.element)
            return expected
        for el in e.elements:
            self.expr(el)
        constfold.fold_aggregate(e, [(None, el) for el in e.elements])
        return T.TupleType(el.type for el in e.elements)

    def struct_expression(self, e: A.StructExpression, expected):
        target = T.strip_newtype(expected) if expected is not None else None
        if e.type_ref is not None:
            target = self.resolve(e.type_ref)
        if isinstance(target, T.StructLikeType):
            given = {}
            has_dots = False
            for f in e.fields:
                if f.name == "...":
                    has_dots = True
                    continue
                ft = target.field_type(f.name)
                if ft is None:
                    raise CompileError(f.loc, f"{target} has no field '{f.name}'")
                if f.name in given:
                    raise CompileError(f.loc, f"field '{f.name}' is given twice")
                self.expr(f.value, ft)
                self.coerce(f.value, ft, lambda a, t, n=f.name: f"field '{n}': cannot use {a} as {t}")
                given[f.name] = f
            missing = [n for n in target.field_names() if n not in given]
            if missing and not has_dots:
                raise CompileError(e.loc, f"missing field '{missing[0]}' of {target}")
            if not missing:
                constfold.fold_aggregate(e, [(n, given[n].value) for n in target.field_names()])
            return target
        for f in e.fields:
            if f.name != "...":
                self.expr(f.value)
        return T.StructExpressionType((f.name, f.value.type) for f in e.fields if f.name != "...")

    def invalid_header(self, e, expected):
        target = T.strip_newtype(expected) if expected is not None else None
        if not isinstance(target, (T.HeaderType, T.HeaderUnionType)):
            raise CompileError(e.loc, "'{#}' needs a header type from its context")
        return target

    def dont_care(self, e, expected):
        return T.DONTCARE

    def dots(self, e, expected):
        return T.DONTCARE

    def default_expr(self, e, expected):
        return T.DONTCARE

    def keyset_only(self, e, expected):
        raise CompileError(e.loc, f"'{expr_text(e)}' is only allowed in a select case or table entry")

    def select_in_expression(self, e, expected):
        raise CompileError(e.loc, "select is only allowed as a parser state's transition")

    def constructor_call(self, e: A.ConstructorCallExpression, expected):
        t = self.resolve(e.type_ref, allow_partial=True)
        decl = getattr(t, "decl", None)
        e.decl = decl
        if isinstance(t, T.ExternType):
            bound, e.param_args = self.extern_constructor(t, e.args, e.loc)
            return bound
        if isinstance(decl, (A.ParserDecl, A.ControlDecl)):
            e.param_args = self.bind_arguments(decl.ctor_params, e.args, decl.name, e.loc)
            return decl.type
        if isinstance(t, T.PackageType):
            bound, e.param_args = self.package_arguments(t, e.args, e.loc)
            return bound
        raise CompileError(e.loc, f"cannot construct a value of type {t}")

    def coerce(self, e: A.Expression, target: T.Type, message):
        """Make `e` usable as a `target` value: gives int constants the target's width;
        raises CompileError(message(actual, target)) when the types do not fit."""
        if target is None:
            return
        actual = e.type
        if actual == target or isinstance(target, (T.TypeVar, T.DontCareType)):
            return
        if isinstance(e, A.DontCareExpression):
            return
        base = T.strip_newtype(target)
        if isinstance(actual, T.IntType):
            if isinstance(base, T.BitsType):
                if e.const_value is not None:
                    e.const_value = base.wrap(e.const_value)
                e.type = target
                self.retype_int_tree(e, target)
                return
            if isinstance(base, T.IntType):
                return
            if isinstance(base, T.EnumType) and base.underlying is not None:
                if message is None:
                    return
        if isinstance(actual, T.EnumType) and actual.underlying is not None and actual.underlying == base:
            return  # a serializable enum value converts to its representation type
        if isinstance(actual, T.StructExpressionType) and isinstance(base, T.StructLikeType):
            e.type = target
            return
        if isinstance(actual, T.TupleType) and isinstance(base, (T.StructLikeType, T.TupleType)) and \
                isinstance(e, A.ListExpression):
            e.type = target
            return
        if isinstance(actual, T.StructLikeType) and isinstance(base, T.StructLikeType) and \
                actual.decl is base.decl and actual.type_args == base.type_args:
            return
        reason = None
        if isinstance(actual, T.ParserType) and isinstance(base, T.ParserType):
            reason = self.block_mismatch(actual, base)
            if reason is None:
                return
        if isinstance(actual, T.ExternType) and isinstance(base, T.ExternType) and actual.decl is base.decl \
                and all(a == b or isinstance(a, T.TypeVar) for a, b in zip(actual.type_args, base.type_args)):
            return  # type arguments the instantiation left open fit any
        if message is None:
            return
        raise CompileError(e.loc, message(actual, target) + (f" ({reason})" if reason else ""))

    def retype_int_tree(self, e, target):
        """Give the infinite-precision sub-expressions of e the width of `target`."""
        if isinstance(e, A.BinaryExpression) and e.op not in ("<<", ">>"):
            parts = (e.left, e.right)
        elif isinstance(e, A.UnaryExpression):
            parts = (e.operand,)
        elif isinstance(e, A.TernaryExpression):
            parts = (e.then, e.else_)
        elif isinstance(e, A.BinaryExpression):       # a shift: only the shifted value
            parts = (e.left,)
        else:
            parts = ()
        for part in parts:
            if isinstance(part.type, T.IntType):
                part.type = target
                if part.const_value is not None:
                    part.const_value = T.strip_newtype(target).wrap(part.const_value)
                self.retype_int_tree(part, target)

    def require_const(self, e: A.Expression, what: str):
        v = value(e)
        if v is None:
            raise CompileError(e.loc, f"{what} must be a compile-time constant")
        return v

    def require_sized(self, e: A.Expression):
        if isinstance(e.type, T.IntType):
            raise CompileError(e.loc, f"'{expr_text(e)}' needs a width here")

    _EXPRESSIONS = {
        A.IntLiteral: "int_literal",
        A.BoolLiteral: "bool_literal",
        A.StringLiteral: "string_literal",
        A.PathExpression: "path",
        A.MemberExpression: "member",
        A.UnaryExpression: "unary",
        A.BinaryExpression: "binary",
        A.TernaryExpression: "ternary",
        A.CastExpression: "cast",
        A.SliceExpression: "slice",
        A.IndexExpression: "index",
        A.ListExpression: "list_expression",
        A.StructExpression: "struct_expression",
        A.InvalidHeaderExpression: "invalid_header",
        A.DontCareExpression: "dont_care",
        A.DotsExpression: "dots",
        A.DefaultExpression: "keyset_only",
        A.MaskExpression: "keyset_only",
        A.RangeExpression: "keyset_only",
        A.SelectExpression: "select_in_expression",
        A.MethodCallExpression: "call",
        A.ConstructorCallExpression: "constructor_call",
    }
