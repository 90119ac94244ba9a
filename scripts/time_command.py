"""Time a command, wall clock, and keep the time in a results file (docs/testing.md, "Every
figure has a file"): for the durations the README quotes in running text (`make run`, the lab
reaching its prompt).

    python scripts/time_command.py --out FILE --name NAME [--ready TEXT] -- COMMAND ...

Runs COMMAND (its output passed through), and appends one record to FILE's "runs" (FILE is
made if missing): the name, the command, when it started, the machine's load average then,
its exit status, `seconds` from start to exit and, with --ready, `ready_s`: the seconds until
TEXT first appeared in its output (null if it never did).  FILE's "meta" gets the cores and
the git commit, and the first run's start and load average.  Exits with the command's status.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:    # run as a script: only scripts/ is on the path
    sys.path.insert(0, REPO_ROOT)

from contracts.cli import OneLineParser, UsageError, run_command  # noqa: E402
from jobs.results import now, provenance  # noqa: E402


def parse_args(argv):
    parser = OneLineParser(prog="time_command.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="FILE")
    parser.add_argument("--name", required=True)
    parser.add_argument("--ready", metavar="TEXT",
                        help="also record the seconds until TEXT first appears in the output")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        raise UsageError("time_command.py: no command given (after --)")
    return args


def timed(command: list, ready: str | None) -> dict:
    """Run the command, its output passed through; its status, seconds and ready_s."""
    start = time.monotonic()
    ready_s = None
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, text=True, bufsize=1)
    for line in process.stdout:
        if ready is not None and ready_s is None and ready in line:
            ready_s = round(time.monotonic() - start, 2)
        sys.stdout.write(line)
        sys.stdout.flush()
    status = process.wait()
    return {"exit_code": status, "seconds": round(time.monotonic() - start, 2),
            "ready_s": ready_s}


def run(argv) -> int:
    args = parse_args(argv)
    record = {"name": args.name, "command": " ".join(args.command), "started": now(),
              **provenance()}
    record.update(timed(args.command, args.ready))
    document = json.load(open(args.out)) if os.path.exists(args.out) else \
        {"meta": {"started": record["started"], "cores": record["cores"],
                  "load_average": record["load_average"], "git_commit": record["git_commit"],
                  "written_by": "scripts/time_command.py"}, "runs": []}
    document["runs"].append(record)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(document, handle, indent=1)
    print(f"time_command.py: {args.name}: {record['seconds']} s"
          + (f", ready after {record['ready_s']} s" if args.ready else "")
          + f", exit {record['exit_code']} (in {args.out})", file=sys.stderr)
    return record["exit_code"]


def main(argv=None):
    return run_command(lambda: run(sys.argv[1:] if argv is None else argv), label="error",
                       failures=(OSError,))


if __name__ == "__main__":
    sys.exit(main())
