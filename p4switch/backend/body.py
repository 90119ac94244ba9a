"""Statements and calls: the body of one generated Python function.

A `FunctionCompiler` writes the code of one Python function (a parser, a control's apply, an
action, a function or a table apply) into the module's `CodeWriter`. Actions and tables of a
control are nested functions of the control's function, so they see its parameters and
locals; assignments to enclosing scalars get `nonlocal` declarations.

Calling convention for P4 callables (actions, functions, sub-parser/control apply): in,
inout and directionless arguments are passed; the function returns its out/inout values
(after its return value, if any) as a tuple, or just the return value when it has no out
parameters. Composite arguments of actions and functions are copied in and copied out
(P4's copy-in/copy-out); those of sub-parser/control applies are passed by reference,
which means the same unless two arguments share storage: then copies are passed and copied
back after the call.
"""

from __future__ import annotations

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.errors import CompileError
from .exprs import ExpressionMixin, strip, is_composite, literal, source_text
from .externs import ExternMixin
from .pytypes import field_attr, to_unsigned_src


def param_type(p):
    return p.type if p.type is not None else p.type_ref.type


def switch_arms(s):
    """The arms of switch statement `s`: (labels, body, is_default) for each case with a
    body, its labels being those of the bodiless cases just before it (they fall through
    to it) and its own; is_default when one of them is `default`."""
    labels = []
    for case in s.cases:
        labels.append(case.label)
        if case.body is not None:
            yield labels, case.body, any(isinstance(lb, A.DefaultExpression) for lb in labels)
            labels = []



def switch_label(compiler, s, label) -> str:
    """The source of a case label of switch statement `s` (in either back end's
    `compiler`): its expression, or in a `switch (t.apply().action_run)` the index of the
    action it names."""
    if s.is_action_run:
        table = compiler.pc.table_of_apply(s.expr.expr, compiler.block)
        return str(compiler.pc.table_action_index(table, label.decl, label))
    return compiler.ex(label)



def aliased_arguments(param_args, text) -> set:
    """ids of the arguments whose storage overlaps another argument's: the same path, or
    one a part of the other (`text(arg)` is an argument's path)."""
    paths = [(a, text(a)) for _, a in param_args
             if a is not None and not isinstance(a, A.DontCareExpression)]
    aliased = set()
    for i, (a, pa) in enumerate(paths):
        for b, pb in paths[i + 1:]:
            if pa == pb or pb.startswith((pa + ".", pa + "[")) or \
                    pa.startswith((pb + ".", pb + "[")):
                aliased.update((id(a), id(b)))
    return aliased


class FunctionCompiler(ExpressionMixin, ExternMixin):
    """Compiles statements and expressions of one Python function."""

    def __init__(self, pc, writer, block=None, outer=None, out_params=(), returns_value=False,
                 by_reference=False):
        self.pc = pc                      # the ProgramCompiler
        self.w = writer
        self.block = block                # BlockInstance whose objects names refer to
        self.outer = outer                # enclosing FunctionCompiler (nested defs) or None
        self.locals: set = set()          # declarations that are locals of this function
        self.nonlocals: set[str] = set()
        self.out_params = list(out_params)
        self.returns_value = returns_value
        self.by_reference = by_reference  # composites of out_params are not returned
        self.nested: dict = {}            # ActionDecl / TableDecl -> nested function name
        self.loops: list = []             # per enclosing loop: break flag name, or None
        self.inline_run = None            # compiler._InlineRun of the last inlined apply
        self.is_block = False             # the function of a control itself
        self.needed: set = set()          # nested actions/tables something calls
        self.evaluated: dict = {}         # id(expression) -> temp already holding its value
        self.member_locals = None         # source -> local of composite members (see
        self._member_mark = 0             # exprs._fixed_composite), when enabled

    def in_parser(self) -> bool:
        """Whether this code runs in a parser (where stack indices out of range reject)."""
        return self.block is not None and isinstance(self.block.decl, A.ParserDecl)

    # -- names -----------------------------------------------------------------------------

    def declare(self, decl) -> str:
        self.locals.add(decl)
        return self.pc.names.of(decl, decl.name)

    def var_name(self, decl, node=None) -> str:
        scope = self
        while scope is not None:
            if decl in scope.locals:
                return self.pc.names.of(decl, decl.name)
            scope = scope.outer
        raise CompileError(getattr(node, "loc", None) or decl.loc,
                           f"{decl.name} is not visible here (not supported)")

    def ctor_value(self, decl):
        """Literal of a control/parser constructor parameter, or None for other decls."""
        block = self.block
        if block is None or not isinstance(decl, A.Parameter):
            return None
        if decl not in getattr(block.decl, "ctor_params", ()):
            return None
        value = block.ctor_args.get(decl.name)
        if isinstance(value, (int, bool, str)):
            return literal(value, param_type(decl))
        raise CompileError(decl.loc, f"constructor parameter {decl.name} of a non-constant "
                                     "kind is not supported")

    def temp(self, base="t") -> str:
        return self.pc.names.fresh("_" + base)

    def trace(self, message: str) -> None:
        self.w.line(f"if _trace: _trace({message!r})")

    def text(self, e) -> str:
        """Source-like text of an lvalue, for trace messages."""
        return source_text(e)

    def find_nested(self, decl):
        """The nested function of an action/table of an enclosing control; the control
        then writes it (it writes only the ones something calls)."""
        scope = self
        while scope is not None:
            if decl in scope.nested:
                scope.needed.add(decl)
                return scope.nested[decl]
            scope = scope.outer
        return None

    def owns(self, decl) -> bool:
        """Whether `decl` is an action/table of the control whose function this is, so
        that its code can be written right here instead of called."""
        return self.is_block and decl in self.nested

    # -- assignment ------------------------------------------------------------------------

    def assign(self, lhs, src: str) -> None:
        """Store the value computed by `src` into lvalue `lhs`."""
        if isinstance(lhs, A.DontCareExpression) or lhs is None:
            self.w.line(src)
            return
        t = strip(lhs.type)
        if is_composite(t):
            self.w.line(f"{self.ex(lhs)}._assign({src})")
            return
        if isinstance(lhs, A.PathExpression):
            name = self.var_name(lhs.decl, lhs)
            if lhs.decl not in self.locals:
                self.nonlocals.add(name)
            self.w.line(f"{name} = {src}")
        elif isinstance(lhs, A.MemberExpression):
            self.w.line(f"{self.ex(lhs.expr)}.{field_attr(lhs.member)} = {src}")
        elif isinstance(lhs, A.SliceExpression):
            hi, lo = lhs.hi.const_value, lhs.lo.const_value
            base_t = strip(lhs.expr.type)
            mask = (1 << (hi - lo + 1)) - 1
            keep = base_t.mask ^ (mask << lo)
            old = to_unsigned_src(self.ex(lhs.expr), base_t)
            merged = f"({old} & {keep}) | ((({src}) & {mask}) << {lo})"
            if base_t.signed:
                half = 1 << (base_t.width - 1)
                merged = f"((({merged}) ^ {half}) - {half})"
            self.assign(lhs.expr, merged)
        elif isinstance(lhs, A.IndexExpression) and isinstance(strip(lhs.expr.type), T.TupleType):
            raise CompileError(lhs.loc, "assigning a tuple element is not supported")
        else:
            raise CompileError(lhs.loc, f"assignment to {type(lhs).__name__} is not supported")

    # -- statements ------------------------------------------------------------------------

    def statements(self, stmts) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, A.VariableDecl) and s.init is None and \
                    i + 1 < len(stmts) and _sets_scalar(stmts[i + 1], s):
                self.declare(s)          # `bit<32> x; x = e;`: no zero stored first
                continue
            self.statement(s)

    def statement(self, s) -> None:
        method = getattr(self, "st_" + type(s).__name__, None)
        if method is None:
            raise CompileError(s.loc, f"statement {type(s).__name__} is not supported")
        method(s)

    def st_AssignmentStatement(self, s):
        if not self.has_side_effects(s.rhs):
            self.assign(s.lhs, self.ex_value(s.rhs, s.lhs.type))
            return
        # P4-16 evaluates the left-hand side first: its stack indices are computed before
        # the right-hand side's calls may change what they read.
        indices = [n.index for n in A.iter_nodes(s.lhs) if isinstance(n, A.IndexExpression)
                   and n.index.const_value is None]
        for index in indices:
            tmp = self.temp("ix")
            self.w.line(f"{tmp} = {self.ex(index)}")
            self.evaluated[id(index)] = tmp
        self.assign(s.lhs, self.ex_value(s.rhs, s.lhs.type))
        for index in indices:
            del self.evaluated[id(index)]

    def st_MethodCallStatement(self, s):
        src = self.call(s.call, want_value=False)
        if src is not None:
            self.w.line(src)

    def st_BlockStatement(self, s):
        self.statements(s.statements)

    def st_EmptyStatement(self, s):
        pass

    def st_ConstantDecl(self, s):
        pass                         # constants are folded into their uses

    def st_VariableDecl(self, s):
        name = self.declare(s)
        t = s.type if s.type is not None else s.type_ref.type
        if s.init is not None:
            self.w.line(f"{name} = {self.ex_value(s.init, t)}")
        else:
            self.w.line(f"{name} = {self.pc.types.default_src(t)}")

    def st_IfStatement(self, s):
        self.w.line(f"if {self.ex(s.cond)}:")
        with self.w.indent():
            self.statement(s.then)
        if s.else_ is not None:
            self.w.line("else:")
            with self.w.indent():
                self.statement(s.else_)

    def st_ExitStatement(self, s):
        self.w.line("raise ExitPipeline()")

    def st_ReturnStatement(self, s):
        values = []
        if s.value is not None:
            values.append(self.ex_value(s.value, s.value.type))
        for p in self.out_params:
            values.append(self.pc.names.of(p, p.name))
        if not values:
            self.w.line("return")
        elif len(values) == 1 and not self.out_params:
            self.w.line(f"return {values[0]}")
        else:
            self.w.line(f"return ({', '.join(values)},)")

    def st_BreakStatement(self, s):
        flag = self.loops[-1] if self.loops else None
        if flag:
            self.w.line(f"{flag} = True")
        self.w.line("break")

    def st_ContinueStatement(self, s):
        # Inside the one-pass inner loop of a for loop with updates, leaving the inner
        # loop is P4's continue: the updates run next.
        self.w.line("break" if self.loops and self.loops[-1] else "continue")

    def st_SwitchStatement(self, s):
        value = self.temp("sw")
        self.w.line(f"{value} = {self.ex(s.expr)}")
        for i, (labels, body, is_default) in enumerate(switch_arms(s)):
            if is_default:
                self.w.line("else:" if i else "if True:")
            else:
                conds = " or ".join(f"{value} == {switch_label(self, s, lb)}" for lb in labels)
                self.w.line(f"{'elif' if i else 'if'} {conds}:")
            with self.w.indent():
                self.statement(body)

    def st_ForStatement(self, s):
        self.statements(s.init)
        self.w.line("while True:")
        with self.w.indent():
            if s.cond is not None:
                self.w.line(f"if not {self.ex(s.cond)}: break")
            if s.updates and _contains(s.body, A.ContinueStatement):
                flag = self.temp("brk")
                self.w.line(f"{flag} = False")
                self.w.line("for _ in (0,):")
                self.loops.append(flag)
                with self.w.indent():
                    self.statement(s.body)
                self.loops.pop()
                self.w.line(f"if {flag}: break")
            else:
                self.loops.append(None)
                self.statement(s.body)
                self.loops.pop()
            self.statements(s.updates)

    def st_ForInStatement(self, s):
        name = self.declare(s.var)
        coll = s.collection
        if isinstance(coll, A.RangeExpression):
            source = f"range({self.ex(coll.lo)}, {self.ex(coll.hi)} + 1)"
        elif isinstance(strip(coll.type), T.StackType):
            source = f"{self.ex(coll)}.elems"
        else:
            source = self.ex(coll)
        self.w.line(f"for {name} in {source}:")
        self.loops.append(None)
        with self.w.indent():
            self.statement(s.body)
        self.loops.pop()

    # -- calls -----------------------------------------------------------------------------

    def call(self, e, want_value):
        kind = e.call_kind
        if kind == "builtin":
            return self.call_builtin(e, want_value)
        if kind in ("extern_function", "extern_method"):
            return self.call_extern(e, want_value)
        if kind == "table_apply":
            table = self.pc.table_of_apply(e, self.block)
            if self.owns(table.decl):
                entry = self.temp("e")
                self.pc.write_table_apply(self, table, entry, inline=True)
                return entry if want_value else None
            fn = self.find_nested(table.decl)
            if fn is None:
                raise CompileError(e.loc, f"table {table.name} is not visible here")
            return f"{fn}()"
        if kind == "action":
            decl = e.callee_decl
            if self.pc.can_inline_action(self, decl):
                self.pc.inline_action(self, decl, e.param_args)
                return None
            fn = self.find_nested(decl) or self.pc.global_action(decl)
            return self.call_p4(fn, e.param_args, False, by_reference=False, body=decl.body)
        if kind == "function":
            fn = self.pc.function(e.callee_decl)
            return self.call_p4(fn, e.param_args, self._returns_value(e.callee_decl),
                                by_reference=False, body=e.callee_decl.body)
        if kind == "block_apply":
            child = self.pc.child_block(e, self.block)
            # The call was checked against the control *type*; the instance applied (perhaps
            # passed as a constructor argument) runs its own body with its own parameters.
            param_args = [(p, a) for p, (_, a) in zip(child.decl.params, e.param_args)]
            if self.pc.can_inline(child) and not self._aliased_composites(param_args):
                self.pc.inline_control(self, child, param_args)
                return None
            fn = self.pc.block_function(child)
            return self.call_p4(fn, param_args, False, by_reference=True,
                                body=getattr(child.decl, "body", None),   # parsers: none
                                parser=isinstance(child.decl, A.ParserDecl))
        raise CompileError(e.loc, f"call of kind {kind} is not supported")

    @staticmethod
    def _returns_value(decl) -> bool:
        rt = decl.return_type.type if decl.return_type is not None else None
        return rt is not None and not isinstance(strip(rt), T.VoidType)

    def call_p4(self, fn, param_args, returns_value, by_reference, extra=(), body=None,
                parser=False):
        args, outs, copy_back = [], [], []
        copied_in = []     # (index in args, writer mark after its source was computed)
        aliased = self._aliased_composites(param_args) if by_reference else set()
        for p, a in param_args:
            pt = param_type(p)
            ref = by_reference and is_composite(pt)
            if a is None:
                if p.direction in (None, "in", "inout"):
                    args.append(self.pc.types.default_src(pt))
                continue
            if ref and id(a) in aliased:
                # Two arguments share storage: real copy-in/copy-out keeps P4's meaning.
                tmp = self.temp("arg")
                self.w.line(f"{tmp} = {self.ex(a)}.copy()")
                args.append(tmp)
                if p.direction in ("out", "inout"):
                    copy_back.append((a, tmp))
            elif p.direction in (None, "in"):
                args.append(self.ex(a) if ref else self.ex_value(a, pt))
                if not ref and a.const_value is None:
                    copied_in.append((len(args) - 1, self.w.mark()))
            elif p.direction == "inout":
                args.append(self.ex(a) if ref else self.ex_value(a, pt))
                if not ref:
                    outs.append(a)
                    if a.const_value is None:
                        copied_in.append((len(args) - 1, self.w.mark()))
            elif p.direction == "out":
                if ref:
                    args.append(self.ex(a))
                else:
                    outs.append(a)
        # Arguments are evaluated left to right: a value copied in before a later argument
        # runs statements (a call with out arguments) is stored before them.
        for i, at in reversed(copied_in):
            if at < self.w.mark():
                tmp = self.temp("in")
                self.w.insert(at, f"{tmp} = {args[i]}")
                args[i] = tmp
        call = f"{fn}({', '.join(list(args) + list(extra))})"
        if not outs and not copy_back:
            return call
        result = self.temp("r")

        def write_copy_back():
            k = 1 if returns_value else 0
            for a in outs:
                if not isinstance(a, A.DontCareExpression):
                    self.assign(a, f"{result}[{k}]")
                k += 1
            for a, tmp in copy_back:
                self.w.line(f"{self.ex(a)}._assign({tmp})")
        if parser:
            # A sub-parser that rejected: bmv2 keeps what it wrote (parser_compiler.py).
            self.w.line("try:")
            with self.w.indent():
                self.w.line(f"{result} = {call}")
            self.w.line("except ParserException as _x:")
            with self.w.indent():
                self.w.line(f"{result} = getattr(_x, 'outs', ())")
                write_copy_back()
                self.w.line("raise")
        elif body is not None and self.pc.may_exit(body):
            # The callee left by `exit`: it put its out values into the exception.
            self.w.line("try:")
            with self.w.indent():
                self.w.line(f"{result} = {call}")
            self.w.line("except ExitPipeline as _x:")
            with self.w.indent():
                if outs:
                    self.w.line(f"{result} = getattr(_x, 'outs', ())")
                write_copy_back()
                self.w.line("raise")
        else:
            self.w.line(f"{result} = {call}")
        write_copy_back()
        return f"{result}[0]" if returns_value else None

    def _aliased_composites(self, param_args) -> set:
        """ids of composite arguments whose storage overlaps another argument's."""
        aliased = aliased_arguments(param_args, self.text)
        return {id(a) for _, a in param_args if id(a) in aliased and is_composite(a.type)}

    # -- function headers --------------------------------------------------------------------

    def function_params(self, params, by_reference=False) -> tuple[list[str], list]:
        """Python parameter names for the passed P4 parameters, and the out parameters
        that start as fresh locals (and are returned)."""
        names, fresh = [], []
        for p in params:
            name = self.declare(p)
            pt = param_type(p)
            ref = by_reference and is_composite(pt)
            if p.direction == "out" and not ref:
                fresh.append(p)
            else:
                names.append(name)
        return names, fresh

    def returned_params(self, params, by_reference=False) -> list:
        return [p for p in params if p.direction in ("out", "inout")
                and not (by_reference and is_composite(param_type(p)))]

    def init_fresh(self, fresh) -> None:
        for p in fresh:
            self.w.line(f"{self.pc.names.of(p, p.name)} = "
                        f"{self.pc.types.default_src(param_type(p))}")

    def start_member_locals(self) -> None:
        """From here on, composite members of composite parameters are read once, by
        lines put here when `end_member_locals` is called (at the same indentation)."""
        self.member_locals = {}
        self._member_mark = self.w.mark()

    def end_member_locals(self) -> None:
        for i, (src, name) in enumerate(self.member_locals.items()):
            self.w.insert(self._member_mark + i, f"{name} = {src}")
        self.member_locals = None

    def finish_return(self) -> None:
        """The implicit return at the end of a function body."""
        if self.out_params:
            self.st_ReturnStatement(A.ReturnStatement())


def _sets_scalar(stmt, decl) -> bool:
    """Whether `stmt` certainly stores a whole new value into scalar variable `decl`
    without reading it first: `x = e` (e not naming x).  (`reg.read(x, i)` does not: outside
    the array it leaves x as it was, as on bmv2.)"""
    if is_composite(decl.type if decl.type is not None else decl.type_ref.type):
        return False
    if not isinstance(stmt, A.AssignmentStatement):
        return False
    target, source = stmt.lhs, stmt.rhs
    return isinstance(target, A.PathExpression) and target.decl is decl and not any(
        isinstance(n, A.PathExpression) and n.decl is decl for n in A.iter_nodes(source))


def _contains(node, cls) -> bool:
    if isinstance(node, cls):
        return True
    if isinstance(node, A.BlockStatement):
        return any(_contains(s, cls) for s in node.statements)
    if isinstance(node, A.IfStatement):
        return _contains(node.then, cls) or (node.else_ is not None and _contains(node.else_, cls))
    if isinstance(node, A.SwitchStatement):
        return any(c.body is not None and _contains(c.body, cls) for c in node.cases)
    return False
