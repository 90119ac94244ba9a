"""The back end: a checked, elaborated P4 program to one generated Python module.

`compile_pipeline(program)` writes Python source for the whole v1model pipeline once per
program: a class per header/struct type (pytypes.py), a function per parser/control
instance (actions and tables nested inside their control's function), and entry points
`run_parser`, `run_verify`, `run_ingress`, `run_egress`, `run_compute`, `run_deparser`,
`new_headers`, `new_metadata`, `new_standard_metadata`. The source is compiled with
`compile()` once; each Switch executes the code object in a namespace holding its own tables
and externs (runtime/switch.py), so per-packet work is straight-line Python with no AST walk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.errors import CompileError
from ..runtime.tables import TableSpec
from .body import FunctionCompiler, param_type
from .codegen import CodeWriter, Names
from .exprs import is_composite, source_text, strip
from .externs import STATELESS_EXTERN_OBJECTS, SUPPORTED_EXTERN_OBJECTS
from .parser_compiler import ParserCompilerMixin
from .table_compiler import TableCompilerMixin
from .pytypes import TypeRegistry, field_attr, scalar_width

PRELUDE = '''\
from struct import Struct as _Struct, error as _StructError
_from_bytes = int.from_bytes

def _div(a, b):
    return a // b if b else 0

def _mod(a, b):
    return a % b if b else 0

def _shl(a, b, width):
    return a << b if b < width else 0

def _hash_value(h, base, maximum):
    return base + h % maximum if maximum else base

def _format_log(msg, values):
    for v in values:
        msg = msg.replace("{}", str(v), 1)
    return msg
'''


@dataclass
class ExternSpec:
    """A stateful extern instance the Switch creates (register, counter, meter, ...)."""

    global_name: str
    name: str
    kind: str
    size: int | None = None
    width: int | None = None
    signed: bool = False
    unit: str | None = None          # counter type / meter type member name
    table: str | None = None         # owner table of a direct counter/meter
    algorithm: str | None = None     # hash algorithm of an action selector


@dataclass
class CompiledProgram:
    """What a Switch needs: the code object and the specs of its run-time objects."""

    source: str
    code: Any
    tables: list[TableSpec] = field(default_factory=list)        # global T<i>
    externs: list[ExternSpec] = field(default_factory=list)
    hashes: list[tuple[str, str]] = field(default_factory=list)  # (global, algorithm)
    value_sets: list[tuple[str, str, int]] = field(default_factory=list)
    field_lists: dict[int, list[str]] = field(default_factory=dict)
    error_codes: dict[str, int] = field(default_factory=dict)
    digests: list[str] = field(default_factory=list)


class ProgramCompiler(TableCompilerMixin, ParserCompilerMixin):
    """Writes the module for one elaborated program (tables: table_compiler.py, parsers:
    parser_compiler.py)."""

    def __init__(self, program: A.Program):
        if program.pipeline is None:
            raise CompileError(None, "the program has no main V1Switch instantiation")
        self.program = program
        self.pipeline = program.pipeline
        if self.pipeline.package != "V1Switch":
            raise CompileError(program.main.loc if program.main else None,
                               f"package {self.pipeline.package} is not supported "
                               "(only v1model's V1Switch)")
        self.types = TypeRegistry()
        self.names = Names()
        self.chunks: list[CodeWriter] = []
        self.error_codes = self._error_codes()
        self._table_index = {id(t): i for i, t in enumerate(self.pipeline.tables)}
        self._extern_globals: dict[int, str] = {}
        self.extern_specs: list[ExternSpec] = []
        self.hashes: list[tuple[str, str]] = []
        self.value_sets: list[tuple[str, str, int]] = []
        self._value_set_globals: dict = {}
        self._block_fns: dict[int, str] = {}
        self._functions: dict = {}
        self._global_actions: dict = {}
        self._action_names = {id(a.decl): a.name for a in self.pipeline.actions}
        self.table_specs = [None] * len(self.pipeline.tables)
        self._synthetic_lists: dict[int, list[str]] = {}

    # -- errors, names of run-time objects ----------------------------------------------------

    def _error_codes(self) -> dict[str, int]:
        codes: dict[str, int] = {}
        for decl in self.program.declarations:
            if isinstance(decl, A.ErrorDecl):
                for m in decl.members:
                    codes.setdefault(m.name, len(codes))
        return codes

    def error_code(self, name: str, node) -> int:
        try:
            return self.error_codes[name]
        except KeyError:
            raise CompileError(node.loc, f"unknown error {name}") from None

    def extern_instance(self, expr, block):
        """The ExternInstance an instance expression (a PathExpression) refers to."""
        decl = getattr(expr, "decl", None)
        name = getattr(expr, "name", None)
        if block is not None and name in block.externs and \
                block.externs[name].decl is decl:
            return block.externs[name]
        if block is not None and isinstance(decl, A.Parameter) and \
                isinstance(block.ctor_args.get(name), A.ExternInstance):
            return block.ctor_args[name]          # an extern passed to a constructor
        for inst in self.pipeline.externs:
            if inst.decl is decl and decl is not None:
                return inst
        raise CompileError(expr.loc, f"extern instance {name} is not supported here")

    def extern_global(self, inst) -> str:
        key = id(inst)
        if key not in self._extern_globals:
            if inst.extern not in SUPPORTED_EXTERN_OBJECTS:
                raise CompileError(inst.decl.loc if inst.decl else None,
                                   f"extern {inst.extern} is not supported")
            gname = f"X{len(self._extern_globals)}"
            self._extern_globals[key] = gname
            self.extern_specs.append(self._extern_spec(gname, inst))
        return self._extern_globals[key]

    def _extern_spec(self, gname, inst) -> ExternSpec:
        spec = ExternSpec(gname, inst.name, inst.extern, size=inst.size)
        if inst.extern == "register":
            t = strip(inst.type_args[0]) if inst.type_args else None
            spec.width = scalar_width(t) if t is not None else inst.element_width
            if spec.width is None and self.types.packs(t):
                spec.width = T.bit_width(t)        # a struct of bit fields: its bits, packed
            spec.signed = isinstance(t, T.BitsType) and t.signed
            if spec.width is None:
                raise CompileError(inst.decl.loc if inst.decl else None,
                                   f"register {inst.name} of type {t} is not supported")
        if inst.extern in ("counter", "direct_counter", "meter", "direct_meter"):
            unit = inst.args.get("type")
            spec.unit = unit if isinstance(unit, str) else "packets"
        if inst.owner_table is not None:
            spec.table = inst.owner_table.name
        if inst.extern == "action_selector":
            spec.algorithm = inst.args.get("algorithm")
            spec.width = inst.args.get("outputWidth")
            if not isinstance(spec.algorithm, str):
                raise CompileError(inst.decl.loc if inst.decl else None,
                                   f"{inst.name}: the hash algorithm must be a constant")
        return spec

    def hash_global(self, algo: str, node) -> str:
        gname = f"HASH{len(self.hashes)}"
        self.hashes.append((gname, algo))
        return gname

    def digest_name(self, call, data) -> str:
        for d in self.pipeline.digests:
            if any(c is call for c in d.calls):
                return d.name
        t = strip(data.type)
        return getattr(t, "name", "digest")

    def value_set_global(self, decl, block) -> str:
        key = (id(decl), id(block))
        if key not in self._value_set_globals:
            gname = f"VS{len(self._value_set_globals)}"
            self._value_set_globals[key] = gname
            size = decl.size.const_value if decl.size is not None else 0
            prefix = block.name + "." if block is not None else ""
            self.value_sets.append((gname, prefix + decl.name, size or 0))
        return self._value_set_globals[key]

    # -- callables -----------------------------------------------------------------------------

    def global_action(self, decl) -> str:
        if decl not in self._global_actions:
            name = self.names.of(("action", decl), "act_" + decl.name)
            self._global_actions[decl] = name
            w = CodeWriter()
            self.chunks.append(w)
            self.write_action(w, decl, name, outer=None, block=None)
        return self._global_actions[decl]

    def function(self, decl) -> str:
        if decl not in self._functions:
            if decl.type_params:
                raise CompileError(decl.loc, f"generic function {decl.name} is not supported")
            name = self.names.of(("function", decl), "fn_" + decl.name)
            self._functions[decl] = name
            w = CodeWriter()
            self.chunks.append(w)
            fc = FunctionCompiler(self, w, returns_value=True)
            params, fresh = fc.function_params(decl.params)
            fc.out_params = fc.returned_params(decl.params)
            w.line(f"def {name}({', '.join(params)}):")
            with w.indent():
                fc.init_fresh(fresh)
                returns = ["None"] if fc._returns_value(decl) else []
                self.body_keeping_outs_on_exit(fc, decl.body, returns)
                fc.finish_return()
        return self._functions[decl]

    def write_action(self, w, decl, name, outer, block) -> None:
        fc = FunctionCompiler(self, w, block=block, outer=outer)
        params, fresh = fc.function_params(decl.params)
        fc.out_params = fc.returned_params(decl.params)
        w.line(f"def {name}({', '.join(params)}):")
        with w.indent():
            mark = w.mark()
            fc.trace(f"Action {self.action_name(decl, block)}")
            fc.init_fresh(fresh)
            self.body_keeping_outs_on_exit(fc, decl.body, [])
            fc.finish_return()
            if fc.nonlocals:
                w.insert(mark, f"nonlocal {', '.join(sorted(fc.nonlocals))}")

    def action_name(self, decl, block) -> str:
        info = block.actions.get(decl.name) if block is not None else None
        return info.name if info is not None and info.decl is decl else \
            self._action_names.get(id(decl), decl.name)

    # Actions and tables of a control are written into the control's function where they
    # are applied/called (an action without `return`), so no nested function is made per
    # packet; what is still called as a function is written as a nested function.

    def can_inline_action(self, fc, decl) -> bool:
        if not (fc.owns(decl) or fc.is_block and decl in self.pipeline_global_actions()):
            return False
        key = ("inline action", id(decl))
        if key not in self._functions:
            self._functions[key] = not any(isinstance(node, A.ReturnStatement)
                                           for node in A.iter_nodes(decl.body))
        return self._functions[key]

    _CALLS_THAT_MAY_EXIT = ("action", "function", "table_apply", "block_apply")

    def may_exit(self, body) -> bool:
        """Whether `exit` may run inside `body` (conservatively: it contains `exit` or a call
        of P4 code, in a program that has an `exit` somewhere). Copy-outs around such a body
        also run when it exits, as on bmv2."""
        if not hasattr(self, "_program_exits"):
            self._program_exits = any(isinstance(n, A.ExitStatement)
                                      for n in A.iter_nodes(self.program))
        return self._program_exits and any(
            isinstance(n, A.ExitStatement) or isinstance(n, A.MethodCallExpression) and
            n.call_kind in self._CALLS_THAT_MAY_EXIT for n in A.iter_nodes(body))

    def body_then_copy_back(self, fc, body_fc, body, copy_back) -> None:
        """`body` (compiled by `body_fc`), then `copy_back()` writes the copy-outs, also
        before an `exit` inside the body leaves."""
        if not self.may_exit(body):
            body_fc.statement(body)
            copy_back()
            return
        self._on_exit(fc.w, lambda: body_fc.statement(body), "except ExitPipeline:", copy_back)
        copy_back()

    def body_keeping_outs_on_exit(self, fc, body, values_prefix) -> None:
        """A function's `body`; when `exit` leaves it, the exception carries what the
        function would have returned for its out parameters (`_x.outs`, laid out as its
        return tuple with `values_prefix` first) so the caller can copy them out."""
        if not fc.out_params or not self.may_exit(body):
            fc.statement(body)
            return

        def keep_outs():
            outs = [self.names.of(p, p.name) for p in fc.out_params]
            fc.w.line(f"_x.outs = ({', '.join(values_prefix + outs)},)")
        self._on_exit(fc.w, lambda: fc.statement(body), "except ExitPipeline as _x:", keep_outs)

    @staticmethod
    def _on_exit(w, write_body, handler: str, write_handler) -> None:
        """`try: body` (with a `pass`, as the body may write nothing), then `handler` running
        `write_handler()`'s lines before it re-raises the ExitPipeline."""
        w.line("try:")
        with w.indent():
            w.line("pass")
            write_body()
        w.line(handler)
        with w.indent():
            write_handler()
            w.line("raise")

    def pipeline_global_actions(self) -> set:
        """Actions declared at the top level (NoAction, ...)."""
        if not hasattr(self, "_top_actions"):
            self._top_actions = {d for d in self.program.declarations
                                 if isinstance(d, A.ActionDecl)}
        return self._top_actions

    def inline_action(self, fc, decl, param_args, entry_args=None) -> None:
        """The body of action `decl` written where `fc` is writing: directional (and, for
        a direct call, all) parameters bound from `param_args` with copy-in/copy-out; for
        a table's action, the others from the entry's argument tuple `entry_args`."""
        w = fc.w
        own = fc.owns(decl)
        afc = FunctionCompiler(self, w, block=fc.block if own else None, outer=fc)
        afc.trace(f"Action {self.action_name(decl, fc.block if own else None)}")
        plane = [p for p in decl.params if p.direction is None] if entry_args else []
        if plane:
            names = [afc.declare(p) for p in plane]
            sources = self._control_plane_sources(decl, entry_args)
            if all(src == f"{entry_args}[{i}]" for i, src in enumerate(sources)):
                w.line(f"{''.join(n + ', ' for n in names)}= {entry_args}")
            else:
                for name, src in zip(names, sources):
                    w.line(f"{name} = {src}")
        copy_back = []
        bound = {p: a for p, a in param_args}
        for p in decl.params:
            if p in plane:
                continue
            name = afc.declare(p)
            pt = param_type(p)
            a = bound.get(p)
            if a is None or p.direction == "out":
                w.line(f"{name} = {self.types.default_src(pt)}")
            else:
                w.line(f"{name} = {fc.ex_value(a, pt)}")
            if a is not None and p.direction in ("out", "inout") and \
                    not isinstance(a, A.DontCareExpression):
                copy_back.append((a, name))

        def write_copy_back():
            for a, name in copy_back:
                fc.assign(a, name)
        self.body_then_copy_back(fc, afc, decl.body, write_copy_back)

    def child_block(self, call, block):
        """The BlockInstance a sub-parser/control `x.apply()` call runs."""
        target = call.callee.expr if isinstance(call.callee, A.MemberExpression) else None
        name = getattr(target, "name", None)
        if block is not None and name in block.children:
            return block.children[name]
        raise CompileError(call.loc, f"instance {name} is not known here")

    def block_function(self, inst) -> str:
        key = id(inst)
        if key not in self._block_fns:
            self._block_fns[key] = self.names.fresh("blk_" + inst.name.replace(".", "_"))
            w = CodeWriter()
            self.chunks.append(w)
            if isinstance(inst.decl, A.ParserDecl):
                self.write_parser(w, inst)
            elif isinstance(inst.decl, A.ControlDecl):
                self.write_control(w, inst)
            else:
                raise CompileError(inst.decl.loc, f"{inst.name} is not a parser or control")
        return self._block_fns[key]

    # -- controls ------------------------------------------------------------------------------

    def write_control(self, w, inst) -> None:
        decl = inst.decl
        fc = FunctionCompiler(self, w, block=inst, by_reference=True)
        params, fresh = fc.function_params(decl.params, by_reference=True)
        fc.out_params = fc.returned_params(decl.params, by_reference=True)
        w.line(f"def {self._block_fns[id(inst)]}({', '.join(params)}):")
        with w.indent():
            fc.init_fresh(fresh)
            self.reset_out_composites(fc, inst)
            fc.start_member_locals()
            fc.is_block = True
            for local in decl.locals:
                if isinstance(local, A.ActionDecl):
                    fc.nested[local] = self.names.of(local, "act_" + local.name)
                elif isinstance(local, A.TableDecl):
                    fc.nested[local] = self.names.of(local, "tbl_" + local.name)
                    info = inst.tables[local.name]
                    self.table_specs[self._table_index[id(info)]] = self.table_spec(info)
            for local in decl.locals:
                if not isinstance(local, (A.ActionDecl, A.TableDecl)):
                    self.control_local(fc, inst, local)
            defs_at = w.mark()
            self.body_keeping_outs_on_exit(fc, decl.body, [])
            fc.finish_return()
            self.write_needed_locals(fc, inst, defs_at)
            fc.end_member_locals()

    def write_needed_locals(self, fc, inst, at) -> None:
        """Nested functions of the actions/tables that are called, put at line `at`
        (before the body); writing a table's function may make more actions needed."""
        written: set = set()
        start = fc.w.mark()
        while fc.needed - written:
            for local in inst.decl.locals:
                if local in fc.needed and local not in written:
                    written.add(local)
                    self.control_local(fc, inst, local)
        fc.w.lines[at:at] = fc.w.take_since(start)

    # A sub-control whose apply is plain straight-line code (no actions, tables or return)
    # is written into its caller instead of being called: P4 programs instantiate such
    # controls many times (one per value of a packet, say), and a Python call with its
    # argument tuple and result tuple costs more than the body.

    def can_inline(self, inst) -> bool:
        decl = inst.decl
        if not isinstance(decl, A.ControlDecl):
            return False
        key = ("inline", id(decl))
        if key not in self._functions:
            self._functions[key] = all(
                isinstance(local, (A.VariableDecl, A.ConstantDecl)) or
                isinstance(local, A.Instantiation) and local.name in inst.externs
                for local in decl.locals) and not any(
                isinstance(node, A.ReturnStatement) for node in A.iter_nodes(decl.body))
        return self._functions[key]

    def inline_control(self, fc, inst, param_args) -> None:
        """Write `inst.apply(args)` into the function `fc` is writing: parameters become
        locals bound as a call would bind them (composites by reference, scalars copied
        in), then the body, then out/inout scalars are copied back.

        Consecutive applies of instances of one control (K value units, say) often pass
        the same scalars: a parameter still holding its argument's value from the apply
        just before is not bound again, and an inout argument's copy-back is deferred to
        the last of them (see `_InlineRun`)."""
        decl, w = inst.decl, fc.w
        cfc = FunctionCompiler(self, w, block=inst, by_reference=True)
        run = fc.inline_run if fc.inline_run is not None and \
            fc.inline_run.continues(decl, w) else None
        fc.inline_run = None
        bindings = []
        start = w.mark()
        for p, a in param_args:
            name = cfc.declare(p)
            bindings.append((p, a, name, fc.ex(a) if a is not None and
                             not isinstance(a, A.DontCareExpression) else None))
        if w.mark() != start:
            run = None                    # computing an argument took statements
        reusable = run.reusable(bindings) if run is not None else set()
        copy_back = []
        for p, a, name, text in bindings:
            pt = param_type(p)
            if p in reusable:
                pass
            elif a is None or (p.direction == "out" and not is_composite(pt)):
                w.line(f"{name} = {self.types.default_src(pt)}")
            elif is_composite(pt):
                w.line(f"{name} = {text}")
                if p.direction == "out":
                    w.line(f"{name}._assign({self.types.default_src(pt)})")
            else:
                w.line(f"{name} = {fc.ex_value(a, pt)}")
            if text is not None and p.direction in ("out", "inout") and not is_composite(pt):
                copy_back.append((p, a, name))
        if run is not None:
            run.drop_deferred(w, reusable)
        for local in decl.locals:
            self.control_local(cfc, inst, local)
        lines = {}

        def write_copy_back():
            for p, a, name in copy_back:
                lines[p] = w.mark()
                fc.assign(a, name)
        self.body_then_copy_back(fc, cfc, decl.body, write_copy_back)
        if cfc.nonlocals:
            raise CompileError(decl.loc, f"{inst.name}: assigns names outside itself")
        # (The copy-outs written last are the ones a following apply may defer; with an
        # `exit` inside, the body's copies stay where they are: no deferral.)
        if self._inline_facts(decl)[1] and not self.may_exit(decl.body):
            fc.inline_run = _InlineRun(decl, bindings, lines, w,
                                       self._inline_facts(decl)[0])

    def _inline_facts(self, decl):
        """(parameters the body may write, whether its parameters are all scalars)."""
        key = ("inline facts", id(decl))
        if key not in self._functions:
            written = set()
            for node in A.iter_nodes(decl.body):
                if isinstance(node, A.AssignmentStatement):
                    written.add(_root_decl(node.lhs))
                elif isinstance(node, A.MethodCallExpression):
                    pairs = node.param_args or [(None, a.value) for a in node.args]
                    for param, a in pairs:
                        if a is not None and (param is None or param.direction in
                                              ("out", "inout")):
                            written.add(_root_decl(a))
            scalar = not any(is_composite(param_type(p)) for p in decl.params)
            self._functions[key] = (written, scalar)
        return self._functions[key]

    def reset_out_composites(self, fc, inst) -> None:
        """`out` headers/structs of a nested block start invalid (they are passed by
        reference; the architecture hands the top-level blocks fresh ones already)."""
        if any(inst is top for top in self.pipeline.slots.values()):
            return
        for p in inst.decl.params:
            if p.direction == "out" and is_composite(param_type(p)):
                fc.w.line(f"{fc.var_name(p)}._assign({self.types.default_src(param_type(p))})")

    def control_local(self, fc, inst, local) -> None:
        if isinstance(local, A.VariableDecl):
            fc.st_VariableDecl(local)
        elif isinstance(local, A.ActionDecl):
            self.write_action(fc.w, local, fc.nested[local], outer=fc, block=inst)
        elif isinstance(local, A.TableDecl):
            self.write_table(fc, inst.tables[local.name])
        elif isinstance(local, A.Instantiation):
            if local.name in inst.externs:
                ext = inst.externs[local.name]
                if ext.extern in STATELESS_EXTERN_OBJECTS:
                    return
                if ext.extern in ("direct_counter", "direct_meter") and ext.owner_table is None:
                    return      # no table uses it: a warning (Pipeline.warnings), as in p4c
                if ext.extern not in SUPPORTED_EXTERN_OBJECTS:
                    raise CompileError(local.loc, f"extern {ext.extern} is not supported")
                self.extern_global(ext)
        elif isinstance(local, (A.ConstantDecl, A.ValueSetDecl)):
            pass
        else:
            raise CompileError(local.loc, f"{type(local).__name__} in a control is not supported")

    # -- the whole module ----------------------------------------------------------------------

    SYNTHETIC_FIELD_LISTS = 1 << 16     # above every bit<8> @field_list index

    def synthetic_field_list(self, attrs: list[str]) -> int:
        """A field list index for fields named by an old-style extern call's data."""
        index = self.SYNTHETIC_FIELD_LISTS + len(self._synthetic_lists)
        self._synthetic_lists[index] = list(attrs)
        return index

    def data_field_list(self, data) -> int:
        """A field list for the old-style `resubmit(data)`, `recirculate(data)` and
        `clone3(type, session, data)` (both back ends): data names fields of the user
        metadata (or is the whole metadata struct); -1 for an empty list."""
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
                attrs += [field_attr(name) for name, _ in meta_t.fields]
            elif isinstance(x, A.MemberExpression) and strip(x.expr.type) == meta_t and \
                    isinstance(x.expr, A.PathExpression):
                attrs.append(field_attr(x.member))
            else:
                raise CompileError(x.loc, f"{source_text(x)} cannot be preserved: only "
                                          "fields of the user metadata can (use @field_list)")
        return self.synthetic_field_list(attrs) if attrs else -1

    def field_lists(self) -> dict[int, list[str]]:
        """@field_list(i, ...) annotations of the user metadata struct, and the synthetic
        lists of old-style calls: index -> attributes of the metadata object."""
        lists: dict[int, list[str]] = dict(self._synthetic_lists)
        meta_t = strip(self.pipeline.metadata_type)
        decl = getattr(meta_t, "decl", None)
        for f in getattr(decl, "fields", []):
            for ann in f.annotations:
                if ann.name != "field_list":
                    continue
                for a in ann.args:
                    index = a.const_value
                    if index is None and isinstance(a, A.IntLiteral):
                        index = a.value
                    if index is None:
                        raise CompileError(ann.loc, "@field_list needs constant indices")
                    lists.setdefault(index, []).append(field_attr(f.name))
        return lists

    def compile(self) -> CompiledProgram:
        p = self.pipeline
        roles = {"run_parser": p.parser, "run_verify": p.verify_checksum,
                 "run_ingress": p.ingress, "run_egress": p.egress,
                 "run_compute": p.compute_checksum, "run_deparser": p.deparser}
        fns = {role: self.block_function(inst) for role, inst in roles.items()}
        entry = CodeWriter()
        entry.line("def run_parser(pkt, hdr, meta, sm):")
        with entry.indent():
            entry.line("try:")
            with entry.indent():
                entry.line(f"{fns['run_parser']}(pkt, hdr, meta, sm)")
            entry.line("except ParserException as _x:")
            with entry.indent():
                entry.line("if _x.error_name is not None:")
                with entry.indent():
                    entry.line("sm.f_parser_error = ERROR_CODES.get(_x.error_name, _x.error_name)")
                    entry.line("if _trace: _trace('Parser error: %s' % (_x.error_name,))")
        for role, args in (("run_verify", "hdr, meta"), ("run_ingress", "hdr, meta, sm"),
                           ("run_egress", "hdr, meta, sm"), ("run_compute", "hdr, meta")):
            entry.line(f"def {role}({args}):")
            with entry.indent():
                entry.line(f"if _trace: _trace(\"Pipeline '{roles[role].name}': start\")")
                entry.line("try:")
                with entry.indent():
                    entry.line(f"{fns[role]}({args})")
                entry.line("except ExitPipeline:")
                with entry.indent():
                    entry.line(f"if _trace: _trace(\"Exit in '{roles[role].name}'\")")
        entry.line("def run_deparser(w, hdr):")
        with entry.indent():
            entry.line(f"if _trace: _trace(\"Deparser '{p.deparser.name}': start\")")
            entry.line(f"{fns['run_deparser']}(w, hdr)")
        sm_type = strip(param_type(p.ingress.decl.params[2]))
        for name, t in (("new_headers", p.headers_type), ("new_metadata", p.metadata_type),
                        ("new_standard_metadata", sm_type)):
            entry.line(f"def {name}():")
            with entry.indent():
                entry.line(f"return {self.types.default_src(t)}")
        for i, spec in enumerate(self.table_specs):
            if spec is None:
                raise CompileError(None, f"table {p.tables[i].name} is never compiled "
                                         "(not supported)")
        source = "\n".join([PRELUDE, f"ERROR_CODES = {self.error_codes!r}",
                            self.types.source()] +
                           [c.source() for c in self.chunks] + [entry.source()])
        code = compile(source, f"<p4switch:{self.program.source_files[:1]}>", "exec")
        return CompiledProgram(source=source, code=code, tables=self.table_specs,
                               externs=self.extern_specs, hashes=self.hashes,
                               value_sets=self.value_sets, field_lists=self.field_lists(),
                               error_codes=self.error_codes,
                               digests=[d.name for d in p.digests])


def _root_decl(e):
    """The declaration an lvalue is rooted at (`x` of `x.f[2].g`), or None."""
    while isinstance(e, (A.MemberExpression, A.IndexExpression, A.SliceExpression)):
        e = e.expr
    return getattr(e, "decl", None)


def _overlaps(a: str, b: str) -> bool:
    """Whether two lvalue sources may name overlapping storage (one is a prefix path)."""
    return a == b or a.startswith((b + ".", b + "[")) or b.startswith((a + ".", a + "["))


class _InlineRun:
    """What the last inlined apply left, while nothing else has been written after it.

    Its body could only write its own locals and registers (all parameters are scalars,
    copied in), so each of its parameter locals still holds the argument value it was
    bound to, unless the body wrote that parameter, and every argument still holds its
    value, unless a copy-back wrote it."""

    def __init__(self, decl, bindings, copy_back_lines, w, written):
        self.decl = decl
        self.texts = {p: text for p, _, _, text in bindings}
        self.copy_back_lines = copy_back_lines      # param -> index of its copy-back line
        self.end = (w.mark(), w.level)              # the next statement must follow here
        self.written = written

    def continues(self, decl, w) -> bool:
        """Same control, and the next statement comes right after, in the same block."""
        return decl is self.decl and (w.mark(), w.level) == self.end

    def reusable(self, bindings) -> set:
        """Parameters whose local already holds the value the new binding would copy in."""
        back = {p: self.texts[p] for p in self.copy_back_lines}
        reuse = set()
        for p, _, _, text in bindings:
            if text is None or self.texts.get(p) != text or \
                    p.direction not in (None, "in", "inout"):
                continue
            if p.direction == "inout":
                # Its copy-back is deferred past the new apply, so no other argument of
                # either apply may read or write the same storage meanwhile.
                others = [t for q, _, _, t in bindings if q is not p and t is not None] + \
                    [t for q, t in back.items() if q is not p]
                if any(_overlaps(text, t) for t in others):
                    continue
            elif p in self.written or any(_overlaps(text, t) for t in back.values()):
                continue
            reuse.add(p)
        return reuse

    def drop_deferred(self, w, reusable) -> None:
        """Remove the previous copy-backs of inout parameters bound again without a copy."""
        for index in sorted((self.copy_back_lines[p] for p in reusable
                             if p in self.copy_back_lines), reverse=True):
            del w.lines[index]


def compile_pipeline(program: A.Program) -> CompiledProgram:
    """Compile a loaded (checked, elaborated) program; CompileError for what we lack."""
    return ProgramCompiler(program).compile()
