"""Every `--help` works: `python -m experiments|hosts|lab|p4switch|controller --help` and each
subcommand's exit 0, print a usage line, and show every option's default (contracts/cli.py,
DefaultsHelpFormatter).  The five top-level commands run as processes; the subcommands run
in process through the same dispatchers (`python -m X SUB --help` does nothing else)."""

import contextlib
import io
import subprocess
import sys

import pytest

from clis import COMMANDS, EXPERIMENTS, HELP_COMMANDS, HOSTS
from contracts.cli import shown_default
from topologies.switches import REPO


def dispatcher(package: str):
    if package == "experiments":
        from experiments.__main__ import main
    elif package == "hosts":
        from hosts.__main__ import main
    elif package == "p4switch":
        from p4switch.cli import main
    elif package == "controller":
        from controller.__main__ import main
    else:
        from lab.command import main
    return main


def help_in_process(words: tuple) -> tuple:
    """(exit status, stdout) of `python -m WORDS... --help`, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = dispatcher(words[0])(list(words[1:]) + ["--help"])
        except SystemExit as exit_:
            status = exit_.code or 0
    return status, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("package", ["experiments", "hosts", "lab", "p4switch", "controller"])
def test_top_level_help_exits_0(package):
    result = subprocess.run([sys.executable, "-m", package, "--help"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: "), result.stdout
    assert "error" not in result.stderr.lower()


def test_top_level_help_names_every_subcommand():
    for package, names in (("experiments", EXPERIMENTS), ("hosts", HOSTS)):
        status, text = help_in_process((package,))
        assert status == 0
        assert all(f"  {name} " in text for name in names), text


@pytest.mark.parametrize("words", [w for w in HELP_COMMANDS if len(w) == 2],
                         ids=" ".join)
def test_subcommand_help_exits_0(words):
    status, text = help_in_process(words)
    assert status == 0, text
    # p4switch group's members take p4switch run's options: its --help is run's
    prog = "p4switch run" if words == ("p4switch", "group") else " ".join(words)
    assert text.startswith("usage: python -m " + prog), text


@pytest.mark.parametrize("words", sorted(COMMANDS), ids=" ".join)
def test_help_shows_every_default(words):
    parsers = [COMMANDS[words]()]
    for action in parsers[0]._actions:          # p4switch and controller: their subcommands
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            parsers += list(action.choices.values())
    for parser in parsers:
        for action in parser._actions:
            if shown_default(action) is None or action.help == "==SUPPRESS==":
                continue
            formatter = parser._get_formatter()
            formatter.add_argument(action)
            text = formatter.format_help()
            assert "default" in text.lower(), f"{parser.prog}: {text}"


def test_k_and_modes_defaults_have_one_home():
    """--k's default is the program's AGG_K, or unset (None) where it is the switch kind's
    (contracts.jobs.default_k: compare, sweep and the lab), which --help then states."""
    from contracts.cli import DEFAULT_MODES
    from contracts.jobs import K_DEFAULT_HELP
    from contracts.wire import DEFAULT_K
    per_switch = set()
    for words in COMMANDS:
        for action in COMMANDS[words]()._actions:
            if "--k" in action.option_strings:
                assert action.default in (DEFAULT_K, None), words
                if action.default is None:
                    assert action.help.endswith(K_DEFAULT_HELP), words
                    per_switch.add(words)
            if "--modes" in action.option_strings and words != ("experiments", "train"):
                assert action.default == DEFAULT_MODES, words
    assert {("experiments", "compare"), ("experiments", "sweep"), ("lab",)} <= per_switch, \
        per_switch
