"""Parsers for the Python back end's ProgramCompiler: a parser instance as a state loop,
select transitions (a dict lookup when every keyset is a constant) and value sets."""

from __future__ import annotations

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.errors import CompileError
from .body import FunctionCompiler
from .codegen import CodeWriter
from .exprs import strip


class ParserCompilerMixin:
    """The parser part of `ProgramCompiler` (compiler.py)."""

    # -- parsers -------------------------------------------------------------------------------

    ACCEPT, REJECT, NO_MATCH = -1, -2, -3

    def write_parser(self, w, inst) -> None:
        decl = inst.decl
        fc = FunctionCompiler(self, w, block=inst, by_reference=True)
        params, fresh = fc.function_params(decl.params, by_reference=True)
        fc.out_params = fc.returned_params(decl.params, by_reference=True)
        state_index = {s.name: i for i, s in enumerate(decl.states)}
        state_index.update(accept=self.ACCEPT, reject=self.REJECT)
        if "start" not in state_index:
            raise CompileError(decl.loc, f"parser {decl.name} has no start state")
        w.line(f"def {self._block_fns[id(inst)]}({', '.join(params)}):")
        with w.indent():
            fc.init_fresh(fresh)
            self.reset_out_composites(fc, inst)
            fc.start_member_locals()
            for local in decl.locals:
                if isinstance(local, A.VariableDecl):
                    fc.st_VariableDecl(local)
                elif isinstance(local, A.ValueSetDecl):
                    self.value_set_global(local, inst)
                elif isinstance(local, A.Instantiation) and local.name in inst.externs:
                    self.extern_global(inst.externs[local.name])
            w.line(f"_st = {state_index['start']}")
            outs = [self.names.of(p, p.name) for p in fc.out_params]
            if outs:
                # A sub-parser that rejects (or meets a parser error) leaves its out and inout
                # arguments as it wrote them: p4c inlines sub-parsers with the arguments in
                # place of the parameters, so bmv2 keeps what the sub-parser wrote.  The
                # values go up in the exception and the caller copies them back.
                w.line("try:")
                w.level += 1
            w.line("while True:")
            with w.indent():
                for i, state in enumerate(decl.states):
                    w.line(f"{'if' if i == 0 else 'elif'} _st == {i}:")
                    with w.indent():
                        fc.trace(f"Parser '{inst.name}': state '{state.name}'")
                        fc.statements(state.statements)
                        self.write_transition(fc, inst, state, state_index)
                w.line(f"{'elif' if decl.states else 'if'} _st == {self.ACCEPT}:")
                with w.indent():
                    fc.trace(f"Parser '{inst.name}': accept")
                    fc.st_ReturnStatement(A.ReturnStatement())
                w.line("else:")
                with w.indent():
                    # reject, and a select no case matches: p4c's bmv2 back end ends the
                    # parse there with no error (bmv2 has no reject state; error.NoMatch is
                    # never set), so both end the parse with parser_error unchanged
                    w.line("raise ParserException(None)")
            if outs:
                w.level -= 1
                w.line("except ParserException as _x:")
                with w.indent():
                    w.line(f"_x.outs = ({', '.join(outs)},)")
                    w.line("raise")
            fc.end_member_locals()

    def write_transition(self, fc, inst, state, index) -> None:
        w = fc.w
        if state.select is None:
            target = state.next_state or "reject"
            w.line(f"_st = {index[target]}")
            return
        sel = state.select
        keys = []
        for e in sel.exprs:
            tmp = fc.temp("k")
            w.line(f"{tmp} = {fc.ex(e)}")
            keys.append(tmp)
        table = self._select_dict(sel, index)
        if table is not None:
            entries, default = table
            gname = self.names.fresh("_SELECT")
            self.chunks.append(_const_chunk(gname, entries))
            key = keys[0] if len(keys) == 1 else "(" + "".join(k + ", " for k in keys) + ")"
            w.line(f"_st = {gname}.get({key}, {default})")
            return
        first = True
        for case in sel.cases:
            cond = self._case_condition(fc, inst, case.keyset, keys, sel)
            target = index[case.next_state]
            if cond == "True":
                w.line(f"{'else' if not first else 'if True'}:")
                with w.indent():
                    w.line(f"_st = {target}")
                return
            w.line(f"{'if' if first else 'elif'} {cond}:")
            with w.indent():
                w.line(f"_st = {target}")
            first = False
        w.line("else:" if not first else "if True:")
        with w.indent():
            w.line(f"_st = {self.NO_MATCH}")

    def _select_dict(self, sel, index):
        """({key: state}, default state) when every case is plain constants (or default)."""
        entries, default = {}, self.NO_MATCH
        for case in sel.cases:
            ks = case.keyset
            if isinstance(ks, (A.DefaultExpression, A.DontCareExpression)) or (
                    isinstance(ks, A.ListExpression) and all(
                        isinstance(x, (A.DefaultExpression, A.DontCareExpression))
                        for x in ks.elements)):
                default = index[case.next_state]
                break
            parts = ks.elements if isinstance(ks, A.ListExpression) and len(sel.exprs) > 1 \
                else [ks]
            if len(parts) != len(sel.exprs):
                return None
            values = []
            for part, e in zip(parts, sel.exprs):
                if isinstance(part, (A.MaskExpression, A.RangeExpression, A.DefaultExpression,
                                     A.DontCareExpression)) or part.const_value is None:
                    return None
                if isinstance(strip(part.type), T.SetType):
                    return None
                values.append(self._select_value(part, e))
            key = values[0] if len(values) == 1 else tuple(values)
            entries.setdefault(key, index[case.next_state])
        return entries, default

    @staticmethod
    def _select_value(part, key_expr):
        value = part.const_value
        t = strip(key_expr.type)
        if isinstance(t, T.BitsType):
            return t.wrap(value)
        return value

    def _case_condition(self, fc, inst, keyset, keys, sel) -> str:
        if isinstance(keyset, A.ListExpression) and len(keys) > 1:
            parts = keyset.elements
        elif isinstance(keyset, (A.DefaultExpression, A.DontCareExpression)):
            return "True"
        else:
            parts = [keyset]
            if len(keys) > 1 and isinstance(keyset, A.PathExpression) and \
                    isinstance(keyset.decl, A.ValueSetDecl):
                vs = self.value_set_global(keyset.decl, inst)
                return f"{vs}.match(({', '.join(keys)},))"
        conds = []
        for part, key, e in zip(parts, keys, sel.exprs):
            if isinstance(part, (A.DefaultExpression, A.DontCareExpression)):
                continue
            if isinstance(part, A.MaskExpression):
                mask = fc.ex(part.mask)
                conds.append(f"({key} & {mask}) == ({fc.ex(part.value)} & {mask})")
            elif isinstance(part, A.RangeExpression):
                conds.append(f"{fc.ex(part.lo)} <= {key} <= {fc.ex(part.hi)}")
            elif isinstance(part, A.PathExpression) and isinstance(part.decl, A.ValueSetDecl):
                conds.append(f"{self.value_set_global(part.decl, inst)}.match({key})")
            else:
                conds.append(f"{key} == {fc.ex(part)}")
        return " and ".join(conds) or "True"


def _const_chunk(name, entries) -> CodeWriter:
    w = CodeWriter()
    w.line(f"{name} = {entries!r}")
    return w
