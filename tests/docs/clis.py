"""Every command line of the project, as its argparse parser, without running anything.

`COMMANDS` maps the words after `python -m` (`("experiments", "compare")`, `("lab",)`) to a
function that builds the parser that command uses; `parser_for(argv)` finds the entry for a
command line (`["experiments", "compare", "--topo", ...]`) and returns (parser, the rest of
the arguments).  tests/docs/test_docs_help.py runs every `--help`; test_docs_commands.py parses
the command lines quoted in README.md and docs/.
"""

from __future__ import annotations

import argparse


def _experiments(name: str):
    def build():
        import importlib
        if name == "table":
            from experiments.__main__ import table_parser
            return table_parser()
        module = importlib.import_module(f"experiments.{name.replace('-', '_')}")
        return module.build_parser()
    return build


def _hosts(name: str):
    def build():
        if name in ("allreduce", "ring"):
            from hosts import allreduce
            return allreduce.build_parser(None if name == "allreduce" else "ring")
        if name == "train":
            from hosts import train       # torch: about a second to import
            return train.build_parser()
        import importlib
        package = "hosts.ina" if name == "worker" else "hosts"
        return importlib.import_module(f"{package}.{name}").build_parser()
    return build


def _lab():
    from lab.command import build_parser
    return build_parser()


def _p4switch():
    from p4switch.cli import build_parser
    return build_parser()


def _p4switch_run():
    from p4switch.device.run import _parser
    return _parser()


def _controller():
    from controller.__main__ import _arguments
    return _arguments()


EXPERIMENTS = ("compare", "sweep", "linkrate", "plot", "table", "train", "train-plot",
               "simulate", "calibrate", "scaling-figure", "soak")
HOSTS = ("worker", "allreduce", "ring", "gloo", "train")

# (words after `python -m`) -> parser factory.  p4switch and controller parse their
# subcommand themselves (argparse subparsers), except p4switch run and group, which hand
# their arguments to p4switch.device.run's parser (group: one set per member, split by ---).
COMMANDS = {("experiments", name): _experiments(name) for name in EXPERIMENTS}
COMMANDS.update({("hosts", name): _hosts(name) for name in HOSTS})
COMMANDS.update({("lab",): _lab, ("p4switch",): _p4switch, ("p4switch", "run"): _p4switch_run,
                 ("p4switch", "group"): _p4switch_run, ("controller",): _controller})

# What `python -m X --help` and `python -m X SUB --help` must answer, with exit 0.
HELP_COMMANDS = ([("experiments",), ("hosts",), ("lab",), ("p4switch",), ("controller",)]
                 + [key for key in COMMANDS if len(key) == 2]
                 + [("p4switch", sub) for sub in ("compile", "stf", "bench")]
                 + [("controller", sub) for sub in ("plan", "status")])


def parser_for(argv: list) -> tuple:
    """(parser, remaining arguments, key) for `python -m ARGV...`; KeyError if ARGV is not
    a project command."""
    for length in (2, 1):
        key = tuple(argv[:length])
        if key in COMMANDS:
            return COMMANDS[key](), list(argv[length:]), key
    raise KeyError(" ".join(argv[:2]))


def option_strings(parser: argparse.ArgumentParser) -> set:
    """Every option string of the parser and of its subcommands' parsers."""
    found = set(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= option_strings(sub)
    return found
