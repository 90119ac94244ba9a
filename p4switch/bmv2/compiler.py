"""p4c's bmv2 back end (p4c-bm2-ss): a P4-16 v1model program to bmv2 JSON and P4Info.

``compile_program(toolchain, path, include_dirs, defines)`` runs p4c-bm2-ss in a scratch
directory and returns a ``Compiled`` (the JSON path, the parsed JSON, p4c's P4Info).  p4c's
own errors come back as ``P4cError`` whose message is one line in our compiler's format,
``FILE:LINE:COL: message`` (p4c writes ``FILE(LINE): [--Werror=kind] error: message`` and a
caret line under the source; the column is taken from the carets).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from p4switch.frontend.errors import CompileError

COMPILE_TIMEOUT_S = 300

_P4C_LOCATED = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\):?\s*(?:\[--W\w+=[\w -]+\]\s*)?"
                          r"(?:error:\s*)?(?P<message>.*)$")
_CPP_LOCATED = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: "
                          r"(?P<message>.*)$")
_P4C_ERROR = re.compile(r"^(?:\[--W\w+=[\w -]+\]\s*)?error:\s*(?P<message>.*)$")


class P4cError(CompileError):
    """p4c-bm2-ss refused the program; the message is one line, FILE:LINE:COL when p4c
    gave a location."""

    def __init__(self, message):
        super().__init__(None, message)
        self.line = message

    def __str__(self):
        return self.line


@dataclass
class Compiled:
    """What p4c made of one program: the bmv2 JSON (path and parsed) and the P4Info."""
    json_path: str
    json: dict
    p4info: object           # p4.config.v1.P4Info
    workdir: str

    def cleanup(self):
        shutil.rmtree(self.workdir, ignore_errors=True)


def first_error(output):
    """One line for p4c's first error in ``output``: ``FILE:LINE:COL: message``."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        m = _CPP_LOCATED.match(line)
        if m:
            return f"{m['file']}:{m['line']}:{m['col']}: {m['message'].strip()}"
        located = _P4C_LOCATED.match(line)
        if located and "error" in line.lower() and "warning:" not in line:
            message = located["message"].strip() or line.strip()
            column = 1
            for follow in lines[i + 1:i + 3]:     # the source line, then the carets
                if follow.strip() and set(follow.strip()) <= {"^"}:
                    column = len(follow) - len(follow.lstrip()) + 1
                    break
            return f"{located['file']}:{located['line']}:{column}: {message}"
    for line in lines:
        m = _P4C_ERROR.match(line.strip())
        if m and "errors encountered" not in line:
            return f"p4c-bm2-ss: {m['message'].strip()}"
    for line in lines:
        if line.strip():
            return f"p4c-bm2-ss: {line.strip()}"
    return "p4c-bm2-ss failed without a message"


def compile_program(toolchain, path, include_dirs=(), defines=None, workdir=None):
    """Compile ``path`` with p4c-bm2-ss; a Compiled, or P4cError (one line)."""
    from p4switch.p4info import from_text
    from p4switch.p4lang import P4C

    binary = toolchain.path(P4C)
    workdir = workdir or tempfile.mkdtemp(prefix="p4switch-p4c-")
    base = os.path.join(workdir, os.path.splitext(os.path.basename(os.fspath(path)))[0])
    argv = [binary, "--std", "p4-16", "--arch", "v1model", "-o", base + ".json",
            "--p4runtime-files", base + ".p4info.txtpb"]
    for directory in include_dirs:
        argv += ["-I", os.fspath(directory)]
    for name, value in (defines or {}).items():
        argv += ["-D", f"{name}={value}"]
    argv.append(os.fspath(path))
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S,
                              env=toolchain.environment())
    except subprocess.TimeoutExpired:
        shutil.rmtree(workdir, ignore_errors=True)
        raise P4cError(f"p4c-bm2-ss: no answer within {COMPILE_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        raise P4cError(first_error(proc.stderr + proc.stdout))
    with open(base + ".json") as f:
        program_json = json.load(f)
    with open(base + ".p4info.txtpb") as f:
        p4info = from_text(f.read())
    return Compiled(base + ".json", program_json, p4info, workdir)
