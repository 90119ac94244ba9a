"""Table checks: the pass after constant folding that checks the rules of table
declarations which are not about types.

`check_tables(program)`: an action is listed once; the default action and every entry's
action are in the table's actions; entries have one keyset per key; entry priorities,
the action arguments of the default action and of entries, and the table properties
`size`, `priority_delta`, `largest_priority_wins` and `support_timeout` are compile-time
constants; `implementation`, `counters` and `meters` name extern instances. Entries
written with the older `@priority(N)` annotation get their `priority` here.
"""

from __future__ import annotations

from . import ast as A
from . import types as T
from .constfold import value
from .errors import CompileError
from .typeinfer_decls import is_ctor_param


def check_tables(program: A.Program) -> A.Program:
    """Check every table of `program` (see the module docstring)."""
    for d in program.declarations:
        if isinstance(d, A.ControlDecl):
            for local in d.locals:
                if isinstance(local, A.TableDecl):
                    check_table(local)
    return program


def require_const(e: A.Expression, what: str):
    v = value(e)
    if v is None:
        raise CompileError(e.loc, f"{what} must be a compile-time constant")
    return v


def listed_action(table: A.TableDecl, action_decl):
    for ref in table.actions:
        if ref.decl is action_decl:
            return ref
    return None


def check_table(d: A.TableDecl):
    seen = set()
    for ref in d.actions:
        if ref.decl in seen:
            raise CompileError(ref.loc, f"action '{ref.name}' is listed twice in table {d.name}")
        seen.add(ref.decl)
    if d.default_action is not None:
        ref = d.default_action
        if listed_action(d, ref.decl) is None:
            raise CompileError(ref.loc, f"default action '{ref.name}' is not in the actions "
                                        f"of table {d.name}")
        constant_arguments(ref)
    for entry in d.entries:
        if len(entry.keys) != len(d.key) and not (len(entry.keys) == 1 and isinstance(
                entry.keys[0], (A.DefaultExpression, A.DontCareExpression))):
            raise CompileError(entry.loc, f"entry has {len(entry.keys)} keys, table {d.name} "
                                          f"has {len(d.key)}")
        if listed_action(d, entry.action.decl) is None:
            raise CompileError(entry.action.loc, f"action '{entry.action.name}' is not in the "
                                                 f"actions of table {d.name}")
        constant_arguments(entry.action)
        if entry.priority is not None:
            require_const(entry.priority, "entry priority")
    for prop in d.properties.values():
        table_property(prop)
    annotated_entry_priorities(d)


def constant_arguments(ref: A.ActionRef):
    """The directionless arguments of a default action or an entry's action are constants."""
    for p, a in ref.param_args or ():
        if p.direction is None and a is not None:
            require_const(a, f"argument '{p.name}' of action '{ref.decl.name}'")


def table_property(prop: A.TableProperty):
    name = prop.name
    if name in ("size", "priority_delta"):
        if not is_ctor_param(prop.value):
            require_const(prop.value, f"table property {name}")
    elif name in ("largest_priority_wins", "support_timeout"):
        require_const(prop.value, f"table property {name}")
    elif name in ("implementation", "counters", "meters"):
        if not isinstance(prop.value.type, T.ExternType):
            raise CompileError(prop.value.loc, f"table property {name} must name an extern instance")


def annotated_entry_priorities(table: A.TableDecl):
    """Give entries written with the older `@priority(N)` annotation their `priority`.

    That form (p4c's bmv2 convention) lets the smaller number win, and an entry without
    the annotation takes its 1-based position; translate it into the table's own
    convention (`largest_priority_wins`, default true) so both forms mean one thing."""
    annotated = [(e, A.find_annotation(e.annotations, "priority")) for e in table.entries]
    if all(ann is None for _, ann in annotated):
        return
    kinds = [k.match_kind for k in table.key]
    if not any(k in ("ternary", "range", "optional") for k in kinds) and kinds.count("lpm") < 2:
        # Exact keys (and one lpm key, ranked by prefix length) never leave a choice
        # between matching entries, so there is nothing for a priority to decide.
        return
    smaller_wins = []
    for position, (entry, ann) in enumerate(annotated, start=1):
        if ann is None:
            smaller_wins.append(position)
            continue
        if entry.priority is not None:
            raise CompileError(ann.loc, "an entry cannot have both 'priority =' and @priority")
        if len(ann.args) != 1:
            raise CompileError(ann.loc, "@priority takes one compile-time constant")
        v = require_const(ann.args[0], "entry priority")
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CompileError(ann.loc, f"@priority must be a positive integer, got {v}")
        smaller_wins.append(v)
    if any(e.priority is not None for e in table.entries):
        raise CompileError(table.loc, f"table {table.name}: entries mix 'priority =' "
                                      "with @priority")
    largest_wins = table.properties.get("largest_priority_wins")
    flip = largest_wins is None or bool(value(largest_wins.value))
    top = max(smaller_wins) + 1
    for (entry, ann), v in zip(annotated, smaller_wins):
        priority = top - v if flip else v
        entry.priority = A.IntLiteral(loc=(ann or entry).loc, value=priority, text=str(priority),
                                      type=T.INT, const_value=priority)
