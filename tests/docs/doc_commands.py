"""The command lines quoted in README.md and docs/*.md, checked against the current CLI.

In every fenced code block, a line (joined with its `\\` continuations) that runs
`python -m PACKAGE ...` of this project (after `sudo`, `.venv/bin/`, `flock LOCK`, `nice -n N`,
`VAR=value`, a `$ ` or `mininet> hN ` prompt, or a `|` of a pipeline) is parsed with that
command's own argparse parser (tests/docs/clis.py), nothing run:

- every option it names (`--k`, `-D`) must be an option of that parser;
- a concrete line (no `[`, `]`, `...` or `|` synopsis syntax) must parse as a whole, so a
  missing required option, a bad choice or a wrong type fails too.

`make TARGET` and `sudo make TARGET` lines must name a target of the Makefile.

    .venv/bin/python tests/docs/doc_commands.py [FILE.md ...]

prints one line per problem and exits 1 if there is any (default: README.md and docs/**/*.md).
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from clis import option_strings, parser_for  # noqa: E402

PROJECT_PACKAGES = ("experiments", "hosts", "lab", "p4switch", "controller")
SHELL_BREAKS = {"|", "||", "&&", ";", "&", ">", ">>", "2>&1", "<", "2>", "&>"}
SYNOPSIS = re.compile(r"\[|\]|\.\.\.|(?<!\S)\|(?!\S)|\S\|\S")


def default_files() -> list:
    return [os.path.join(REPO, "README.md")] + sorted(
        glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True))


def code_lines(text: str):
    """(line number, command line) of every line in fenced code blocks, `\\` joined."""
    inside, pending, start = False, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""


def strip_prompt(line: str) -> str:
    line = line.strip()
    for prompt in ("$ ", "# "):
        if line.startswith(prompt):
            return line[len(prompt):]
    match = re.match(r"mininet>\s+(h\d+\s+)?", line)
    return line[match.end():] if match else line


def commands_in(line: str) -> list:
    """The word lists of the simple commands of a shell line (pipelines and lists split,
    redirections and comments dropped)."""
    try:
        words = shlex.split(strip_prompt(line), comments=True)
    except ValueError:
        return []
    commands, current = [], []
    for word in words:
        if word in SHELL_BREAKS or re.match(r"^\d?>", word):
            if current:
                commands.append(current)
            current = [] if word not in (">", ">>", "<", "2>", "&>") else [">"]
            continue
        if current[:1] == [">"]:        # the file a redirection names
            current = []
            continue
        current.append(word)
    if current and current[:1] != [">"]:
        commands.append(current)
    return commands


def unwrap(words: list) -> list:
    """The command under sudo, flock, nice, env assignments and a venv's python."""
    while words:
        head = words[0]
        if head == "sudo" or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", head):
            words = words[1:]
        elif head == "flock" and len(words) > 2:
            words = words[2:]
        elif head == "nice" and len(words) > 2 and words[1] == "-n":
            words = words[3:]
        elif head == "timeout" and len(words) > 2:
            words = words[2:]
        else:
            return words
    return words


def check_python(words: list) -> str | None:
    """None if `python -m ...` words parse (or are not a project command), else a problem."""
    module = words[2] if len(words) > 2 else ""
    if module.split(".")[0] not in PROJECT_PACKAGES or "." in module:
        return None
    argv = [module] + words[3:]
    try:
        parser, rest, key = parser_for(argv)
    except KeyError:
        return f"unknown command: python -m {' '.join(argv[:2])}"
    known = option_strings(parser)
    if key == ("p4switch", "group"):
        rest = [w for w in rest if w != "---"]
    for word in rest:
        option = word.strip("[]()").split("=", 1)[0]
        if re.match(r"^--?[A-Za-z]", option) and option not in known:
            return f"python -m {' '.join(key)}: no option {option}"
    if SYNOPSIS.search(" ".join(words)):
        return None
    if key == ("p4switch", "group"):
        return None         # members split by --- (checked option by option above)
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(rest)
    except SystemExit as exit_:
        if exit_.code:
            return f"python -m {' '.join(key)}: {stderr.getvalue().strip() or exit_.code}"
    except Exception as error:      # OneLineParser's UsageError
        return f"python -m {' '.join(key)}: {error}"
    return None


def make_targets() -> set:
    with open(os.path.join(REPO, "Makefile")) as handle:
        return {m.group(1) for m in re.finditer(r"^([A-Za-z][\w-]*):", handle.read(), re.M)}


def check_file(path: str, targets: set | None = None) -> list:
    """Problems in one Markdown file, each `FILE:LINE: problem`."""
    targets = make_targets() if targets is None else targets
    with open(path) as handle:
        text = handle.read()
    problems = []
    for number, line in code_lines(text):
        for words in commands_in(line):
            words = unwrap(words)
            problem = None
            if len(words) > 2 and os.path.basename(words[0]).startswith("python") \
                    and words[1] == "-m":
                problem = check_python(words)
            elif words[:1] == ["make"]:
                missing = [t for t in words[1:] if "=" not in t and not t.startswith("-")
                           and t not in targets]
                problem = f"make: no target {missing[0]}" if missing else None
            if problem:
                problems.append(f"{os.path.relpath(path, REPO)}:{number}: {problem}")
    return problems


def quoted_commands(path: str) -> int:
    """How many project command lines the file quotes in code blocks."""
    with open(path) as handle:
        text = handle.read()
    count = 0
    for _, line in code_lines(text):
        for words in commands_in(line):
            words = unwrap(words)
            if (words[:1] == ["make"]) or (len(words) > 2 and words[1] == "-m" and
                                           words[2] in PROJECT_PACKAGES):
                count += 1
    return count


def check_files(paths: list) -> list:
    targets = make_targets()
    return [problem for path in paths for problem in check_file(path, targets)]


def main(argv: list) -> int:
    problems = check_files(argv or default_files())
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
