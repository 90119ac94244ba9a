"""Compile the aggregation program (p4src/main.p4) for the chosen switch target.

builtin: `python -m p4switch compile`; bmv2: `p4c-bm2-ss --std p4-16`, the p4lang
toolchain's (p4switch/p4lang.py finds it, and its environment gives it its include directory).
Both write a device config (p4switch's JSON, or bmv2's JSON) and a P4Info in protobuf text
format into the build directory, named after the target so they never mix; the controller
pushes either the same way.  p4c infers the P4Info format from the file's suffix: `.txtpb`
(protobuf text; p4c v1.2.4 calls `.txt` deprecated), for both targets.

`bmv2_growth_refusal` says, before anything starts, which values per packet (AGG_K) bmv2 can
run: p4src compiles the K of contracts.wire.SWITCH_K_VALUES for both targets
(contracts.requests.k_refusal refuses the others); bmv2 runs them all, but cannot fill a header-only packet with more than 512 bytes
of values (K <= 128), which in-network allgather and broadcast need (docs/bmv2.md).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Optional

from contracts.wire import DEFAULT_K, SWITCH_K_VALUES, VALUE_BYTES
from p4switch import p4lang
from topologies.switches import BMV2_HEADROOM_BYTES, REPO, python_executable

MAIN_PROGRAM = os.path.join(REPO, "p4src", "main.p4")
DEFAULT_BUILD_DIR = os.path.join(REPO, "build")
BMV2_COMPILER = p4lang.P4C
# The P4Info file's suffix: protobuf text format, for both targets.
P4INFO_SUFFIX = "p4info.txtpb"


def bmv2_growth_refusal(k: int, what: str) -> Optional[str]:
    """Why bmv2 cannot run `what` ("in-network allgather"), which has the switch fill
    header-only packets with K values, at this K (one line), or None."""
    grown = VALUE_BYTES * k
    if grown <= BMV2_HEADROOM_BYTES:
        return None
    largest = max(v for v in SWITCH_K_VALUES if VALUE_BYTES * v <= BMV2_HEADROOM_BYTES)
    return (f"bmv2 cannot run {what} at K = {k}: the switch fills header-only packets with "
            f"{grown} bytes of values, and bmv2 grows a packet by at most "
            f"{BMV2_HEADROOM_BYTES} bytes (it aborts beyond: PacketBuffer::push); use --k "
            f"{largest} or less, or --switch builtin")


class CompileFailed(RuntimeError):
    """The P4 compiler failed; the message is its first error line."""


@dataclass(frozen=True)
class CompiledProgram:
    target: str               # "builtin" or "bmv2"
    source: str
    device_config: str        # p4switch device config, or bmv2 JSON
    p4info: str               # P4Info in protobuf text format
    k: int                    # values per aggregation packet (AGG_K)


def compile_command(target: str, source: str, device_config: str, p4info: str,
                    defines: dict) -> list:
    define_args = [f"-D{name}={value}" for name, value in sorted(defines.items())]
    if target == "builtin":
        return ([python_executable(), "-m", "p4switch", "compile", source, "-o", device_config,
                 "--p4runtime-files", p4info] + define_args)
    if target == "bmv2":
        return ([bmv2_compiler(), "--std", "p4-16", "--p4runtime-files", p4info,
                 "-o", device_config] + define_args + [source])
    raise ValueError(f"unknown target {target!r}")


def bmv2_compiler() -> str:
    """p4c-bm2-ss of the p4lang toolchain; CompileFailed (one line) if there is none."""
    try:
        return p4lang.require((BMV2_COMPILER,)).path(BMV2_COMPILER)
    except p4lang.ToolchainMissing as e:
        raise CompileFailed(f"{e} (needed for --switch bmv2)") from None


def compile_environment(target: str) -> Optional[dict]:
    """The compiler's environment: the toolchain's for bmv2 (None: ours)."""
    return p4lang.require((BMV2_COMPILER,)).environment() if target == "bmv2" else None


def compile_program(target: str, build_dir: str = DEFAULT_BUILD_DIR, k: int = DEFAULT_K,
                    source: str = MAIN_PROGRAM, defines: Optional[dict] = None) -> CompiledProgram:
    """`source` built for `target` at AGG_K = k, with `defines` besides (ATP_AGGREGATORS)."""
    os.makedirs(build_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(source))[0]
    program = CompiledProgram(
        target=target, source=source, k=k,
        device_config=os.path.join(build_dir, f"{stem}.{target}.json"),
        # protobuf text format, chosen by the suffix (p4c-bm2-ss, and the controller reading it)
        p4info=os.path.join(build_dir, f"{stem}.{target}.{P4INFO_SUFFIX}"))
    command = compile_command(target, source, program.device_config, program.p4info,
                              {"AGG_K": k, **(defines or {})})
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                            env=compile_environment(target))
    if result.returncode != 0:
        lines = [l for l in (result.stderr + result.stdout).splitlines() if l.strip()]
        errors = [l for l in lines if "error" in l.lower()] or lines
        raise CompileFailed(f"compiling {os.path.relpath(source, REPO)} failed: "
                            f"{errors[0] if errors else 'exit code %d' % result.returncode}")
    return program
