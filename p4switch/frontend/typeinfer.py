"""Type inference: the second pass (p4c's TypeInference), after name resolution.

`infer_types(program)` walks the declarations in order and annotates the AST in place:

* every expression gets `.type` (a `types.Type`); integer literals and other
  infinite-precision constants take the width their context requires (the assignment
  target, the other operand, the parameter type, ...);
* calls get `.callee_decl`/`.call_kind`/`.builtin`/`.param_args`/`.resolved_type_args`,
  members `.decl`, type references and declarations `.type`.

The work is split along the language: typeinfer_decls (declarations), typeinfer_types
(type syntax, generics), typeinfer_stmts, typeinfer_exprs and typeinfer_calls. Type errors
raise CompileError at the offending expression; constructs the switch does not support
raise CompileError naming the construct. Values are folded by constfold.py (on demand here,
for everything else in the pass that follows); table rules and writability are checked by
the passes tables.py and lvalues.py.
"""

from __future__ import annotations

from . import ast as A
from . import types as T
from .typeinfer_calls import CallTyping
from .typeinfer_decls import Context, DeclarationTyping
from .typeinfer_exprs import ExpressionTyping
from .typeinfer_stmts import StatementTyping
from .typeinfer_types import TypeTyping


class TypeInference(DeclarationTyping, TypeTyping, StatementTyping, ExpressionTyping, CallTyping):
    """Type inference for one program (see the module docstring)."""

    def __init__(self, program: A.Program):
        self.program = program
        self.error_type = T.ErrorType([])
        self.match_kind_type = T.MatchKindType([])
        self.ctx = Context("top")
        self._struct_cache: dict = {}

    def run(self):
        for decl in self.program.declarations:
            self.top_declaration(decl)
            if isinstance(decl, A.Instantiation) and decl.name == "main":
                self.program.main = decl


def infer_types(program: A.Program) -> A.Program:
    """Infer the types of `program` in place (see the module docstring)."""
    TypeInference(program).run()
    return program
