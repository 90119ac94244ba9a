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
from ..body import aliased_arguments, param_type, switch_arms, switch_label
from ..compiler import ProgramCompiler
from ..exprs import strip
from .c_types import HASHES, NOT_SUPPORTED, CTypes, Unsupported, c_string, refuse  # noqa: F401
from .exprs import ExpressionMixin
from .externs import ExternMixin, cell_layout, register_words
from .wide import WideMixin, nwords


class Frame:
    """One inlined callable: its copy-backs (also run by `exit`) and its return label."""

    def __init__(self, copy_back: list[str], return_label: str | None, result: str | None):
        self.copy_back = copy_back
        self.return_label = return_label
        self.result = result


class CEmitter(ExpressionMixin, ExternMixin, WideMixin):
    """Writes the C source of one program (see the module docstring)."""

    def __init__(self, program: A.Program, compiled):
        self.pc = ProgramCompiler(program)      # shared IR helpers; nothing is compiled twice
        self.program = program
        self.pipeline = self.pc.pipeline
        self.compiled = compiled
        self.types = CTypes()
        self.counter = 0
        self.bind: dict = {}
        self.evaluated: dict = {}          # id(expression) -> C local already holding it
        self.hoist: list | None = None     # statements run before the expression being
                                           # written (exprs.rooted), None between statements
        self.frames: list[Frame] = []
        self.block = None
        self.stage_exit = None
        self.in_parser = False
        self.registers = [s for s in compiled.externs if s.kind == "register"]
        self.counters = [s for s in compiled.externs if s.kind == "counter"]
        self._register_index = {s.name: i for i, s in enumerate(self.registers)}
        self.register_places, self.register_cell_words = cell_layout(self.registers,
                                                                     register_words)
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
            if spec[1] not in HASHES and spec[1] != "random":
                refuse(None, f"hash algorithm {spec[1]}")
        self.random_hashes = 0          # call sites of the `random` hash algorithm
        self._value_set_index = {name: i for i, (_, name, _) in enumerate(compiled.value_sets)}
        self.assertions: list[str] = []
        self.vs_words = 1               # words per value-set key field (p4n_vs_words)
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
        """An initializer of a fresh value of type `t` (zeros; headers invalid)."""
        self.types.ctype(t, node)
        return "{0}" if self.is_composite(t) or self.big(t) else "0"

    def is_composite(self, t) -> bool:
        return self.types.scalar(t) is None

    def word(self, t) -> str:
        """The unsigned C type computations of scalar type `t` are done in."""
        sc = self.types.scalar(t)
        if sc is not None and self.big(t):
            return "p4n_big"
        return "p4n_u128" if sc is not None and sc[0] > 64 else "uint64_t"

    def wide(self, t) -> bool:
        sc = self.types.scalar(t)
        return sc is not None and sc[0] > 64

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
        saved, self.hoist = self.hoist, None      # a statement's expressions are roots
        try:
            return method(s)
        finally:
            self.hoist = saved

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
        if not self.has_side_effects(s.rhs):
            return [self.assign(s.lhs, self.value_as(s.rhs, s.lhs.type))]
        # P4 evaluates the left-hand side first: its stack indices are computed before the
        # right-hand side's calls may change what they read (C leaves the order open).
        lines = []
        indices = [n.index for n in A.iter_nodes(s.lhs) if isinstance(n, A.IndexExpression)
                   and n.index.const_value is None]
        for index in indices:
            tmp = self.fresh("ix")
            lines.append(f"{self.word(index.type)} {tmp} = {self.ex(index)};")
            self.evaluated[id(index)] = tmp
        value = self.fresh("rhs")
        t = s.lhs.type
        lines.append(f"{self.types.ctype(t, s)} {value} = {self.value_as(s.rhs, t)};")
        lines.append(self.assign(s.lhs, value))
        for index in indices:
            del self.evaluated[id(index)]
        return ["{"] + lines + ["}"]

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
        big = W == "p4n_big"
        lines = [f"{W} {value} = {'' if big else f'({W})'}({self.ex(s.expr)});"]
        for i, (labels, body, is_default) in enumerate(switch_arms(s)):
            if is_default:
                cond = "1"
            else:
                cond = " || ".join(
                    f"p4n_big_eq({value}, {switch_label(self, s, lb)})" if big else
                    f"{value} == ({W})({switch_label(self, s, lb)})" for lb in labels)
            lines += [f"{'else if' if i else 'if'} ({cond}) {{"] + self.statement(body) + ["}"]
        return ["{"] + lines + ["}"]

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
            lo_src, hi_src = self.ex(coll.lo), self.ex(coll.hi)
            if self.big(coll.lo.type):
                lo_src = f"p4n_big_lo128({lo_src})"
            if self.big(coll.hi.type):
                hi_src = f"p4n_big_lo128({hi_src})"
            value = f"p4n_big_s128({k}, {self.width(var_t)})" if self.big(var_t) else f"({ct}){k}"
            return ["{", f"__int128 {hi} = (__int128)({hi_src});",
                    f"for (__int128 {k} = (__int128)({lo_src}); {k} <= {hi}; {k}++) {{",
                    f"{ct} {name} = {value};"] + self.statement(s.body) + ["}", "}"]
        ct_t = strip(coll.type) if coll.type is not None else None
        if isinstance(ct_t, T.StackType):
            stack = self.ex(coll)
            i = self.fresh("i")
            self.bind[s.var] = f"({stack}).elems[{i}]"
            return [f"for (uint32_t {i} = 0; {i} < {ct_t.size}; {i}++) {{"] + \
                self.statement(s.body) + ["}"]
        if isinstance(ct_t, T.TupleType) and not isinstance(coll, A.ListExpression):
            ct = self.types.ctype(var_t, s)          # a tuple's elements, one by one
            tup, i = self.fresh("tup"), self.fresh("i")
            name = self.fresh(s.var.name)
            self.bind[s.var] = name
            n = len(ct_t.elements)
            items = ", ".join(f"{tup}.f_{k}" for k in range(n)) or "0"
            return ["{", f"{self.types.ctype(ct_t, s)} {tup} = {self.ex(coll)};",
                    f"const {ct} {tup}_v[] = {{ {items} }};",
                    f"for (size_t {i} = 0; {i} < {n}; {i}++) {{",
                    f"{ct} {name} = {tup}_v[{i}];"] + self.statement(s.body) + ["}", "}"]
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
            return self.inline_callable(decl, e.param_args, owner, body=decl.body, action=True)
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
            param_args = [(p, a) for p, (_, a) in zip(child.decl.params, e.param_args)]
            if isinstance(child.decl, A.ParserDecl):
                return self.inline_parser(child, param_args)
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
        return aliased_arguments(param_args, self.pc_text)

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
        copied_in = []     # (index in before, hoist length after its value was computed)
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
                if self.hoist is not None and a.const_value is None:
                    copied_in.append((len(before), len(self.hoist), ct, name, init))
            before.append(f"{ct} {name} = {init};")
            binds.append((p, name))
            if given and p.direction in ("out", "inout"):
                copy_back.append(self.assign(a, name))
        # Left to right, as the Python back end: a value bound before a later argument
        # hoisted statements (a call with out arguments) is read before those statements.
        for i, at, ct, name, init in reversed(copied_in):
            if at < len(self.hoist):
                tmp = self.fresh("in")
                self.hoist.insert(at, f"{ct} {tmp} = {init};")
                before[i] = f"{ct} {name} = {tmp};"
        return before, copy_back, binds

    def inline_callable(self, decl, param_args, block, body, return_type=None,
                        entry_args=None, action: bool = False):
        """An action (traced as the Python back end does) or function written in place, as
        a statement expression."""
        plane = [p for p in decl.params if p.direction is None] if entry_args is not None else []
        directional = [(p, a) for p, a in param_args if p not in plane]
        before, copy_back, binds = self.bind_params(directional, by_reference=False)
        j = 0
        for p in plane:
            name = self.fresh(p.name)
            pt = param_type(p)
            # nwords words, high first (binding.py splits them alike)
            value = self.from_words(entry_args, str(j), pt, high_first=True)
            j += nwords(self.width(pt))
            before.append(f"{self.types.ctype(pt, p)} {name} = {value};")
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
        if action:
            before.insert(0, self.trace_line(f"Action {self.pc.action_name(decl, block)}"))
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

    # -- parsers ---------------------------------------------------------------------------------

    def parser_body(self, inst) -> list[str]:
        accept, reject, done = self.fresh("accept"), self.fresh("reject"), self.fresh("done")
        self.parser_reject = reject
        lines = self.parser_states(inst, accept)
        names = ", ".join(c_string(n) for n, _ in sorted(self.pc.error_codes.items(),
                                                          key=lambda item: item[1]))
        count = len(self.pc.error_codes)
        lines += [f"{accept}: ;", self.trace_line(f"Parser '{inst.name}': accept"),
                  f"goto {done};",
                  f"{reject}: if (c->parser_error >= 0) {{",
                  f"({self.sm_param}).f_parser_error = (uint64_t)c->parser_error;",
                  # as the Python back end: a verify() error is traced as its code
                  f"if (c->sw->tracing) {{ static const char *const _errors[] = {{ {names} }};",
                  "if (c->error_from_verify || c->parser_error >= " + str(count) + ") "
                  "p4n_tracef(c->sw, \"Parser error: %d\", c->parser_error);",
                  "else p4n_tracef(c->sw, \"Parser error: %s\", _errors[c->parser_error]); }",
                  "}",
                  f"{done}: ;"]
        return lines

    def parser_states(self, inst, accept: str) -> list[str]:
        """The states of a parser: `accept` is where accepting goes, self.parser_reject
        where rejecting goes (a sub-parser's reject rejects the whole parse, as the Python
        back end's ParserException does)."""
        decl = inst.decl
        states = {s.name: self.fresh("state_" + s.name) for s in decl.states}
        if "start" not in states:
            refuse(decl, "a parser without a start state")
        nomatch = self.fresh("nomatch")
        states["accept"], states["reject"] = accept, self.parser_reject
        lines = self.control_locals_parser(inst)
        lines.append(f"goto {states['start']};")
        for s in decl.states:
            lines.append(f"{states[s.name]}: ;")
            lines.append(self.trace_line(f"Parser '{inst.name}': state '{s.name}'"))
            lines += self.statements(s.statements)
            lines += self.transition(s, states, nomatch)
        # a select no case matches ends the parse with no error, as on bmv2 (p4c's bmv2
        # back end has no reject state: error.NoMatch is never set)
        lines.append(f"{nomatch}: goto {self.parser_reject};")
        return lines

    def inline_parser(self, inst, param_args) -> str:
        """`subparser.apply(...)` in a parser state, written in place.  When it rejects
        (or meets a parser error) its out and inout arguments are copied back too: p4c
        inlines sub-parsers with the arguments in place of the parameters, so bmv2 keeps
        what the sub-parser wrote."""
        before, copy_back, binds = self.bind_params(param_args, by_reference=True)
        done = self.fresh("subparser_accept")
        outer_reject, inner_reject = self.parser_reject, self.fresh("subparser_reject")
        self.parser_reject = inner_reject
        try:
            with self.bound(binds), self.in_block(inst):
                lines = self.parser_states(inst, done)
        finally:
            self.parser_reject = outer_reject
        accepted = [f"{done}: ;", self.trace_line(f"Parser '{inst.name}': accept")]
        skip = self.fresh("subparser_end")
        rejected = [f"goto {skip};", f"{inner_reject}: ;"] + copy_back + \
            [f"goto {outer_reject};", f"{skip}: ;"]
        return "({\n" + "\n".join(before + lines + accepted + copy_back + rejected) + "\n})"

    def control_locals_parser(self, inst) -> list[str]:
        lines = []
        for local in inst.decl.locals:
            if isinstance(local, A.VariableDecl):
                lines += self.st_VariableDecl(local)
            elif isinstance(local, A.ValueSetDecl):
                pass
            elif isinstance(local, A.Instantiation):
                if local.name in inst.children:
                    continue                 # a sub-parser: written where it is applied
                ext = inst.externs.get(local.name)
                if ext is None or ext.extern not in ("register", "counter", "meter",
                                                     "Checksum16"):
                    refuse(local, f"{local.name} in a parser")
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
        # every field as vs_words words, high first (binding.py splits members alike)
        n = max(nwords(self.width(t)) for t in types)
        self.vs_words = max(self.vs_words, n)
        lines = [f"uint64_t _vk[{n * len(keys)}] = {{0}};"]
        for i, (key, t) in enumerate(zip(keys, types)):
            lines += self.words_lines(key, t, "_vk", n * (i + 1) - nwords(self.width(t)),
                                      high_first=True)
        return f"({{ {' '.join(lines)} p4n_value_set_match(&c->sw->value_sets[{k}], _vk, " \
               f"{n * len(keys)}); }})"

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
            if isinstance(part, A.MaskExpression) and self.big(kt):
                mask = self.ex(part.mask)
                conds.append(f"p4n_big_eq(p4n_big_and({key}, {mask}), "
                             f"p4n_big_and({self.ex(part.value)}, {mask}))")
            elif isinstance(part, A.MaskExpression):
                mask = self.ex(part.mask)
                conds.append(f"(({key}) & ({mask})) == (({self.ex(part.value)}) & ({mask}))")
            elif isinstance(part, A.RangeExpression):
                conds.append(f"{self.compare('<=', self.ex(part.lo), key, kt)} && "
                             f"{self.compare('<=', key, self.ex(part.hi), kt)}")
            else:
                conds.append(self.compare("==", key, self.ex(part), kt))
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
        self.stage_end = self.fresh("end")
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
        start, exit_ = [], []
        if name == "p4n_stage_deparser":
            start = [self.trace_line(f"Deparser '{inst.name}': start")]
        elif name != "p4n_stage_parser":
            start = [self.trace_line(f"Pipeline '{inst.name}': start")]
            exit_ = [self.trace_line(f"Exit in '{inst.name}'")]
        lines = [f"static void {name}({', '.join(c_params)}) {{"] + start + body + \
            [f"goto {self.stage_end};", f"{self.stage_exit}: ;"] + exit_ + \
            [f"{self.stage_end}: ;", "}"]
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
        parts = ["#include \"p4n.h\"", "#include <stdlib.h>",
                 f"#define P4N_BIG_LIMBS {self.types.big_limbs()}", "#include \"p4n_big.h\"", "",
                 self.types.source(), "",
                 f"#define P4N_HDR_T {hdr_t}", f"#define P4N_META_T {meta_t}",
                 f"#define P4N_SM_T {sm_t}", "", self.preserve_function(), ""] + stages + \
            [self.digest_names_array(), "#include \"tm.inc\"", self.assertion_texts()]
        return "\n\n".join(parts) + "\n"

    def digest_names_array(self) -> str:
        names = ", ".join(c_string(n) for n in self.digest_names) or '""'
        return f"static const char *const p4n_digest_names[] = {{ {names} }};"

    def assertion_texts(self) -> str:
        """The texts of the assert/assume calls, for the error the binding raises."""
        texts = ", ".join('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'
                          for t in self.assertions) or '""'
        return (f"uint32_t p4n_random_hash_count(void) {{ return {self.random_hashes}; }}\n"
                f"uint32_t p4n_vs_words(void) {{ return {self.vs_words}; }}\n"
                f"static const char *const p4n_assertion_texts[] = {{ {texts} }};\n"
                f"const char *p4n_assertion_text(int i) {{ return i >= 0 && i < "
                f"{len(self.assertions)} ? p4n_assertion_texts[i] : \"\"; }}")


def emit_c(program: A.Program, compiled) -> str:
    """The C source of `program`, whose Python compilation is `compiled` (its tables and
    externs are the ones the C code indexes); Unsupported for what the C back end lacks."""
    return CEmitter(program, compiled).emit()
