"""Tables for the Python back end's ProgramCompiler: which table an `apply` means, its
actions and their indices (the C emitter uses these too), the specs the run-time Table is
built from (keys, actions, const entries), and the code of a table apply."""

from __future__ import annotations

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.errors import CompileError
from ..runtime.tables import (ActionSpec, ConstEntrySpec, Exact, KeySpec, LPM, Optional,
                              Range, TableSpec, Ternary)
from .body import FunctionCompiler, param_type
from .exprs import strip
from .pytypes import from_unsigned_src, to_unsigned_src


class TableCompilerMixin:
    """The table part of `ProgramCompiler` (compiler.py)."""

    # -- tables --------------------------------------------------------------------------------

    def table_of_apply(self, call, block):
        """The TableInfo of a `t.apply()` call."""
        target = call.callee.expr if isinstance(call.callee, A.MemberExpression) else None
        name = getattr(target, "name", None)
        if block is not None and name in block.tables:
            return block.tables[name]
        decl = call.callee_decl
        for info in self.pipeline.tables:
            if info.decl is decl and (block is None or info.block is block):
                return info
        raise CompileError(call.loc, f"table {name} is not known here")

    @staticmethod
    def table_actions(info) -> list:
        """The table's actions; the default action is added (@defaultonly) when the table
        does not list it (NoAction when no default is declared, as p4c does)."""
        actions = list(info.actions)
        default = info.default_action
        if default is not None and all(t.action.decl is not default.decl for t in actions):
            actions.append(A.TableActionInfo(action=default, scope="DEFAULT_ONLY"))
        return actions

    def table_action_index(self, table, decl, node) -> int:
        for i, tai in enumerate(self.table_actions(table)):
            if tai.action.decl is decl:
                return i
        raise CompileError(node.loc, f"{getattr(decl, 'name', '?')} is not an action of "
                                     f"table {table.name}")

    def table_global(self, info) -> str:
        return f"T{self._table_index[id(info)]}"

    def write_table(self, fc, info) -> None:
        """The nested function of a table applied where it cannot be written inline."""
        tfc = FunctionCompiler(self, fc.w, block=fc.block, outer=fc)
        fc.w.line(f"def {fc.nested[info.decl]}():")
        with fc.w.indent():
            self.write_table_apply(tfc, info, "_e", inline=False)
            fc.w.line("return _e")
        if tfc.nonlocals:
            raise CompileError(info.decl.loc, f"table {info.name}: action arguments that "
                                              "write control locals are not supported")

    def write_table_apply(self, fc, info, entry, inline) -> None:
        """Lines looking the table up into `entry` and running its action (written in
        place when `inline` and the action allows it)."""
        w = fc.w
        tg = self.table_global(info)
        keys = []
        for k in info.keys:
            if k.match_kind != "selector":
                keys.append(to_unsigned_src(fc.ex(k.expr), strip(k.expr.type)))
        key = keys[0] if len(keys) == 1 else "(" + "".join(k + ", " for k in keys) + ")"
        if keys and all(k.match_kind == "exact" for k in info.keys) and not info.idle_timeout:
            # The entry dict itself (Table.exact_get): no lookup function per packet. Tables
            # with idle timeouts take `lookup`, which records hits.
            w.line(f"{entry} = {tg}_get({key}, {tg}_default)")
        else:
            w.line(f"{entry} = {tg}_lookup({key if keys else 'None'})")
        w.line(f"if _trace: _trace(_table_message({tg}, {entry}))")
        index = fc.temp("i")
        args = f"{entry}.args"
        if info.implementation is not None:
            self.extern_global(info.implementation)
            selector = [k.expr for k in info.keys if k.match_kind == "selector"]
            fields = fc.fields_src(A.ListExpression(elements=selector)) if selector \
                else "()"
            args = fc.temp("a")
            # a miss runs no action: bmv2 has no default entry for a table with an action
            # profile (p4c: "Target does not support default_action ... (due to action
            # profiles)")
            w.line(f"{index}, {args} = {tg}.resolve({entry}, {fields}) if {entry}.hit else "
                   f"(-1, ())")
        else:
            w.line(f"{index} = {entry}.action_index")
        if info.direct_counter is not None:
            self.extern_global(info.direct_counter)
            w.line(f"if {entry}.hit: {entry}.packets += 1; {entry}.bytes += P.plen")
        if info.direct_meter is not None:
            meter = self.extern_global(info.direct_meter)
            w.line(f"{meter}.color = {entry}.meter.execute(P.now_us, P.plen) "
                   f"if {entry}.hit and {entry}.meter is not None else 0")
        for i, tai in enumerate(self.table_actions(info)):
            decl = tai.action.decl
            w.line(f"{'if' if i == 0 else 'elif'} {index} == {i}:")
            with w.indent():
                directional = [p for p in decl.params if p.direction is not None]
                bound = [a.value for a in (tai.ref.args if tai.ref is not None else [])]
                pairs = list(zip(directional, bound + [None] * len(directional)))
                if inline and self.can_inline_action(fc, decl):
                    self.inline_action(fc, decl, pairs, args)
                    continue
                fn = fc.find_nested(decl) or self.global_action(decl)
                src = fc.call_p4(fn, pairs, False, by_reference=False,
                                 extra=self._control_plane_args(decl, args), body=decl.body)
                if src is not None:
                    w.line(src)

    @staticmethod
    def _control_plane_sources(decl, args: str) -> list[str]:
        """One source per directionless parameter: the entry's argument, converted."""
        params = [p for p in decl.params if p.direction is None]
        return [from_unsigned_src(f"{args}[{i}]", strip(param_type(p)))
                for i, p in enumerate(params)]

    @classmethod
    def _control_plane_args(cls, decl, args: str) -> list[str]:
        """Sources passing an entry's arguments (unsigned ints from the control plane, in
        the tuple `args`) to the action's directionless parameters, converted for
        bool/int<W> parameters."""
        converted = cls._control_plane_sources(decl, args)
        if converted and all(c == f"{args}[{i}]" for i, c in enumerate(converted)):
            return [f"*{args}"]
        return converted

    def table_spec(self, info) -> TableSpec:
        actions = []
        for i, tai in enumerate(self.table_actions(info)):
            params = [(p.name, p.bitwidth) for p in tai.action.params]
            actions.append(ActionSpec(tai.action.name, i, params, tai.scope))
        keys = []
        for k in info.keys:
            if k.match_kind == "selector" and info.implementation is not None:
                continue                  # hashed to choose a group member, not matched
            if k.match_kind not in ("exact", "lpm", "ternary", "range", "optional"):
                raise CompileError(info.decl.loc, f"table {info.name}: match kind "
                                                  f"{k.match_kind} is not supported")
            keys.append(KeySpec(k.name, k.match_kind, k.bitwidth))
        default = info.default_action
        spec = TableSpec(
            name=info.name, keys=keys, actions=actions,
            default_action=default.name if default else "NoAction",
            default_args=self._args_dict(default, info.default_args, info.decl) if default else {},
            default_is_const=info.default_is_const, size=info.size,
            entries_const=info.entries_const,
            direct_counter=info.direct_counter.name if info.direct_counter else None,
            direct_meter=info.direct_meter.name if info.direct_meter else None,
            largest_priority_wins=info.largest_priority_wins,
            profile=info.implementation.name if info.implementation else None,
            support_timeout=info.idle_timeout)
        if info.const_entries and info.implementation is not None:
            raise CompileError(info.decl.loc, f"table {info.name}: const entries in a table "
                                              "with an action profile are not supported")
        for entry in info.const_entries:
            spec.const_entries.append(self.const_entry(info, entry))
        return spec

    def _const(self, e, node) -> int:
        value = e.const_value
        if value is None:
            raise CompileError((e or node).loc, "a table entry value must be a constant")
        t = strip(e.type)
        if isinstance(value, bool):
            return int(value)
        if isinstance(t, T.ErrorType) and isinstance(value, str):
            return self.error_code(value, e)      # an error key matches the error's code
        if isinstance(t, T.BitsType) and t.signed:
            return value & t.mask
        return value

    def _args_dict(self, action, args, node) -> dict[str, int]:
        params = action.params
        args = list(args)
        if len(args) > len(params):          # directional arguments came first
            args = args[len(args) - len(params):]
        if len(args) != len(params):
            raise CompileError(node.loc, f"action {action.name} needs {len(params)} "
                                         f"argument(s), got {len(args)}")
        return {p.name: self._const(a.value if isinstance(a, A.Argument) else a, node)
                for p, a in zip(params, args)}

    def const_entry(self, info, entry) -> ConstEntrySpec:
        keys = entry.keys
        if len(keys) == 1 and len(info.keys) > 1 and \
                isinstance(keys[0], (A.DefaultExpression, A.DontCareExpression)):
            keys = keys * len(info.keys)
        if len(keys) != len(info.keys):
            raise CompileError(entry.loc, f"table {info.name}: entry has {len(keys)} key "
                                          f"values for {len(info.keys)} key fields")
        match = [self.entry_match(k, e) for k, e in zip(info.keys, keys)]
        action = next((tai.action for tai in info.actions if tai.action.decl is entry.action.decl),
                      None)
        if action is None:
            raise CompileError(entry.loc, f"{entry.action.name} is not an action of "
                                          f"table {info.name}")
        priority = self._const(entry.priority, entry) if entry.priority is not None else None
        return ConstEntrySpec(match, action.name,
                              self._args_dict(action, entry.action.args, entry), priority)

    def entry_match(self, key, e):
        kind, width = key.match_kind, key.bitwidth
        full = (1 << width) - 1
        if isinstance(e, (A.DefaultExpression, A.DontCareExpression)):
            return None
        if isinstance(e, A.MaskExpression):
            value, mask = self._const(e.value, e), self._const(e.mask, e)
            if kind == "lpm":
                plen = width - (full ^ mask).bit_length() if mask else 0
                return LPM(value & mask, plen)
            if kind in ("ternary", "optional", "exact"):
                return Ternary(value & mask, mask) if kind == "ternary" else (
                    Exact(value) if mask == full else self._bad_key(e, key))
            return self._bad_key(e, key)
        if isinstance(e, A.RangeExpression):
            if kind != "range":
                return self._bad_key(e, key)
            return Range(self._const(e.lo, e), self._const(e.hi, e))
        value = self._const(e, e)
        return {"exact": lambda: Exact(value), "lpm": lambda: LPM(value, width),
                "ternary": lambda: Ternary(value, full), "optional": lambda: Optional(value),
                "range": lambda: Range(value, value)}[kind]()

    @staticmethod
    def _bad_key(e, key):
        raise CompileError(e.loc, f"this keyset does not fit {key.match_kind} field {key.name}")
