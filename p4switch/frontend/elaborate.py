"""Elaboration of `main = V1Switch(...)` into an `ast.Pipeline`.

Walks the package arguments and every parser/control instantiated inside them, and names
each P4Info-visible object the way p4c does:

* objects declared in a block passed to the package: "<BlockName>.<name>"
  (e.g. "MyIngress.ipv4_lpm"); in a nested instance: "<BlockName>.<instance>.<name>";
* top-level actions: their plain name ("NoAction");
* `@name("x")` replaces the local name (relative), `@name(".x")` gives the absolute name "x".

Table key fields are named by the key expression's text ("hdr.ipv4.dstAddr"; a validity
key `h.isValid()` is named "h.$valid$"), unless the key element has @name.
"""

from __future__ import annotations

from . import ast as A
from .ast import iter_nodes
from .ast_expressions import string_argument
from . import types as T
from .errors import CompileError
from .printer import expr_text

# Width of a table key of type error: the code of an error value, 32 bits in both back ends.
ERROR_KEY_WIDTH = 32

V1MODEL_ROLES = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


def local_name(decl, default: str) -> tuple[str, bool]:
    """(name, is_absolute) from a declaration's @name annotation, or (default, False)."""
    ann = decl.annotation("name") if hasattr(decl, "annotation") else None
    if ann is not None:
        s = string_argument(ann)
        if s is not None:
            if s.startswith("."):
                return s[1:], True
            return s, False
    return default, False


def qualify(prefix: str, decl, default: str) -> str:
    name, absolute = local_name(decl, default)
    if absolute or not prefix:
        return name
    return f"{prefix}.{name}"


def key_field_name(k: A.KeyElement) -> str:
    name, _ = local_name(k, "")
    if name:
        return name
    e = k.expr
    if isinstance(e, A.MethodCallExpression) and e.builtin == "isValid":
        return f"{expr_text(e.callee.expr)}.$valid$"
    return expr_text(e)


class Elaborator:
    """Builds the Pipeline of one checked program."""

    def __init__(self, program: A.Program):
        self.program = program
        self.pipeline: A.Pipeline = None
        self.top_actions: dict = {}       # ActionDecl -> ActionInfo (top-level actions)
        self.top_externs: dict = {}       # Instantiation -> ExternInstance (top-level externs)
        self.table_action_order: list = []

    def run(self) -> A.Pipeline:
        main = self.program.main
        if main is None:
            raise CompileError(self.program.end_loc, "the program has no main V1Switch "
                                                     "instantiation (e.g. 'V1Switch(...) main;')")
        ptype = main.type
        if not isinstance(ptype, T.PackageType):
            raise CompileError(main.loc, "'main' must be an instance of a package")
        if ptype.name != "V1Switch":
            raise CompileError(main.loc, f"unsupported: package {ptype.name} is not supported by "
                                         "p4switch (only v1model's V1Switch)")
        self.pipeline = pipe = A.Pipeline(package=ptype.name, main=main)
        if len(ptype.type_args) == 2:
            pipe.headers_type, pipe.metadata_type = ptype.type_args
        self.top_level_externs()
        for (param, arg), role in zip(main.param_args, V1MODEL_ROLES):
            block = self.block_argument(arg, prefix=None)
            pipe.slots[param.name] = block
            setattr(pipe, role, block)
        self.collect_digests()
        self.collect_controller_headers()
        self.collect_called_actions()
        self.unattached_direct_externs()
        self.profile_table_defaults()
        return pipe

    def top_level_externs(self):
        """Extern objects instantiated outside any block keep their plain (absolute) names."""
        for d in self.program.declarations:
            if isinstance(d, A.Instantiation) and isinstance(d.decl, A.ExternDecl):
                self.top_externs[d] = self.extern_instance(d, d.decl, d.type, d.param_args,
                                                           local_name(d, d.name)[0], None)

    # -- blocks --------------------------------------------------------------------------------

    def block_argument(self, arg: A.Expression, prefix):
        """The BlockInstance for a package/constructor argument naming a parser or control."""
        if isinstance(arg, A.ConstructorCallExpression) and isinstance(arg.decl, (A.ParserDecl, A.ControlDecl)):
            name = qualify(prefix, arg.decl, arg.decl.name) if prefix else local_name(arg.decl, arg.decl.name)[0]
            return self.instantiate(arg.decl, name, arg.param_args, {})
        if isinstance(arg, A.PathExpression) and isinstance(arg.decl, A.Instantiation):
            inst = arg.decl
            if isinstance(inst.decl, (A.ParserDecl, A.ControlDecl)):
                name = local_name(inst.decl, inst.decl.name)[0] if prefix is None else qualify(prefix, inst, inst.name)
                return self.instantiate(inst.decl, name, inst.param_args, {})
        raise CompileError(arg.loc, f"'{expr_text(arg)}' must be a parser or control instance")

    def instantiate(self, decl, name: str, param_args, outer_args: dict,
                    outer: A.BlockInstance = None) -> A.BlockInstance:
        """Elaborate one instance of `decl`; `outer` is the block declaring it (None for
        the package's arguments), whose parser/control instances may be passed in."""
        block = A.BlockInstance(decl=decl, name=name)
        for param, arg in param_args:
            value = self.ctor_value(param, arg, block, outer_args, outer)
            block.ctor_args[param.name] = value
            if isinstance(value, A.BlockInstance):
                # `param.apply(...)` inside the block runs the instance passed in (shared
                # with every other block it is passed to, and with `outer`).
                block.children[param.name] = value
        for local in decl.locals:
            if isinstance(local, A.ActionDecl):
                block.actions[local.name] = self.action_info(local, block)
            elif isinstance(local, A.Instantiation):
                self.local_instance(local, block)
            elif isinstance(local, A.ValueSetDecl):
                info = A.ValueSetInfo(name=qualify(name, local, local.name), decl=local,
                                      size=self.block_const(local.size, block),
                                      element_type=local.type.element, block=block)
                block.value_sets[local.name] = info
                self.pipeline.value_sets.append(info)
        for local in decl.locals:
            if isinstance(local, A.TableDecl):
                info = self.table_info(local, block)
                block.tables[local.name] = info
                self.pipeline.tables.append(info)
        self.direct_invocations(decl, block)
        return block

    def ctor_value(self, param, arg, block, outer_args, outer=None):
        if arg is None:
            arg = param.default
            if arg is None:
                return None
        if arg.const_value is not None:
            return arg.const_value
        if isinstance(arg, A.PathExpression) and isinstance(arg.decl, A.Parameter) and arg.decl.name in outer_args:
            return outer_args[arg.decl.name]
        if isinstance(arg, A.ConstructorCallExpression):
            if isinstance(arg.decl, (A.ParserDecl, A.ControlDecl)):
                return self.instantiate(arg.decl, f"{block.name}.{param.name}", arg.param_args, block.ctor_args)
            if isinstance(arg.decl, A.ExternDecl):
                return self.extern_instance(None, arg.decl, arg.type, arg.param_args,
                                            f"{block.name}.{param.name}", block)
        if isinstance(arg, A.PathExpression) and isinstance(arg.decl, A.Instantiation):
            if isinstance(arg.decl.decl, (A.ParserDecl, A.ControlDecl)):
                return self.passed_block(arg, outer)
            return self.extern_for_decl(arg.decl) or arg.decl
        raise CompileError(arg.loc, f"constructor argument '{expr_text(arg)}' is not a compile-time value")

    @staticmethod
    def passed_block(arg: A.PathExpression, outer: A.BlockInstance) -> A.BlockInstance:
        """The instance a constructor argument names: one declared earlier in `outer`."""
        child = outer.children.get(arg.decl.name) if outer is not None else None
        if child is None or child.decl is not arg.decl.decl:
            raise CompileError(arg.loc, f"unsupported: passing instance '{arg.decl.name}' as a "
                                        "constructor argument here (only an instance declared "
                                        "earlier in the same block)")
        return child

    def local_instance(self, inst: A.Instantiation, block: A.BlockInstance):
        if isinstance(inst.decl, (A.ParserDecl, A.ControlDecl)):
            child = self.instantiate(inst.decl, qualify(block.name, inst, inst.name), inst.param_args,
                                     block.ctor_args, outer=block)
            block.children[inst.name] = child
        elif isinstance(inst.decl, A.ExternDecl):
            ext = self.extern_instance(inst, inst.decl, inst.type, inst.param_args,
                                       qualify(block.name, inst, inst.name), block)
            block.externs[inst.name] = ext
        else:
            raise CompileError(inst.loc, f"cannot instantiate {inst.type} inside {block.decl.name}")

    def direct_invocations(self, decl, block: A.BlockInstance):
        """`Ctrl.apply()` without an instance creates an anonymous instance named like its type."""
        bodies = [decl.body] if isinstance(decl, A.ControlDecl) else decl.states
        for body in bodies:
            for n in iter_nodes(body):
                if isinstance(n, A.MethodCallExpression) and n.call_kind == "block_apply" and \
                        isinstance(n.callee_decl, (A.ParserDecl, A.ControlDecl)):
                    target = n.callee_decl
                    if target.name not in block.children:
                        block.children[target.name] = self.instantiate(
                            target, f"{block.name}.{target.name}", [], block.ctor_args)

    def extern_instance(self, inst, extern_decl, etype, param_args, name, block) -> A.ExternInstance:
        args = {}
        for param, arg in param_args:
            if arg is None:
                continue
            if isinstance(arg, A.PathExpression) and isinstance(arg.decl, A.Instantiation):
                value = self.extern_for_decl(arg.decl) or arg.decl
            else:
                value = self.block_const(arg, block)
            args[param.name] = value
        type_args = list(etype.type_args) if isinstance(etype, T.ExternType) else []
        ext = A.ExternInstance(name=name, extern=extern_decl.name, decl=inst, extern_decl=extern_decl,
                               block=block, type_args=type_args, args=args,
                               annotations=list(inst.annotations) if inst is not None else [])
        size = args.get("size")
        if isinstance(size, int) and not isinstance(size, bool):
            ext.size = size
        if extern_decl.name == "register" and type_args and not isinstance(type_args[0], T.TypeVar):
            ext.element_width = T.bit_width(type_args[0])
        self.pipeline.externs.append(ext)
        return ext

    # -- actions and tables --------------------------------------------------------------------

    def action_info(self, decl: A.ActionDecl, block) -> A.ActionInfo:
        name = qualify(block.name if block else "", decl, decl.name)
        params = []
        for p in decl.params:
            if p.direction is None:
                params.append(A.ActionParamInfo(name=local_name(p, p.name)[0], bitwidth=self.width_or_none(p.type),
                                                decl=p, annotations=list(p.annotations)))
        return A.ActionInfo(name=name, decl=decl, params=params, block=block,
                            annotations=list(decl.annotations))

    def width_or_none(self, t):
        try:
            return T.bit_width(t)
        except ValueError:
            return None

    def width(self, t, where) -> int:
        try:
            return T.bit_width(t)
        except ValueError:
            raise CompileError(where.loc, f"type {t} has no fixed bit width") from None

    def key_width(self, expr) -> int:
        # A key of type error matches the 32-bit code both back ends give error values.
        if isinstance(T.strip_newtype(expr.type), T.ErrorType):
            return ERROR_KEY_WIDTH
        return self.width(expr.type, expr)

    def action_for(self, decl: A.ActionDecl, block: A.BlockInstance) -> A.ActionInfo:
        """The ActionInfo of an action referenced from `block` (local or top level)."""
        b = block
        while b is not None:
            info = b.actions.get(decl.name)
            if info is not None and info.decl is decl:
                return info
            b = None
        info = self.top_actions.get(decl)
        if info is None:
            info = self.action_info(decl, None)
            self.top_actions[decl] = info
        return info

    def register_action(self, info: A.ActionInfo):
        """Make an action P4Info-visible (it is used by a table): its parameters need widths."""
        for p in info.params:
            if p.bitwidth is None:
                raise CompileError(p.decl.loc, f"parameter '{p.decl.name}' of action '{info.decl.name}' "
                                               f"has type {p.decl.type}, which the control plane cannot set")
        # Several declarations may share one absolute name (P4-14 translations give every copy
        # of an action `@name(".NoAction")`): P4Info lists the name once.
        if all(a.name != info.name for a in self.pipeline.actions):
            self.pipeline.actions.append(info)

    def table_info(self, decl: A.TableDecl, block: A.BlockInstance) -> A.TableInfo:
        info = A.TableInfo(name=qualify(block.name, decl, decl.name), decl=decl, block=block,
                           annotations=list(decl.annotations))
        for k in decl.key:
            info.keys.append(A.KeyFieldInfo(name=key_field_name(k), match_kind=k.match_kind,
                                            bitwidth=self.key_width(k.expr), expr=k.expr,
                                            annotations=list(k.annotations)))
        for ref in decl.actions:
            action = self.action_for(ref.decl, block)
            self.register_action(action)
            scope = "TABLE_AND_DEFAULT"
            if ref.annotation("tableonly"):
                scope = "TABLE_ONLY"
            elif ref.annotation("defaultonly"):
                scope = "DEFAULT_ONLY"
            info.actions.append(A.TableActionInfo(action=action, scope=scope, ref=ref,
                                                  annotations=list(ref.annotations)))
        if decl.default_action is not None:
            info.default_action = self.action_for(decl.default_action.decl, block)
            info.default_args = [a for p, a in decl.default_action.param_args if p.direction is None]
            info.default_is_const = decl.default_is_const
        else:
            info.default_action = self.no_action(decl, info)
        info.const_entries = list(decl.entries)
        info.entries_const = decl.entries_const
        props = decl.properties
        if "size" in props:
            info.size = self.block_const(props["size"].value, block)
        if "largest_priority_wins" in props:
            info.largest_priority_wins = bool(props["largest_priority_wins"].value.const_value)
        if "priority_delta" in props:
            info.priority_delta = self.block_const(props["priority_delta"].value, block)
        if "support_timeout" in props:
            info.idle_timeout = bool(props["support_timeout"].value.const_value)
        if "implementation" in props:
            info.implementation = self.instance_ref(props["implementation"].value, block, info.name,
                                                    props["implementation"].annotations)
        for prop, attr, kind in (("counters", "direct_counter", "direct_counter"),
                                 ("meters", "direct_meter", "direct_meter")):
            if prop in props:
                ext = self.instance_ref(props[prop].value, block, info.name)
                if ext.extern != kind:
                    raise CompileError(props[prop].value.loc, f"table property {prop} needs a {kind}, "
                                                              f"not a {ext.extern}")
                if ext.owner_table is not None:
                    raise CompileError(props[prop].value.loc, f"{ext.name} is already used by table "
                                                              f"{ext.owner_table.name}")
                ext.owner_table = info
                setattr(info, attr, ext)
        return info

    def block_const(self, e: A.Expression, block: A.BlockInstance):
        """A constant, or a constructor parameter's value in this instance."""
        if e.const_value is not None:
            return e.const_value
        if isinstance(e, A.PathExpression) and isinstance(e.decl, A.Parameter) and block is not None:
            return block.ctor_args.get(e.decl.name)
        raise CompileError(e.loc, f"'{expr_text(e)}' must be a compile-time constant")

    def no_action(self, decl, info):
        """The implicit default action of a table without default_action: NoAction. When the
        table does not list it, it is added as a default-only action (as p4c does)."""
        for ta in info.actions:
            if ta.action.decl.name == "NoAction":
                return ta.action
        found = self.program.find("NoAction")
        if isinstance(found, A.ActionDecl):
            action = self.action_for(found, None)
            self.register_action(action)
            info.actions.append(A.TableActionInfo(action=action, scope="DEFAULT_ONLY"))
            return action
        return None

    def extern_for_decl(self, inst: A.Instantiation):
        """The ExternInstance already made for an extern Instantiation (most recent), or None."""
        for ext in reversed(self.pipeline.externs):
            if ext.decl is inst:
                return ext
        return None

    def instance_ref(self, e: A.Expression, block: A.BlockInstance, table_name: str,
                     annotations=()) -> A.ExternInstance:
        """The extern instance a table property names; an instance constructed in the
        property itself (`implementation = action_profile(128);`) is named after the table,
        or as the property's `@name` says (p4c takes that name as it is), and carries the
        property's annotations (`@max_group_size`, ...)."""
        if isinstance(e, A.PathExpression) and isinstance(e.decl, A.Instantiation):
            ext = block.externs.get(e.decl.name)
            if ext is not None and ext.decl is e.decl:
                return ext
            ext = self.extern_for_decl(e.decl)
            if ext is not None:
                return ext
        if isinstance(e, A.ConstructorCallExpression) and isinstance(e.decl, A.ExternDecl):
            named = A.find_annotation(list(annotations), "name")
            name = string_argument(named).lstrip(".") if named and string_argument(named) else table_name
            ext = self.extern_instance(None, e.decl, e.type, e.param_args, name, block)
            ext.annotations = [a for a in annotations if a.name != "name"]
            return ext
        raise CompileError(e.loc, f"'{expr_text(e)}' must name an extern instance")

    # -- digests and controller headers --------------------------------------------------------

    def collect_digests(self):
        seen = {}
        tuple_calls = 0
        blocks = list(self.pipeline.slots.values())
        visited = set()
        while blocks:
            b = blocks.pop(0)
            if id(b.decl) in visited:
                continue
            visited.add(id(b.decl))
            blocks.extend(b.children.values())
            for n in iter_nodes(b.decl):
                if isinstance(n, A.MethodCallExpression) and n.call_kind == "extern_function" and \
                        n.callee_decl.name == "digest" and len(n.param_args) == 2:
                    data = n.param_args[1][1]
                    t = T.strip_newtype(data.type)
                    if not isinstance(t, (T.StructType, T.TupleType)):
                        raise CompileError(data.loc, f"digest data must be a struct or a list, "
                                                     f"not {t}")
                    if isinstance(t, T.TupleType):
                        # a list `{a, b}`: one digest per call, named as p4c names them
                        # (digest_0, digest_1, ... in the order of the calls: p4c's P4Info;
                        # its bmv2 JSON gives each call its own learn list)
                        info = A.DigestInfo(name=f"digest_{tuple_calls}", type=t)
                        tuple_calls += 1
                        self.pipeline.digests.append(info)
                    else:
                        info = seen.get(t)
                        if info is None:
                            info = seen[t] = A.DigestInfo(name=local_name(t.decl, t.name)[0],
                                                          type=t)
                            self.pipeline.digests.append(info)
                    info.calls.append(n)

    def reachable_blocks(self):
        """Every BlockInstance of the pipeline (each declaration once), package slots first."""
        found, pending, seen = [], list(self.pipeline.slots.values()), set()
        while pending:
            b = pending.pop(0)
            if b is None or id(b.decl) in seen:
                continue
            seen.add(id(b.decl))
            found.append(b)
            pending.extend(b.children.values())
        return found

    def collect_called_actions(self):
        """Actions called directly (`a(x);` in an apply block or a function): P4Info lists
        them as p4c does. A call inside another action's body does not list the callee: p4c
        inlines it into its caller, so only the caller is an action of its P4Info."""
        names = {a.name for a in self.pipeline.actions}
        for b in self.reachable_blocks():
            in_actions = {id(inner) for n in iter_nodes(b.decl) if isinstance(n, A.ActionDecl)
                          for inner in iter_nodes(n) if inner is not n}
            for n in iter_nodes(b.decl):
                if id(n) in in_actions:
                    continue
                if isinstance(n, A.MethodCallExpression) and n.call_kind == "action":
                    info = self.action_for(n.callee_decl, b)
                    if info.name not in names and all(p.bitwidth is not None for p in info.params):
                        names.add(info.name)
                        self.pipeline.called_actions.append(info)

    def unattached_direct_externs(self):
        """A direct counter or meter no table uses is only a warning, as in p4c (which drops
        the unused instance); P4Info leaves it out."""
        for ext in self.pipeline.externs:
            if ext.extern in ("direct_counter", "direct_meter") and ext.owner_table is None:
                where = f"{ext.decl.loc}: " if ext.decl is not None else ""
                self.pipeline.warnings.append(f"{where}warning: {ext.extern} {ext.name} is not "
                                              "used by any table")

    def profile_table_defaults(self):
        """A table with an action profile or selector runs no action on a miss, as on bmv2
        (p4c's bmv2 back end gives it no default entry): a default action other than
        NoAction is only a warning, with p4c's words; P4Info still names it."""
        for info in self.pipeline.tables:
            default = info.default_action
            if info.implementation is not None and default is not None and \
                    default.name != "NoAction":
                where = f"{info.decl.loc}: " if info.decl is not None else ""
                self.pipeline.warnings.append(
                    f"{where}warning: Target does not support default_action for {info.name} "
                    f"(due to action profiles): a miss runs no action")

    def collect_controller_headers(self):
        for d in self.program.declarations:
            if isinstance(d, A.HeaderDecl):
                ann = d.annotation("controller_header")
                if ann is not None:
                    name = string_argument(ann)
                    if name is None:
                        raise CompileError(ann.loc, '@controller_header needs a string, e.g. @controller_header("packet_in")')
                    self.pipeline.controller_headers.append(A.ControllerHeaderInfo(name=name, type=d.type, decl=d))


def elaborate(program: A.Program) -> A.Pipeline:
    """The Pipeline of `program`; CompileError when it has no `main`."""
    return Elaborator(program).run()
