"""Declared abstract syntax tree for P4-16 programs, plus the elaborated pipeline.

Every node has `.loc` (a `Loc`: file, line, col of the original source). The parser builds the
tree; the passes (driver.py lists them) fill in the annotation fields that every class declares up front:

* expressions: `.type` (a `types.Type`) and `.const_value` (a Python int/bool/str, or None
  when the expression is not a compile-time constant),
* names: `PathExpression.decl` / `MemberExpression.decl` (the declaration they refer to),
* calls: `MethodCallExpression.callee_decl` and `.call_kind` (see that class),
* type references: `TypeRef.type` (the resolved `types.Type`),
* declarations that introduce a type: `.type`.

`ast_pipeline.py` (`Pipeline` and friends) holds what `elaborate.py` produces from
the program's `main` instantiation: which blocks fill the v1model slots and every
P4Info-visible object with its fully qualified name. The back end and p4info.py read it.

Nodes compare by identity (eq=False) so they can be used as dictionary keys.

The classes live in modules along the language: `ast_core` (Loc, Node, the `node`
decorator that declares each class's children, annotations, type syntax, `iter_nodes`),
`ast_expressions`, `ast_statements`, `ast_declarations` and `ast_pipeline`; this module
gathers them so the rest of p4switch names every node as `ast.X`.
"""

from .ast_core import *  # noqa: F401,F403
from .ast_core import Loc, NO_LOC, Node, iter_nodes, node, find_annotation  # noqa: F401
from .ast_declarations import *  # noqa: F401,F403
from .ast_expressions import *  # noqa: F401,F403
from .ast_pipeline import *  # noqa: F401,F403
from .ast_statements import *  # noqa: F401,F403
