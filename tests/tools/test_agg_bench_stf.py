"""The aggregation benchmark STF (tests/tools/bench/agg_stf.py) is a passing STF test of
p4src/main.p4: exact result frames for every chunk, N packets out for every N in, also when
replayed (the two jobs take turns on the same slots)."""

import io
import pathlib
import sys

from p4switch import compile_file
from p4switch.stf import run_stf

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "tools" / "bench"))
import agg_stf  # noqa: E402


def generated(k, workers, window, chunks) -> str:
    out = io.StringIO()
    agg_stf.write_stf(out, k, workers, window, chunks)
    return out.getvalue()


def test_bench_stf_passes_and_every_chunk_is_multicast():
    program = compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": "4", "AGG_SLOTS": "4"})
    text = generated(k=4, workers=3, window=2, chunks=8)
    result = run_stf(program, text, "agg_bench.stf")
    assert result.passed, result.failures
    assert result.packets_in == 2 * 8 * 3 and result.packets_out == result.packets_in
    # Replayed: the packet lines twice over still give one result per member per chunk,
    # with the same frames (each job's rounds start afresh on the other job's cells).
    packets = [line for line in text.splitlines() if line.startswith("packet ")]
    controls = [line for line in text.splitlines()
                if not line.startswith(("packet ", "expect "))]
    expects = [line for line in text.splitlines() if line.startswith("expect ")]
    twice = "\n".join(controls + packets + packets + expects + expects) + "\n"
    result = run_stf(program, twice, "agg_bench_twice.stf")
    assert result.passed, result.failures
    assert result.packets_out == 2 * 2 * 8 * 3


def test_bench_stf_command_line_errors():
    assert agg_stf.main(["--workers", "0", "-o", "/dev/null"]) == 2
