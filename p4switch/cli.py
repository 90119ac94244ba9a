"""Command line of p4switch: ``python -m p4switch compile|stf|bench|run|group``.

compile PROGRAM.p4 [-I DIR]... [-D NAME[=VALUE]]... [-o OUT.json] [--p4runtime-files OUT.txtpb]
        [--target p4switch|bmv2]
    writes the device config (what SetForwardingPipelineConfig carries) and the P4Info text.
    ``--target bmv2`` also refuses, with p4c's words, what p4c's bmv2 back end refuses
    (p4switch/frontend/target_bmv2.py); compile, stf and bench all take it.
stf PROGRAM.p4 TEST.stf [-I DIR]... [-D ...] [--backend auto|c|python|xdp|bmv2]
    runs an STF test; exit 0 on pass, 1 with a per-port diff on failure.  ``--backend bmv2``
    runs it on real bmv2 instead (p4c-bm2-ss and simple_switch, p4switch.bmv2), with the
    same report; a missing toolchain or an STF command bmv2 cannot run is exit 2, a program
    p4c refuses exit 1 with p4c's first error.
bench PROGRAM.p4 TEST.stf [--count N] [-I DIR]... [-D ...]
    applies the STF's control-plane commands, replays its packets N times unchecked and
    prints the packet rate; the last line is ``pps: N``.
run ...
    the device (``p4switch.device.run``): raw-socket ports and the P4Runtime server.
group RUN-ARGS [--- RUN-ARGS ...]
    several devices in one process, each with its own ports and P4Runtime server
    (``p4switch.device.group``).

Errors are one line on stderr: compile errors as ``FILE:LINE:COL: message`` with exit 1,
bad usage or input with exit 2.
"""

import argparse
import importlib
import os
import sys

from contracts.cli import PlainMessageParser, UsageError

from . import targets


def _add_program_options(parser):
    parser.add_argument("program", help="P4-16 v1model program")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="add an include directory")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                        help="define a preprocessor macro")
    parser.add_argument("--target", choices=("p4switch", "bmv2"), default=None,
                        help="bmv2: also refuse what p4c's bmv2 back end (p4c-bm2-ss) refuses")


def _add_backend_option(parser, bmv2=False):
    parser.add_argument("--backend", choices=targets.STF_BACKENDS if bmv2 else targets.BACKENDS,
                        default=None,
                        help="data plane: c (generated C), python (the reference), or auto "
                             "(default: $P4SWITCH_BACKEND, else the built-in default)" +
                             ("; bmv2: real p4c-bm2-ss and simple_switch" if bmv2 else ""))


def build_parser():
    parser = PlainMessageParser(prog="python -m p4switch", description="our P4-16 v1model switch")
    commands = parser.add_subparsers(dest="command", metavar="compile|stf|bench|run|group",
                                     parser_class=PlainMessageParser)
    commands.required = True
    compile_cmd = commands.add_parser("compile", help="compile a program")
    _add_program_options(compile_cmd)
    compile_cmd.add_argument("-o", dest="output", metavar="OUT.json",
                             help="write the device config here")
    compile_cmd.add_argument("--p4runtime-files", dest="p4info", metavar="OUT.txtpb",
                             help="write the P4Info (text format) here")
    stf_cmd = commands.add_parser("stf", help="run an STF test")
    _add_program_options(stf_cmd)
    stf_cmd.add_argument("stf", help="STF test file")
    _add_backend_option(stf_cmd, bmv2=True)
    bench_cmd = commands.add_parser("bench", help="measure the packet rate")
    _add_program_options(bench_cmd)
    bench_cmd.add_argument("stf", help="STF file giving table entries and packets")
    bench_cmd.add_argument("--count", type=int, default=10000, help="packets to process")
    _add_backend_option(bench_cmd)
    commands.add_parser("run", help="run the switch device (see `run --help`)")
    commands.add_parser("group", help="run several switch devices in one process")
    return parser


def _defines(items):
    defines = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not name:
            raise UsageError(f"bad -D {item!r}")
        defines[name] = value if equals else "1"      # -D NAME defines NAME as 1, as cpp does
    return defines


def _read_file(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _switch_api():
    """(compile_file, Switch) from the p4switch package, or a one-line error."""
    try:
        from p4switch import Switch, compile_file
    except ImportError as exc:
        raise ToolUnavailable(f"the p4switch compiler is not available ({exc})") from None
    return compile_file, Switch


class ToolUnavailable(Exception):
    """A part of p4switch this command needs cannot be imported: exit status 1."""


def compile_program(args):
    """Compile ``args.program``; CompileError propagates."""
    compile_file, _ = _switch_api()
    if not os.path.isfile(args.program):
        raise UsageError(f"no such file: {args.program}")
    program = compile_file(args.program, include_dirs=args.include_dirs,
                           defines=_defines(args.defines), target=args.target)
    for warning in program.ast.pipeline.warnings:       # e.g. a direct counter no table uses
        print(warning, file=sys.stderr)
    return program


def _write(path, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    try:
        with open(path, mode) as f:
            f.write(data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def cmd_compile(args):
    from p4switch import p4info

    program = compile_program(args)
    if args.output:
        _write(args.output, program.device_config)
    if args.p4info:
        _write(args.p4info, p4info.to_text(program.p4info))
    return 0


def _run_on_bmv2(args, commands):
    """The STF on real bmv2 (p4switch.bmv2); a missing toolchain is bad input (exit 2)."""
    from p4switch import p4lang
    from p4switch.bmv2 import runner

    if not os.path.isfile(args.program):
        raise UsageError(f"no such file: {args.program}")
    try:
        toolchain = p4lang.require((p4lang.P4C, p4lang.SIMPLE_SWITCH))
    except p4lang.ToolchainMissing as exc:
        raise UsageError(str(exc)) from None
    return runner.run_stf_file(toolchain, args.program, commands, args.stf,
                               args.include_dirs, _defines(args.defines))


def cmd_stf(args):
    from p4switch import stf

    text = _read_file(args.stf)
    commands = stf.parse_stf(text, args.stf)       # malformed STF: StfError before compiling
    if args.backend == "bmv2":
        result = _run_on_bmv2(args, commands)
    else:
        program = compile_program(args)
        _, Switch = _switch_api()
        result = stf.StfRunner(Switch(program, backend=args.backend), program,
                               args.stf).run(commands)
    if result.passed:
        print(f"PASS {args.stf}: {result.packets_in} packet(s) in, {result.packets_out} out")
        return 0
    print(f"FAIL {args.stf}", file=sys.stderr)
    for failure in result.failures:
        print(failure, file=sys.stderr)
    return 1


def cmd_bench(args):
    from p4switch import bench, stf

    if args.count < 1:
        raise UsageError("--count must be at least 1")
    commands = stf.parse_stf(_read_file(args.stf), args.stf)
    program = compile_program(args)
    report = bench.run_bench(program, commands, args.count, args.stf, backend=args.backend)
    print(f"program: {args.program}")
    print(bench.format_report(report))
    print(f"backend: {report.backend}")
    return 0


# Commands that are the command line of the p4switch.device module of the same name (they
# parse their own arguments).
DEVICE_COMMANDS = ("run", "group")


def cmd_device(command, argv):
    try:
        module = importlib.import_module(f"p4switch.device.{command}")
    except ImportError as exc:
        print(f"p4switch: error: the {command} command is not available ({exc})",
              file=sys.stderr)
        return 1
    return module.main(argv)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DEVICE_COMMANDS:
        return cmd_device(argv[0], argv[1:])
    from p4switch.frontend.errors import CompileError
    from p4switch.stf import StfError

    try:
        args = build_parser().parse_args(argv)
        return {"compile": cmd_compile, "stf": cmd_stf, "bench": cmd_bench}[args.command](args)
    except (UsageError, StfError, ToolUnavailable, CompileError) as exc:
        # compile and STF errors begin with where they are (FILE:LINE:...); bad usage or
        # input exits 2, a program or tool that fails 1
        located = isinstance(exc, (CompileError, StfError))
        print(str(exc) if located else f"p4switch: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (UsageError, StfError)) else 1
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        print(f"p4switch: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
