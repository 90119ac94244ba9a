"""The command lines quoted in README.md and docs/*.md parse with the current CLI
(tests/docs/doc_commands.py), so a renamed option cannot go stale in the docs silently.

`DOC_FILES="a.md b.md" pytest tests/docs/test_docs_commands.py` points the check at other
files (a scratch copy, say); by default it reads README.md and docs/**/*.md."""

import os

import pytest

import doc_commands
from doc_commands import REPO, check_files, default_files, quoted_commands

FILES = os.environ.get("DOC_FILES", "").split() or default_files()


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, REPO))
def test_quoted_command_lines_parse(path):
    assert check_files([path]) == []


def test_readme_and_lab_guide_quote_commands():
    # the check must see the commands, not pass because it found none
    assert quoted_commands(os.path.join(REPO, "README.md")) >= 8
    assert quoted_commands(os.path.join(REPO, "docs", "lab-guide.md")) >= 10


def scratch_copy(tmp_path, old, new):
    text = open(os.path.join(REPO, "README.md")).read()
    assert old in text
    path = tmp_path / "README.md"
    path.write_text(text.replace(old, new, 1))
    return str(path)


def test_a_renamed_option_in_a_scratch_copy_fails(tmp_path):
    path = scratch_copy(tmp_path, "--elements 200000", "--vector-length 200000")
    problems = check_files([path])
    assert len(problems) == 1 and "no option --vector-length" in problems[0], problems


def test_an_abbreviated_option_fails_though_argparse_would_take_it(tmp_path):
    path = scratch_copy(tmp_path, "--modes ina,ring", "--mode ina,ring")
    assert any("no option --mode" in p for p in check_files([path]))


def test_a_bad_value_or_a_missing_make_target_fails(tmp_path):
    path = tmp_path / "doc.md"
    path.write_text("```\nsudo .venv/bin/python -m experiments compare --topo star:4 "
                    "--modes ina --elements many --out DIR\nsudo make runn\n"
                    "python -m lab --topo star:4 --switch tofino\n```\n"
                    "`python -m experiments compare --nonsense` outside a code block\n")
    problems = check_files([str(path)])
    assert [p.split(":")[1] for p in problems] == ["2", "3", "4"], problems
    assert "--elements: expected an integer" in problems[0]
    assert "no target runn" in problems[1]
    assert "--switch" in problems[2]


def test_the_checker_runs_as_a_command(tmp_path, capsys):
    path = scratch_copy(tmp_path, "--elements 200000", "--elems 200000")
    assert doc_commands.main([path]) == 1
    assert "no option --elems" in capsys.readouterr().out
