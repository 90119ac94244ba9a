"""The layers of docs/design.md hold: no project package imports one above it."""

import pytest

from layering import (back_arrows, check_project, forbidden_text, import_cycles,
                      imported_modules, parsed_options_read, project_modules, unexplained_local_imports)


def test_no_back_arrows_in_the_project():
    problems = check_project()
    assert not problems, "\n".join(problems)


def test_every_project_package_is_read():
    packages = {module.split(".")[0] for module, _ in project_modules()}
    assert {"contracts", "hosts", "p4switch", "topologies", "controller", "fabric",
            "experiments", "lab"} <= packages


@pytest.mark.parametrize("module, source, expected", [
    ("controller.manager", "from fabric import Fabric\n",
     "controller.manager imports fabric: controller may not import fabric"),
    ("topologies.net", "def f():\n    import controller.recovery\n",
     "topologies.net imports controller.recovery: topologies may not import controller"),
    ("experiments.compare", "from lab.cli import LabCLI\n",
     "experiments.compare imports lab.cli: experiments may not import lab"),
    ("hosts.ina.worker", "from topologies.spec import parse_topology\n",
     "hosts.ina.worker imports topologies.spec: hosts may not import topologies"),
    ("p4switch.cli", "from experiments import results\n",
     "p4switch.cli imports experiments: p4switch may not import experiments"),
    ("controller.entries", "from ..hosts import protocol\n",
     "controller.entries imports hosts: controller may not import hosts"),
    ("p4switch.runtime.switch", "def f():\n    from ..backend.c.binding import NativeSwitch\n",
     "p4switch.runtime.switch imports p4switch.backend.c.binding: p4switch.runtime may not "
     "import p4switch.backend"),
    ("p4switch.runtime.values", "from ..targets import Switch\n",
     "p4switch.runtime.values imports p4switch.targets: p4switch.runtime may not import "
     "p4switch.targets"),
])
def test_a_back_arrow_is_one_line_naming_both_modules(module, source, expected):
    (line,) = back_arrows(module, source)
    assert line.startswith(expected)
    assert "\n" not in line


def test_imports_the_layer_allows_pass():
    assert back_arrows("lab.cli", "from jobs.runner import launch_workers\n"
                                  "import fabric\nfrom contracts.cli import one_line\n") == []
    assert back_arrows("controller.planner", "from .slots import SlotAllocator\n"
                                             "from contracts.wire import SERVICE_IP\n") == []
    assert back_arrows("hosts.cli", "import numpy\nimport argparse\n") == []
    assert back_arrows("p4switch.targets", "from .runtime.switch import Switch\n"
                                           "from .backend.c.binding import NativeSwitch\n") == []
    assert back_arrows("p4switch.backend.c.binding", "from ...runtime.switch import Switch\n") == []


def test_relative_imports_resolve_in_modules_and_packages():
    assert imported_modules("controller.manager", "from .planner import Planner\n") == \
        [(1, "controller.planner")]
    assert imported_modules("controller", "from .client import Pipeline\n", is_package=True) == \
        [(1, "controller.client")]
    assert imported_modules("p4switch.device.run", "from .. import stf\n") == \
        [(1, "p4switch.stf")]


def test_the_lab_imports_nothing_of_experiments():
    (line,) = back_arrows("lab.cli", "from experiments import train_plot\n")
    assert line.startswith("lab.cli imports experiments: lab may not import experiments")
    (line,) = back_arrows("lab.cli", "from controller import Planner\n")
    assert line.startswith("lab.cli imports controller: lab may not import controller")
    lab = [(module, path) for module, path in project_modules() if module.startswith("lab")]
    assert {module for module, _ in lab} >= {"lab", "lab.cli", "lab.command"}
    for module, path in lab:
        with open(path) as handle:
            imported = {name.split(".")[0] for _, name in imported_modules(module, handle.read())}
        assert not imported & {"experiments", "controller", "topologies", "hosts", "p4switch"}, \
            (module, imported)


def test_no_package_imports_a_command_line_module_of_another():
    (line,) = back_arrows("jobs.runner", "from lab.command import build_parser\n")
    assert line.startswith("jobs.runner imports lab.command: jobs may not import lab")
    (line,) = back_arrows("experiments.soak", "from controller.__main__ import main\n")
    assert line.startswith("experiments.soak imports controller.__main__: a command-line module")
    (line,) = back_arrows("jobs.runner", "import controller.__main__\n")
    assert "a command-line module of controller" in line
    assert back_arrows("experiments.sweep", "from experiments.compare import Point\n") == []


def test_a_function_local_import_needs_a_stated_reason():
    source = ("def f():\n    import json\n    return json\n\n"
              "def g():\n    import torch   # optional: only gloo runs need it\n\n"
              "def h():\n    # matplotlib takes a second to load\n    import matplotlib\n")
    assert unexplained_local_imports("hosts.x", source) == [
        "hosts.x:2: import inside f() without a reason: move it to the top or say why"]


def test_topologies_may_not_name_the_hosts_package():
    source = ('PRELOAD = ("hosts.__main__",)\n'
              'self.hosts.append(host)   # four hosts.\n'
              '# runs `python -m hosts worker` commands\n')
    assert forbidden_text("topologies.net", source) == [
        "topologies.net:1: names the hosts package ('hosts._'): a network starts commands "
        "through its spawner (docs/design.md, Layers)",
        "topologies.net:3: names the hosts package ('-m hosts'): a network starts commands "
        "through its spawner (docs/design.md, Layers)"]
    assert forbidden_text("fabric.spawner", source) == []


@pytest.mark.parametrize("module, source, read", [
    ("fabric.running", "def requested(args):\n    return args.topo\n", "args.topo"),
    ("jobs.runner", "def run(fabric, options):\n    return getattr(options, 'k', 64)\n",
     "getattr(options, ...)"),
    ("topologies.net", "def f(ns):\n    return vars(ns)\n", "vars(ns, ...)"),
])
def test_below_the_commands_nothing_reads_parsed_options(module, source, read):
    (line,) = parsed_options_read(module, source)
    assert line == (f"{module}:2: {source.split('(')[0][4:]}() reads parsed options ({read}): "
                    "hand it a typed request (contracts/requests.py)")


def test_typed_requests_argv_lists_and_the_commands_pass():
    assert parsed_options_read("fabric.spawner", "def spawn(node, args: list):\n"
                                                 "    args.append('x')\n    return args\n") == []
    assert parsed_options_read("jobs.runner", "def run(fabric, request):\n"
                                              "    return request.k\n") == []
    # experiments/ and lab/ parse the command line; a package's __main__ parses its own
    assert parsed_options_read("experiments.compare", "def f(args):\n    return args.k\n") == []
    assert parsed_options_read("controller.__main__", "def f(args):\n    return args.k\n") == []


def test_below_the_commands_no_module_names_the_namespace():
    (line,) = parsed_options_read("jobs.modes", "from argparse import Namespace\n")
    assert line.startswith("jobs.modes:1: names argparse.Namespace")
    (line,) = parsed_options_read("fabric.running", "import argparse\nx = argparse.Namespace()\n")
    assert line.startswith("fabric.running:2: names argparse.Namespace")


def test_no_circle_of_imports_in_the_project():
    modules = {}
    for module, path in project_modules():
        with open(path) as handle:
            modules[module] = (handle.read(), path.endswith("__init__.py"))
    assert import_cycles(modules) == []


def test_a_circle_is_found_and_a_type_only_import_is_none():
    assert import_cycles({"jobs.a": ("from jobs import b\n", False),
                          "jobs.b": ("def f():\n    from jobs.a import x\n", False)}) == \
        [["jobs.a", "jobs.b"]]
    typing_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jobs.a import x\n"
    assert import_cycles({"jobs.a": ("from jobs import b\n", False),
                          "jobs.b": (typing_only, False)}) == []
