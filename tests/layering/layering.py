"""The import rules of docs/design.md (Layers), read from the source with `ast`.

Every project package may import only the packages below it in LAYERS_MAY_IMPORT.  An import
anywhere in a module counts, inside functions too.  `back_arrows` returns one line per import
that breaks a rule, naming the importing module and the imported one."""

from __future__ import annotations

import ast
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BASE = {"contracts", "nativebuild"}      # dependency-free: anyone may import them
LAYERS_MAY_IMPORT = {
    "contracts": set(),
    "nativebuild": set(),
    "p4switch": BASE,
    "hosts": BASE,
    "topologies": BASE | {"p4switch", "hosts"},
    "controller": BASE | {"p4switch", "topologies"},
    "fabric": BASE | {"p4switch", "topologies", "controller"},
    # the SimGrid model of a fabric: a sibling of fabric, driven by experiments
    "simulation": BASE | {"hosts", "topologies", "controller"},
    # a job (one collective run) on a running fabric: modes, launching, barrier, results
    "jobs": BASE | {"p4switch", "hosts", "topologies", "controller", "fabric"},
    "experiments": BASE | {"p4switch", "hosts", "topologies", "controller", "fabric", "jobs",
                           "simulation"},
    # the lab's verbs are calls on a fabric and its jobs, nothing more (Mininet is external)
    "lab": BASE | {"fabric", "jobs"},
}
PROJECT_PACKAGES = set(LAYERS_MAY_IMPORT)
# Inside a package: parts that may not import another part of it.  p4switch's runtime is the
# reference the back ends build on; choosing a back end is p4switch/targets.py's job.
PARTS_MAY_NOT_IMPORT = {
    "p4switch.runtime": ("p4switch.backend", "p4switch.targets"),
}
# Text a package's files may not contain.  topologies starts commands through the spawner it
# is handed (fabric/spawner.py) and names no module of the hosts package: `hosts.ina.worker`,
# "hosts.__main__" or `python -m hosts` fail; `self.hosts.append` and "four hosts." pass.
FORBIDDEN_TEXT = {
    "topologies": re.compile(r"(?<![\w.])hosts\.\w|-m hosts\b"),
}
# Command-line modules: what they share lives in a module of its own (jobs.runner for the
# runs, fabric.running for a fabric's options), so no other package imports them.  Any `PACKAGE.__main__` counts too.
COMMAND_LINE_MODULES = {"experiments.compare", "experiments.sweep", "experiments.linkrate",
                        "experiments.plot", "experiments.soak", "experiments.train",
                        "experiments.train_plot", "lab.command", "controller.__main__"}
# Packages whose imports belong at the top of the module: one inside a function needs a
# reason in a comment next to it (an optional or slow dependency, a cycle it breaks).
TOP_IMPORT_PACKAGES = ("contracts", "hosts", "topologies", "controller", "fabric",
                       "simulation", "jobs", "experiments", "lab")
# Packages below the commands (experiments/, lab/): they are handed typed requests
# (contracts/requests.py) and never read a parsed-options object.  A parameter with one of
# OPTION_NAMES whose attributes are read, or that getattr/hasattr/vars look into, counts;
# command-line modules (`PACKAGE.__main__`) parse their own.  hosts/ and p4switch/ stand
# alone: their modules are commands of their own.
TYPED_REQUEST_PACKAGES = ("topologies", "controller", "fabric", "jobs", "simulation")
OPTION_NAMES = {"args", "options", "namespace", "ns", "parsed", "opts"}
LIST_METHODS = {"append", "extend", "insert", "pop", "index", "count", "copy", "items",
                "get", "setdefault", "keys", "values", "update"}


def module_name(path: str) -> str:
    """`controller/planner.py` -> `controller.planner` (`pkg/__init__.py` -> `pkg`)."""
    parts = os.path.relpath(path, REPO)[:-len(".py")].split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(module: str, source: str, is_package: bool = False) -> list:
    """(line, dotted name) of every import in `source`, relative ones resolved."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = module.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module
            if node.module is None and node.level:     # from . import a, b: each a module
                found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, base))
    return found


def back_arrows(module: str, source: str, is_package: bool = False) -> list:
    """One line per import of `module` that its layer may not make."""
    package = module.split(".")[0]
    allowed = LAYERS_MAY_IMPORT[package] | {package}
    lines = []
    for _line, name in imported_modules(module, source, is_package):
        target = name.split(".")[0]
        if target in PROJECT_PACKAGES and target not in allowed:
            lines.append(f"{module} imports {name}: {package} may not import {target} "
                         f"(docs/design.md, Layers)")
        elif target != package and (name in COMMAND_LINE_MODULES or name.endswith(".__main__")):
            lines.append(f"{module} imports {name}: a command-line module of {target} "
                         f"(docs/design.md, Layers)")
        for part, forbidden in PARTS_MAY_NOT_IMPORT.items():
            below = [f for f in forbidden if name == f or name.startswith(f + ".")]
            if (module == part or module.startswith(part + ".")) and below:
                lines.append(f"{module} imports {name}: {part} may not import {below[0]} "
                             f"(docs/design.md, Layers)")
    return lines


def forbidden_text(module: str, source: str) -> list:
    """One line per line of `module` holding text its package may not contain."""
    pattern = FORBIDDEN_TEXT.get(module.split(".")[0])
    if pattern is None:
        return []
    return [f"{module}:{number}: names the hosts package ({match.group(0)!r}): a network "
            f"starts commands through its spawner (docs/design.md, Layers)"
            for number, line in enumerate(source.splitlines(), 1)
            for match in [pattern.search(line)] if match]


def unexplained_local_imports(module: str, source: str) -> list:
    """One line per import inside a function without a comment saying why it is there (on
    its line or one of the three lines above, inside the function)."""
    lines = source.splitlines()
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                nearby = lines[max(function.lineno, node.lineno - 4):node.lineno]
                if not any("#" in line for line in nearby):
                    found.append(f"{module}:{node.lineno}: import inside {function.name}() "
                                 f"without a reason: move it to the top or say why")
    return found


def parsed_options_read(module: str, source: str) -> list:
    """One line per place a module below the commands reads a parsed-options object."""
    if module.split(".")[0] not in TYPED_REQUEST_PACKAGES or module.endswith(".__main__"):
        return []
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        named = ((isinstance(node, ast.ImportFrom) and node.module == "argparse"
                  and any(alias.name == "Namespace" for alias in node.names))
                 or (isinstance(node, ast.Attribute) and node.attr == "Namespace"
                     and isinstance(node.value, ast.Name) and node.value.id == "argparse"))
        if named:
            found.append(f"{module}:{node.lineno}: names argparse.Namespace: hand it a typed "
                         f"request (contracts/requests.py)")
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        every = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        names = {a.arg for a in every} & OPTION_NAMES
        for node in ast.walk(function):
            read = None
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in names and node.attr not in LIST_METHODS):
                read = f"{node.value.id}.{node.attr}"
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr", "vars") and node.args
                  and isinstance(node.args[0], ast.Name) and node.args[0].id in names):
                read = f"{node.func.id}({node.args[0].id}, ...)"
            if read:
                found.append(f"{module}:{node.lineno}: {function.name}() reads parsed options "
                             f"({read}): hand it a typed request (contracts/requests.py)")
    return found


def runtime_imports(module: str, source: str, is_package: bool = False) -> list:
    """imported_modules without the imports under `if TYPE_CHECKING:` (type names only,
    never executed)."""
    tree = ast.parse(source)
    typing_only = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                   for inner in ast.walk(node)}
    kept = ast.Module(body=[], type_ignores=[])
    kept.body = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                 and id(node) not in typing_only]
    found = imported_modules(module, ast.unparse(kept), is_package) if kept.body else []
    # `from package import name`: name may be a module of the package
    found += [(line, f"{name}.{alias.name}") for node in kept.body
              if isinstance(node, ast.ImportFrom) and node.module and not node.level
              for line, name in [(node.lineno, node.module)] for alias in node.names]
    return found


def import_cycles(modules: dict) -> list:
    """Circles of run-time imports between project modules ({module: (source, is_package)}),
    each as the modules on it, smallest first (an import of a package counts as one of its
    __init__; a module importing its own package's names is no circle)."""
    graph = {}
    for module, (source, is_package) in modules.items():
        for _line, name in runtime_imports(module, source, is_package):
            target = name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            own_package = module.startswith(target + ".")
            if target and target != module and not own_package:
                graph.setdefault(module, set()).add(target)
    cycles, done = [], set()
    for start in sorted(graph):       # a depth-first search from every module
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for target in sorted(graph.get(node, ())):
                if target == start and frozenset(path) not in done:
                    done.add(frozenset(path))
                    cycles.append(path)
                elif target not in path and target > start and len(path) < 6:
                    stack.append((target, path + [target]))
    return sorted(cycles, key=len)


def project_modules() -> list:
    """(module name, path) of every Python file of the project packages."""
    modules = []
    for package in sorted(PROJECT_PACKAGES):
        for directory, _dirs, files in os.walk(os.path.join(REPO, package)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    modules.append((module_name(path), path))
    return modules


def check_project() -> list:
    problems = []
    for module, path in project_modules():
        with open(path) as handle:
            source = handle.read()
        problems += back_arrows(module, source, path.endswith("__init__.py"))
        problems += forbidden_text(module, source)
        problems += parsed_options_read(module, source)
        if module.split(".")[0] in TOP_IMPORT_PACKAGES:
            problems += unexplained_local_imports(module, source)
    return problems
