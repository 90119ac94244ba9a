"""Where p4lang's real tools are: p4c (p4c-bm2-ss) and bmv2 (simple_switch, simple_switch_grpc,
simple_switch_CLI), the reference our own target imitates.

Looked up in this order, the first that has them wins:
  1. $P4LANG_HOME, a bundle laid out as ../shared/p4lang (bin/, lib/, share/p4c/p4include);
  2. the bundle beside the repository, ../shared/p4lang;
  3. PATH (the lab VM's packaged p4c and bmv2).

A bundle copied without its symbolic links holds a one-line text file where p4c looks for its
include directory (bin/../p4include), so for bundles the include directory is also passed as
P4C_16_INCLUDE_PATH.  `environment()` gives what a child process needs to run the tools.

Under CI=true a missing toolchain is an error wherever it is asked for (the bmv2 tier may not
vanish quietly); elsewhere the tests that need it skip with the one line `missing()` gives.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BESIDE_REPO = os.path.join(os.path.dirname(REPO), "shared", "p4lang")

P4C = "p4c-bm2-ss"
SIMPLE_SWITCH = "simple_switch"
SIMPLE_SWITCH_GRPC = "simple_switch_grpc"
SIMPLE_SWITCH_CLI = "simple_switch_CLI"
TOOLS = (P4C, SIMPLE_SWITCH, SIMPLE_SWITCH_GRPC, SIMPLE_SWITCH_CLI)


class ToolchainMissing(RuntimeError):
    """A p4lang tool that was asked for is not there; the message is one line naming it."""


@dataclass(frozen=True)
class Toolchain:
    origin: str                      # "$P4LANG_HOME", "../shared/p4lang" or "PATH"
    home: Optional[str]              # the bundle's root; None for PATH
    paths: dict                      # tool name -> executable path (only tools found)

    def path(self, tool: str) -> str:
        if tool not in self.paths:
            raise ToolchainMissing(f"{tool} not found ({self.where()})")
        return self.paths[tool]

    def where(self) -> str:
        return f"{self.origin}: {self.home}" if self.home else "on PATH"

    @property
    def include_dir(self) -> Optional[str]:
        """p4c's own include directory (core.p4, v1model.p4), where a bundle holds it."""
        if self.home is None:
            return None
        candidate = os.path.join(self.home, "share", "p4c", "p4include")
        return candidate if os.path.isdir(candidate) else None

    @property
    def python_dir(self) -> Optional[str]:
        """bmv2's Python modules (runtime_CLI, bm_runtime: the Thrift client)."""
        if self.home is None:
            return None
        candidate = os.path.join(self.home, "lib", "python3")
        return candidate if os.path.isdir(candidate) else None

    def environment(self, base: Optional[dict] = None) -> dict:
        """A copy of `base` (default os.environ) with which the tools run from a child process."""
        env = dict(os.environ if base is None else base)
        if self.home is None:
            return env

        def prepend(name, value):
            env[name] = value + (os.pathsep + env[name] if env.get(name) else "")
        prepend("PATH", os.path.join(self.home, "bin"))
        prepend("LD_LIBRARY_PATH", os.path.join(self.home, "lib"))
        if self.python_dir:
            prepend("PYTHONPATH", self.python_dir)
        if self.include_dir and not os.path.isdir(os.path.join(self.home, "p4include")):
            env["P4C_16_INCLUDE_PATH"] = self.include_dir
        return env


def _bundle(origin: str, home: str) -> Optional[Toolchain]:
    bin_dir = os.path.join(home, "bin")
    paths = {tool: os.path.join(bin_dir, tool) for tool in TOOLS
             if os.access(os.path.join(bin_dir, tool), os.X_OK)}
    return Toolchain(origin, os.path.abspath(home), paths) if paths else None


def find() -> Optional[Toolchain]:
    """The first place that has any of the tools, or None."""
    home = os.environ.get("P4LANG_HOME")
    if home:
        found = _bundle("$P4LANG_HOME", home)
        if found is None:
            raise ToolchainMissing(f"P4LANG_HOME={home} holds none of {', '.join(TOOLS)} in bin/")
        return found
    if os.path.isdir(BESIDE_REPO):
        found = _bundle("../shared/p4lang", BESIDE_REPO)
        if found is not None:
            return found
    paths = {tool: shutil.which(tool) for tool in TOOLS if shutil.which(tool)}
    return Toolchain("PATH", None, paths) if paths else None


def lookup(tools=TOOLS) -> tuple:
    """(the toolchain, None) when every tool in `tools` is found; else (None, one line saying
    what is missing)."""
    try:
        found = find()
    except ToolchainMissing as problem:
        return None, str(problem)
    absent = [t for t in tools if found is None or t not in found.paths]
    if not absent:
        return found, None
    return None, (f"p4lang toolchain: {', '.join(absent)} not found (looked in $P4LANG_HOME, "
                  f"../shared/p4lang, PATH)")


def missing(tools=TOOLS) -> Optional[str]:
    """None when every tool in `tools` is found; else one line saying what is missing."""
    return lookup(tools)[1]


def require(tools=TOOLS) -> Toolchain:
    """The toolchain, with every tool in `tools`; ToolchainMissing (one line) otherwise."""
    found, problem = lookup(tools)
    if problem:
        raise ToolchainMissing(problem)
    return found


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")
