"""Type inference for type syntax (the `TypeTyping` part of `typeinfer.TypeInference`): the
`types.Type` each `TypeRef` denotes, specialization of generic structs and externs,
substitution and unification of type variables, parser/control signature matching."""

from __future__ import annotations

from . import ast as A
from . import types as T
from .constfold import value
from .errors import CompileError


class TypeTyping:
    """Resolves type syntax to types; mixed into `typeinfer.TypeInference`."""

    def resolve(self, ref: A.TypeRef, allow_partial=False) -> T.Type:
        """The Type a TypeRef denotes (also stored in ref.type)."""
        t = self._resolve(ref, allow_partial)
        ref.type = t
        return t

    def _resolve(self, ref, allow_partial):
        if isinstance(ref, A.BaseTypeRef):
            n = ref.name
            if n in ("bit", "int", "varbit"):
                if ref.width is None:
                    return T.INT
                self.expr(ref.width, T.INT)
                w = self.require_const(ref.width, "type width")
                if not isinstance(w, int) or isinstance(w, bool) or w < 0 or (n != "bit" and w == 0):
                    raise CompileError(ref.width.loc, f"invalid width {w} for {n}")
                if n == "varbit":
                    return T.VarbitType(w)
                return T.BitsType(w, n == "int")
            return {"bool": T.BOOL, "string": T.STRING, "void": T.VOID, "error": self.error_type,
                    "match_kind": self.match_kind_type}[n]
        if isinstance(ref, A.HeaderStackTypeRef):
            elem = self.resolve(ref.element)
            self.expr(ref.size, T.INT)
            size = self.require_const(ref.size, "header stack size")
            if not isinstance(elem, (T.HeaderType, T.HeaderUnionType)):
                raise CompileError(ref.loc, f"stack element type {elem} must be a header or header_union")
            return T.StackType(elem, size)
        if isinstance(ref, A.TupleTypeRef):
            if ref.is_list:
                if len(ref.elements) != 1:
                    raise CompileError(ref.loc, "list<T> takes one type argument")
                return T.ListType(self.resolve(ref.elements[0]))
            return T.TupleType(self.resolve(e) for e in ref.elements)
        if isinstance(ref, A.DontCareTypeRef):
            return T.DONTCARE
        if isinstance(ref, A.NamedTypeRef):
            decl = ref.decl
            args = [self.resolve(a) for a in ref.type_args]
            return self.named_type(decl, args, ref, allow_partial)
        raise CompileError(ref.loc, f"unexpected type syntax {type(ref).__name__}")

    def named_type(self, decl, args, ref, allow_partial):
        params = getattr(decl, "type_params", [])
        if isinstance(decl, A.TypeParameter):
            return decl.type
        if isinstance(decl, A.TypedefDecl):
            return decl.type
        if args and len(args) != len(params) and not (allow_partial and len(args) < len(params)):
            message = f"{decl.name} expects {len(params)} type arguments, got {len(args)}"
            raise CompileError(ref.loc, message + self.v1model_version_hint(decl, args, params))
        if not args and params and not isinstance(decl, (A.ExternDecl, A.PackageTypeDecl,
                                                         A.ParserTypeDecl, A.ControlTypeDecl)):
            raise CompileError(ref.loc, f"{decl.name} needs {len(params)} type arguments")
        if isinstance(decl, A.StructLikeDecl):
            if not args:
                return decl.type
            return self.specialize_struct(decl, tuple(args))
        if isinstance(decl, A.EnumDecl):
            return decl.type
        full = tuple(args) + tuple(tp.type for tp in params[len(args):])
        if isinstance(decl, A.ExternDecl):
            return T.ExternType(decl.name, decl, full)
        if isinstance(decl, (A.ParserTypeDecl, A.ParserDecl)):
            return T.ParserType(decl.name, decl, decl.params, full)
        if isinstance(decl, (A.ControlTypeDecl, A.ControlDecl)):
            return T.ControlType(decl.name, decl, decl.params, full)
        if isinstance(decl, A.PackageTypeDecl):
            return T.PackageType(decl.name, decl, decl.params, full)
        raise CompileError(ref.loc, f"'{decl.name}' is not a type")

    # The externs of v1model.p4 that are generic in their index type only from version 20200408:
    # name -> (the generic form, the number of type parameters of the older form).
    V1MODEL_INDEXED = {"counter": ("counter<I>", 0), "meter": ("meter<I>", 0),
                       "register": ("register<T, I>", 1)}

    def v1model_version_hint(self, decl, args, params) -> str:
        """Why a v1model counter, meter or register takes one type argument fewer than given:
        the program is compiled at a V1MODEL_VERSION before 20200408."""
        generic, old_count = self.V1MODEL_INDEXED.get(decl.name, (None, None))
        if (generic is None or not isinstance(decl, A.ExternDecl) or len(params) != old_count
                or not decl.loc.file.endswith("v1model.p4") or len(args) != old_count + 1):
            return ""
        found = self.program.find("__v1model_version")
        have = value(found.value) if isinstance(found, A.ConstantDecl) else None
        version = f" (this program has {have})" if have is not None else ""
        return (f"; v1model.p4 declares {generic} only from V1MODEL_VERSION 20200408 on{version}:"
                f" #define V1MODEL_VERSION 20200408 before #include <v1model.p4>")

    def specialize_struct(self, decl: A.StructLikeDecl, args: tuple):
        key = (id(decl), args)
        cached = self._struct_cache.get(key)
        if cached is None:
            mapping = dict(zip(decl.type_params, args))
            fields = [(n, self.substitute(t, mapping)) for n, t in decl.type.fields]
            cached = type(decl.type)(decl.name, decl, fields, args)
            self._struct_cache[key] = cached
        return cached

    def substitute(self, t: T.Type, mapping: dict) -> T.Type:
        """Replace type variables (keyed by TypeParameter decl) in t."""
        if not mapping:
            return t
        if isinstance(t, T.TypeVar):
            return mapping.get(t.decl, t)
        if isinstance(t, T.StructLikeType) and t.type_args:
            args = tuple(self.substitute(a, mapping) for a in t.type_args)
            if args == t.type_args:
                return t
            return self.specialize_struct(t.decl, args)
        if isinstance(t, T.StackType):
            return T.StackType(self.substitute(t.element, mapping), t.size)
        if isinstance(t, T.TupleType):
            return T.TupleType(self.substitute(e, mapping) for e in t.elements)
        if isinstance(t, (T.ExternType, T.ParserType, T.PackageType)) and t.type_args:
            args = tuple(self.substitute(a, mapping) for a in t.type_args)
            if isinstance(t, T.ExternType):
                return T.ExternType(t.name, t.decl, args)
            return type(t)(t.name, t.decl, t.params, args)
        return t

    def block_param_types(self, t: T.ParserType) -> list:
        """Apply-parameter types of a parser/control type, with its type arguments applied."""
        decl = t.decl
        mapping = dict(zip(getattr(decl, "type_params", []), t.type_args))
        return [self.substitute(p.type, mapping) for p in decl.params]

    def block_fits(self, actual: T.ParserType, want: T.ParserType) -> bool:
        """Does a parser/control declaration match a parser/control type's signature?"""
        return self.block_mismatch(actual, want) is None

    def block_mismatch(self, actual: T.ParserType, want: T.ParserType):
        """Why a parser/control declaration does not match a parser/control type's
        signature (directions and types of the apply parameters must be equal), or None."""
        if isinstance(actual, T.ControlType) != isinstance(want, T.ControlType):
            kind = "a control" if isinstance(actual, T.ControlType) else "a parser"
            return f"{actual.name} is {kind}"
        have_params = actual.decl.params
        want_params = want.decl.params
        if len(have_params) != len(want_params):
            return f"{actual.name} has {len(have_params)} parameters, {want} has {len(want_params)}"
        for h, w, wt in zip(have_params, want_params, self.block_param_types(want)):
            if h.direction != w.direction:
                return (f"parameter '{h.name}' is {h.direction or 'directionless'}, {want} has "
                        f"{w.direction or 'directionless'}")
            if h.type != wt:
                return f"parameter '{h.name}' has type {h.type}, {want} has {wt}"
        return None

    def unify(self, want: T.Type, have: T.Type, mapping: dict) -> bool:
        """Bind type variables of `want` so that `have` fits it; False on a mismatch."""
        if isinstance(want, T.TypeVar):
            bound = mapping.get(want.decl)
            if bound is None:
                if isinstance(have, (T.IntType, T.StructExpressionType)) or have is None:
                    return True  # decided later (or by the argument's own type)
                mapping[want.decl] = have
                return True
            return self.unify(bound, have, mapping) if isinstance(bound, T.TypeVar) else True
        if isinstance(want, T.StructLikeType) and want.type_args and isinstance(have, T.StructLikeType) \
                and have.decl is want.decl:
            return all(self.unify(w, h, mapping) for w, h in zip(want.type_args, have.type_args))
        if isinstance(want, T.StackType) and isinstance(have, T.StackType):
            return self.unify(want.element, have.element, mapping)
        if isinstance(want, T.TupleType) and isinstance(have, T.TupleType) and \
                len(want.elements) == len(have.elements):
            return all(self.unify(w, h, mapping) for w, h in zip(want.elements, have.elements))
        if isinstance(want, T.ExternType) and isinstance(have, T.ExternType) and want.decl is have.decl:
            return all(self.unify(w, h, mapping) for w, h in zip(want.type_args, have.type_args))
        if isinstance(want, T.ParserType) and isinstance(have, T.ParserType) and \
                isinstance(want, T.ControlType) == isinstance(have, T.ControlType):
            wp = self.block_param_types(want)
            hp = self.block_param_types(have) if have.decl is not want.decl else list(have.type_args)
            if have.decl is want.decl:
                return all(self.unify(w, h, mapping) for w, h in zip(want.type_args, have.type_args))
            if len(wp) != len(hp):
                return False
            return all(self.unify(w, h, mapping) for w, h in zip(wp, hp))
        return True

    def has_typevar(self, t) -> bool:
        if isinstance(t, T.TypeVar):
            return True
        if isinstance(t, (T.StructLikeType, T.ExternType, T.ParserType)):
            return any(self.has_typevar(a) for a in t.type_args)
        if isinstance(t, T.StackType):
            return self.has_typevar(t.element)
        if isinstance(t, T.TupleType):
            return any(self.has_typevar(a) for a in t.elements)
        return False


class TypeName(T.Type):
    """Internal: the 'type' of a name that denotes a type (as in `MyEnum.A`)."""

    __slots__ = ("decl",)

    def __init__(self, decl):
        self.decl = decl

    def __str__(self):
        return f"type {self.decl.name}"


class BuiltinMethod(T.Type):
    """Internal: the 'type' of a method member (`hdr.isValid`, `r.read`, `t.apply`)
    before it is called; `owner` is the type of the object."""

    __slots__ = ("name", "owner")

    def __init__(self, name, owner):
        self.name = name
        self.owner = owner

    def __str__(self):
        return f"method {self.name}"
