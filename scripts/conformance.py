"""Measure how many v1model STF samples p4switch passes, and why the others fail.

    python scripts/conformance.py SAMPLES_DIR [--jobs N] [--json OUT] [--filter SUBSTR]
                                  [--timeout SECONDS] [--backend auto|c|python|bmv2]
                                  [--p4c-runner] [--compile-only | --p4info DIR]

For every ``X.p4`` under SAMPLES_DIR (sub-folders too) that has an ``X.stf`` beside it and includes
v1model.p4, runs ``python -m p4switch stf X.p4 X.stf -I SAMPLES_DIR [--backend B]`` in a
subprocess and classifies the outcome:

    pass           exit 0
    fail           the STF ran and packets differed (``FAIL`` report)
    compile-error  a ``FILE:LINE:COL: message`` error from the compiler
    stf-error      the STF file itself was rejected (exit 2)
    crash          any other error: the exception type and, re-run in-process, its last frame
    timeout        no answer within the timeout

Prints a summary table and the pass rate; ``--json`` writes one record per sample. This is a
measurement: the exit status is 0 whatever the pass rate, 2 for bad usage.

``--backend bmv2`` runs each sample on real bmv2 through our driver (p4switch.bmv2: p4c-bm2-ss
and simple_switch).  ``--p4c-runner`` also runs p4c's own STF runner on every sample (the
p4lang bundle's share/p4c/bmv2-stf/run-bmv2-test.py, with a build folder of our own holding a
symbolic link to the bundle's p4c-bm2-ss and a copy of its config.h), and prints both pass
counts and every sample on which the two runners disagree; with ``--backend bmv2`` the two
counts must be equal (tests/bmv2/test_bmv2_conformance.py).

A sample that does not pass and is named in ``EXPLAINED`` gets the cause we found appended to
its line (``cause: ...``); those marked as programs simple_switch itself does not run are left
out of the second rate printed, the pass rate over what simple_switch supports.

``--p4info DIR`` compiles every program X.p4 under SAMPLES_DIR that has an expected P4Info
``DIR/X.p4.p4info.txtpb`` (p4c's name for it; ``DIR/X.p4info.txtpb`` also counts) and compares
ours with it entity by entity (scripts/p4info_diff.py): identical, different (the first
differing entities), or the compile's own outcome.

``--compile-only`` instead compiles every program ``X.p4`` under SAMPLES_DIR (a file that
instantiates ``main``; included fragments are skipped), STF or not, with
``python -m p4switch compile X.p4 -o ... --p4runtime-files ... -I <X's folder>`` into a scratch
folder, and classifies each as ok, compile-error, crash or timeout.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:    # run as a script: only scripts/ is on the path
    sys.path.insert(0, REPO_ROOT)
SCRIPTS_DIR = os.path.dirname(os.path.abspath(__file__))
if SCRIPTS_DIR not in sys.path:  # loaded by path (tests): p4info_diff sits beside it
    sys.path.insert(0, SCRIPTS_DIR)

from contracts.cli import OneLineParser, UsageError, positive_float, run_command  # noqa: E402
from jobs.results import now, provenance  # noqa: E402
from p4switch.targets import STF_BACKENDS  # noqa: E402

DEFAULT_PYTHON = os.path.join(REPO_ROOT, ".venv", "bin", "python")
OUTCOMES = ("pass", "fail", "compile-error", "stf-error", "crash", "timeout")
COMPILE_OUTCOMES = ("ok", "compile-error", "crash", "timeout")
P4INFO_OUTCOMES = ("identical", "different", "bad-expected", "compile-error", "crash", "timeout")
DIFFERENCES_SHOWN = 3
OUTPUT_LINES_KEPT = 12
MAX_JOBS = 2

# Samples of p4c's testdata that do not pass, with the cause we found, and whether
# simple_switch itself runs the sample as the index stores it (False: it does not, so it is not
# counted in the rate over what simple_switch supports).
EXPLAINED = {
    "clone-bmv2": (False, "the stored text (2016) reads standard_metadata.clone_spec, which "
                          "v1model no longer declares; its STF is empty because simple_switch "
                          "crashed on the program"),
    "issue447-bmv2": (True, "the index stores only the 2017 STF, which expects the 2 payload "
                            "bytes after a 16-bit varbit extract to vanish; P4-16 extract(hdr, "
                            "16) consumes 16 bits and the payload follows, as the later "
                            "issue447-1/-2/-3/-5 STFs expect (they pass) and as another P4-16 "
                            "simulator that passes p4c's current corpus, issue447-bmv2 included, "
                            "computes: the current STF very likely differs"),
}

_V1MODEL_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]v1model\.p4[>"]', re.MULTILINE)
_COMPILE_ERROR = re.compile(r"^\S+:\d+:\d+: ")
_CRASH_LINE = re.compile(r"^p4switch: error: (\w+(?:\.\w+)*): ")
_MAIN_INSTANCE = re.compile(r"\)\s*main\s*;")

# Re-runs a p4switch command (stf, compile) without the CLI's catch-all, so a crash shows its
# traceback.
_TRACEBACK_RUNNER = (
    "import sys\n"
    "from p4switch import cli\n"
    "args = cli.build_parser().parse_args(sys.argv[1:])\n"
    "sys.exit(getattr(cli, 'cmd_' + sys.argv[1])(args))\n"
)


@dataclass
class SampleResult:
    """The outcome of one sample: its class, the line that explains it, the output's head."""

    name: str
    outcome: str
    detail: str = ""
    seconds: float = 0.0
    output: list = field(default_factory=list)


def find_samples(samples_dir, substring=None):
    """Names X (sorted, relative to samples_dir, sub-folders included) of the v1model programs
    X.p4 that have an X.stf beside them."""
    names = []
    for folder, _, files in os.walk(samples_dir):
        for entry in files:
            stem, ext = os.path.splitext(entry)
            if ext != ".p4" or stem + ".stf" not in files:
                continue
            name = os.path.relpath(os.path.join(folder, stem), samples_dir)
            if substring and substring not in name:
                continue
            with open(os.path.join(folder, entry), errors="replace") as f:
                if _V1MODEL_INCLUDE.search(f.read()):
                    names.append(name)
    return sorted(names)


def find_programs(samples_dir, substring=None, need_main=True):
    """Names X (sorted, relative to samples_dir) of every X.p4 under it that instantiates
    `main` (so included fragments such as headers.p4 are left out; every X.p4 without
    `need_main`)."""
    names = []
    for folder, _, files in os.walk(samples_dir):
        for entry in files:
            stem, ext = os.path.splitext(entry)
            name = os.path.relpath(os.path.join(folder, stem), samples_dir)
            if ext != ".p4" or (substring and substring not in name):
                continue
            with open(os.path.join(folder, entry), errors="replace") as f:
                if not need_main or _MAIN_INSTANCE.search(f.read()):
                    names.append(name)
    return sorted(names)


def classify(returncode, stdout, stderr):
    """(outcome, detail) of one finished ``p4switch stf`` run."""
    lines = [line for line in (stderr.splitlines() + stdout.splitlines()) if line.strip()]
    err_lines = [line for line in stderr.splitlines() if line.strip()]
    if returncode == 0:
        return "pass", ""
    if "Traceback (most recent call last):" in stderr:
        return "crash", _traceback_summary(stderr)
    if returncode == 2:
        return "stf-error", err_lines[0] if err_lines else f"exit status {returncode}"
    if err_lines and err_lines[0].startswith("FAIL "):
        # the first port summary and the first mismatch under it
        return "fail", " | ".join(line.strip() for line in err_lines[1:3]) or err_lines[0]
    for line in err_lines:
        if _COMPILE_ERROR.match(line):
            return "compile-error", line
        if _CRASH_LINE.match(line):
            if _CRASH_LINE.match(line).group(1).endswith("CompileError"):
                return "compile-error", line
            return "crash", line
    return "crash", lines[0] if lines else f"exit status {returncode}"


def _traceback_summary(text):
    """'ExcType: message @ file:line in func' from a Python traceback."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', text)
    last_line = [line for line in text.splitlines() if line.strip()][-1].strip()
    if not frames:
        return last_line
    path, lineno, func = frames[-1]
    return f"{last_line} @ {os.path.relpath(path, REPO_ROOT)}:{lineno} in {func}"


def _exception_type(detail):
    """The exception type a crash detail line starts with ('' when it names none)."""
    head = detail.split(":", 1)[0].strip()
    return head if re.fullmatch(r"\w+(\.\w+)*", head) else ""


def _stf_args(samples_dir, name, backend=None):
    return ["stf", os.path.join(samples_dir, name + ".p4"),
            os.path.join(samples_dir, name + ".stf"), "-I", samples_dir] + (
                ["--backend", backend] if backend else [])


def stf_args_for(backend):
    """The `stf` arguments of each sample, run on `backend` (None: p4switch's default)."""
    return lambda samples_dir, name: _stf_args(samples_dir, name, backend)


def _compile_args(output_dir):
    """The `compile` arguments for one program, its outputs in output_dir."""
    def args(samples_dir, name):
        program = os.path.join(samples_dir, name + ".p4")
        out = os.path.join(output_dir, name.replace(os.sep, "__"))
        return ["compile", program, "-I", os.path.dirname(program), "-o", out + ".json",
                "--p4runtime-files", out + ".p4info.txtpb"]
    return args


def _run(argv, timeout):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT))


def run_sample(samples_dir, name, python, timeout, command_args=_stf_args):
    """Run one sample's STF test (or the command `command_args` gives) and classify it; crashes
    are re-run to find their last frame."""
    argv = [python, "-m", "p4switch"] + command_args(samples_dir, name)
    started = time.monotonic()
    try:
        proc = _run(argv, timeout)
    except subprocess.TimeoutExpired:
        return SampleResult(name, "timeout", f"no answer in {timeout:g} s", float(timeout))
    seconds = round(time.monotonic() - started, 2)
    outcome, detail = classify(proc.returncode, proc.stdout, proc.stderr)
    output = (proc.stderr.splitlines() + proc.stdout.splitlines())[:OUTPUT_LINES_KEPT]
    if outcome == "crash" and " @ " not in detail:
        detail = _crash_with_frame(command_args(samples_dir, name), python, timeout, detail)
        if _exception_type(detail).endswith("CompileError"):
            outcome = "compile-error"      # a CompileError without a source location
    return SampleResult(name, outcome, detail, seconds, output)


def _crash_with_frame(command, python, timeout, detail):
    """The crash re-run without the CLI's catch-all, for its last traceback frame."""
    try:
        proc = _run([python, "-c", _TRACEBACK_RUNNER] + command, timeout)
    except subprocess.TimeoutExpired:
        return detail
    if "Traceback (most recent call last):" in proc.stderr:
        return _traceback_summary(proc.stderr)
    return detail


def run_all(samples_dir, names, python, timeout, jobs, command_args=_stf_args):
    """SampleResults in the order of names, at most `jobs` at once."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(
            lambda n: run_sample(samples_dir, n, python, timeout, command_args), names))


def compile_all(samples_dir, names, python, timeout, jobs):
    """SampleResults of compiling each program (outcome "ok" for a successful compile)."""
    with tempfile.TemporaryDirectory(prefix="conformance-compile-") as output_dir:
        results = run_all(samples_dir, names, python, timeout, jobs, _compile_args(output_dir))
    for result in results:
        if result.outcome == "pass":
            result.outcome = "ok"
    return results


def expected_p4info(expected_dir, name):
    """The expected P4Info file of sample `name`, or None."""
    for suffix in (".p4.p4info.txtpb", ".p4info.txtpb"):
        path = os.path.join(expected_dir, name + suffix)
        if os.path.isfile(path):
            return path
    return None


def p4info_all(samples_dir, expected_dir, names, python, timeout, jobs):
    """SampleResults comparing each program's P4Info with the expected one."""
    from p4info_diff import differences, parse
    from google.protobuf.text_format import ParseError
    names = [n for n in names if expected_p4info(expected_dir, n)]
    with tempfile.TemporaryDirectory(prefix="conformance-p4info-") as output_dir:
        results = run_all(samples_dir, names, python, timeout, jobs, _compile_args(output_dir))
        for result in results:
            if result.outcome != "pass":
                continue
            ours = os.path.join(output_dir, result.name.replace(os.sep, "__") + ".p4info.txtpb")
            try:
                with open(expected_p4info(expected_dir, result.name)) as f:
                    expected = parse(f.read())
            except ParseError as e:      # e.g. a field of another P4Runtime version
                result.outcome, result.detail = "bad-expected", f"expected P4Info: {e}"
                continue
            with open(ours) as f:
                lines = differences(expected, parse(f.read()))
            result.outcome = "different" if lines else "identical"
            result.detail = "; ".join(lines[:DIFFERENCES_SHOWN]) + (
                f" (+{len(lines) - DIFFERENCES_SHOWN} more)" if len(lines) > DIFFERENCES_SHOWN else "")
            result.output = lines
    return results


def p4c_runner_command(toolchain, build_dir):
    """(argv without the sample, environment) of p4c's own STF runner from the p4lang bundle,
    its build folder ``build_dir`` made here: the bundle's own build/ holds a text file where
    the runner wants a symbolic link to p4c-bm2-ss."""
    from p4switch import p4lang
    if toolchain.home is None:
        raise UsageError("--p4c-runner needs the p4lang bundle ($P4LANG_HOME or "
                         "../shared/p4lang): p4c's STF runner is in its share/p4c/bmv2-stf")
    stf_dir = os.path.join(toolchain.home, "share", "p4c", "bmv2-stf")
    script = os.path.join(stf_dir, "run-bmv2-test.py")
    if not os.path.isfile(script):
        raise UsageError(f"--p4c-runner: {script} not found")
    os.makedirs(build_dir, exist_ok=True)
    os.symlink(toolchain.path(p4lang.P4C), os.path.join(build_dir, "p4c-bm2-ss"))
    shutil.copy(os.path.join(stf_dir, "build", "config.h"), build_dir)
    # /usr/bin/python3, as the bundle's wrapper: the runner needs Debian's thrift, scapy, ply
    return ["/usr/bin/python3", script, stf_dir, "-bd", build_dir], toolchain.environment()


def run_p4c_runner(samples_dir, names, timeout, jobs):
    """SampleResults of p4c's own STF runner on each sample: pass (exit 0) or fail."""
    from p4switch import p4lang
    try:
        toolchain = p4lang.require((p4lang.P4C, p4lang.SIMPLE_SWITCH))
    except p4lang.ToolchainMissing as exc:
        raise UsageError(f"--p4c-runner: {exc}") from None
    # no folder above it may be called behavioral-model (the runner looks there first)
    with tempfile.TemporaryDirectory(prefix="conformance-p4c-runner-") as work:
        argv, env = p4c_runner_command(toolchain, os.path.join(work, "build"))

        def one(name):
            started = time.monotonic()
            try:
                proc = subprocess.run(argv + [os.path.join(samples_dir, name + ".p4")],
                                      capture_output=True, text=True, timeout=timeout,
                                      cwd=work, env=env)
            except subprocess.TimeoutExpired:
                return SampleResult(name, "timeout", f"no answer in {timeout:g} s",
                                    float(timeout))
            lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
            outcome = "pass" if proc.returncode == 0 else "fail"
            detail = "" if outcome == "pass" else (lines[-1].strip() if lines else
                                                   f"exit status {proc.returncode}")
            return SampleResult(name, outcome, detail, round(time.monotonic() - started, 2),
                                lines[-OUTPUT_LINES_KEPT:])
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, names))


def compare_with_p4c_runner(results, reference, backend):
    """Both pass counts, and each sample the two runners judge differently."""
    ours = {r.name: r.outcome == "pass" for r in results}
    theirs = {r.name: r.outcome == "pass" for r in reference}
    lines = ["",
             f"p4c's own runner (run-bmv2-test.py on bmv2): pass {sum(theirs.values())}/"
             f"{len(theirs)}",
             f"p4switch stf --backend {backend or 'default'}: pass {sum(ours.values())}/"
             f"{len(ours)}"]
    differ = [n for n in sorted(ours) if ours[n] != theirs.get(n)]
    if not differ:
        lines.append("the two runners agree on every sample")
    for name in differ:
        detail = next(r.detail for r in reference if r.name == name)
        lines.append(f"disagree: {name}: ours {'pass' if ours[name] else 'not pass'}, "
                     f"p4c's runner {'pass' if theirs.get(name) else 'not pass'}"
                     + (f" ({detail})" if detail else ""))
    return "\n".join(lines)


def explain(results, explained=None):
    """Append the known cause (EXPLAINED) to the detail of each sample that did not pass."""
    explained = EXPLAINED if explained is None else explained
    for result in results:
        known = explained.get(os.path.basename(result.name))
        if known and result.outcome not in ("pass", "ok", "identical"):
            result.detail = f"{result.detail} -- cause: {known[1]}".lstrip(" -")
    return results


def _rate(good, total):
    return f"{good}/{total} ({100.0 * good / total if total else 0.0:.1f}%)"


def summary_table(results, outcomes=OUTCOMES, good="pass", explained=None):
    """The per-outcome counts, the failing samples with their detail lines, and the rate of
    `good` outcomes (for STF runs also over the samples simple_switch supports)."""
    explained = EXPLAINED if explained is None else explained
    counts = count_outcomes(results, outcomes)
    width = max([len(r.name) for r in results] + [10])
    lines = [f"{r.name:<{width}}  {r.outcome:<13}  {r.detail}" for r in results]
    lines.append("")
    lines += [f"{outcome:<13} {counts[outcome]:4d}" for outcome in outcomes]
    lines.append(f"{good} rate: {_rate(counts[good], len(results))}")
    if good == "pass":
        supported = supported_by_simple_switch(results, explained)
        passed = sum(r.outcome == good for r in supported)
        lines.append(f"{good} rate over what simple_switch supports: "
                     f"{_rate(passed, len(supported))}")
    return "\n".join(lines)


def count_outcomes(results, outcomes=OUTCOMES) -> dict:
    counts = {outcome: 0 for outcome in outcomes}
    for result in results:
        counts[result.outcome] += 1
    return counts


def supported_by_simple_switch(results, explained=None) -> list:
    """The samples not marked in EXPLAINED as programs simple_switch itself does not run."""
    explained = EXPLAINED if explained is None else explained
    return [r for r in results if explained.get(os.path.basename(r.name), (True,))[0]]


def counts_record(results, outcomes, good) -> dict:
    """What --json keeps besides the samples: the counts per outcome, and the pass counts
    (over all, and over what simple_switch supports) that the summary prints."""
    record = {"counts": count_outcomes(results, outcomes), "good": good,
              "passed": sum(r.outcome == good for r in results), "total": len(results)}
    if good == "pass":
        supported = supported_by_simple_switch(results)
        record.update(supported_passed=sum(r.outcome == good for r in supported),
                      supported_total=len(supported))
    return record


def parse_args(argv):
    parser = OneLineParser(prog="conformance.py", description=__doc__.splitlines()[0])
    parser.add_argument("samples_dir")
    parser.add_argument("--jobs", type=int, default=MAX_JOBS)
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--filter", dest="substring")
    parser.add_argument("--timeout", type=positive_float, default=30.0)
    parser.add_argument("--backend", choices=STF_BACKENDS,
                        help="the back end `p4switch stf` runs each sample on")
    parser.add_argument("--p4c-runner", action="store_true",
                        help="also run p4c's own STF runner (run-bmv2-test.py) on each sample "
                             "and compare the pass counts")
    parser.add_argument("--compile-only", action="store_true",
                        help="compile every program under SAMPLES_DIR, STF or not")
    parser.add_argument("--p4info", dest="p4info_dir", metavar="DIR",
                        help="compare P4Info with DIR's expected *.p4info.txtpb files")
    parser.add_argument("--python", default=DEFAULT_PYTHON, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not os.path.isdir(args.samples_dir):
        raise UsageError(f"conformance.py: not a directory: {args.samples_dir}")
    if args.p4info_dir is not None and not os.path.isdir(args.p4info_dir):
        raise UsageError(f"conformance.py: not a directory: {args.p4info_dir}")
    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"conformance.py: --jobs must be 1..{MAX_JOBS}")
    return args


def main(argv=None):
    return run_command(lambda: run(sys.argv[1:] if argv is None else argv),
                       label="error")


def run(argv) -> int:
    args = parse_args(argv)
    # the results file's provenance (docs/testing.md, "Every figure has a file")
    meta = {"started": now(), "command": "scripts/conformance.py " + " ".join(argv),
            "backend": "compile" if args.compile_only else
            "p4info" if args.p4info_dir is not None else args.backend or "auto",
            **provenance()}
    samples_dir = os.path.abspath(args.samples_dir)
    if args.p4info_dir is not None:
        # Every X.p4 with an expected P4Info (its `main` may sit in an included file).
        names = find_programs(samples_dir, args.substring, need_main=False)
        results = p4info_all(samples_dir, os.path.abspath(args.p4info_dir), names, args.python,
                             args.timeout, args.jobs)
        print(summary_table(results, P4INFO_OUTCOMES, good="identical"))
        counted = counts_record(results, P4INFO_OUTCOMES, "identical")
    elif args.compile_only:
        names = find_programs(samples_dir, args.substring)
        results = compile_all(samples_dir, names, args.python, args.timeout, args.jobs)
        print(summary_table(results, COMPILE_OUTCOMES, good="ok"))
        counted = counts_record(results, COMPILE_OUTCOMES, "ok")
    else:
        names = find_samples(samples_dir, args.substring)
        results = explain(run_all(samples_dir, names, args.python, args.timeout, args.jobs,
                                  stf_args_for(args.backend)))
        print(summary_table(results))
        counted = counts_record(results, OUTCOMES, "pass")
        if args.p4c_runner:
            reference = run_p4c_runner(samples_dir, names, args.timeout, args.jobs)
            print(compare_with_p4c_runner(results, reference, args.backend))
    if args.json_out:
        meta["finished"] = now()
        record = {"meta": meta, "samples_dir": samples_dir, **counted,
                  "results": [asdict(r) for r in results]}
        if getattr(args, "p4c_runner", False) and not args.compile_only and args.p4info_dir is None:
            record["p4c_runner"] = [asdict(r) for r in reference]
            record["p4c_runner_passed"] = sum(r.outcome == "pass" for r in reference)
        with open(args.json_out, "w") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
