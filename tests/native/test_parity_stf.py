"""Two back ends, one truth: every STF program of the repository through the Python back end
(the reference) and the C back end, packet by packet (port, bytes, order), then registers,
counters, direct counters and digests; plus seeded differential fuzzing, and the generated C
under AddressSanitizer and UBSan.

Programs the C back end refuses are listed in REFUSED with the construct it names; the test
checks the refusal is exactly that one-line error, so the list cannot silently grow."""
import io
import os
import pathlib
import random
import subprocess
import sys

import pytest

import p4switch
from p4switch import stf
from p4switch.backend.c.emit import Unsupported

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO / "tests" / "tools" / "bench")]
from parity import fuzz_commands, run_commands, stable_seed  # noqa: E402

CORPUS = REPO / "tests" / "p4"
STF_FILES = sorted(CORPUS.glob("*.stf"))

# Constructs the C back end does not do yet (issue 11 keeps this list until it is empty).
REFUSED = {
}


def _compile(stf_path):
    return p4switch.compile_file(stf_path.with_suffix(".p4"), include_dirs=[str(CORPUS)])


@pytest.mark.parametrize("stf_path", STF_FILES, ids=lambda p: p.stem)
def test_stf_program_identical_on_both_backends(stf_path):
    program = _compile(stf_path)
    commands = stf.parse_stf(stf_path.read_text(), str(stf_path))
    if stf_path.stem in REFUSED:
        with pytest.raises(Unsupported) as refusal:
            run_commands(program, commands, stf_path.name)
        assert f"{REFUSED[stf_path.stem]} is not supported by the c back end" in str(refusal.value)
        return
    problems, packets = run_commands(program, commands, stf_path.name)
    assert packets > 0
    assert problems == []


def reference_passes(program, commands, name):
    """The STF's own expectations hold on the Python back end (the reference): identical
    output from both back ends is then the exact frames expected, not two that drop alike."""
    result = stf.StfRunner(p4switch.Switch(program, backend="python"), program, name).run(commands)
    assert result.passed, "\n".join(result.failures)
    assert result.packets_out > 0


def _agg_stf(k, workers=3, window=2, chunks=6):
    import agg_stf
    out = io.StringIO()
    agg_stf.write_stf(out, k, workers, window, chunks)
    return out.getvalue()


@pytest.mark.parametrize("k", [1, 4, 64])
def test_p4src_identical_on_both_backends(k):
    program = p4switch.compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": str(k)})
    commands = stf.parse_stf(_agg_stf(k), "agg.stf")
    problems, packets = run_commands(program, commands, f"p4src K={k}")
    assert packets == 2 * 6 * 3
    assert problems == []
    reference_passes(program, commands, f"p4src K={k}")


ECMP_STF = REPO / "tests" / "p4src" / "ecmp.stf"


def test_p4src_collectives_identical_on_both_backends():
    """Header-only contributions and TO_OWNER results (tests/p4src/collectives_stf.py): the
    same frames, registers and counters from both back ends."""
    sys.path.insert(0, str(REPO / "tests" / "p4src"))
    import collectives_stf
    out = io.StringIO()
    sent = collectives_stf.write_stf(out)
    program = p4switch.compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": "4"})
    problems, packets = run_commands(program, stf.parse_stf(out.getvalue(), "coll.stf"),
                                     "collectives")
    assert packets == sent == 15
    assert problems == []
    reference_passes(program, stf.parse_stf(out.getvalue(), "coll.stf"), "collectives")


def test_p4src_ecmp_identical_on_both_backends():
    """forwarding.p4's ECMP (tests/p4src/ecmp.stf): the same port per flow."""
    program = p4switch.compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": "1"})
    commands = stf.parse_stf(ECMP_STF.read_text(), str(ECMP_STF))
    problems, packets = run_commands(program, commands, "ecmp.stf")
    assert packets == 7
    assert problems == []
    reference_passes(program, commands, "ecmp.stf")


def _fuzz(program, commands, seed, count):
    """The STF's control plane, then `count` packets: the STF's own and seeded mutations."""
    return run_commands(program, fuzz_commands(commands, seed, count), "fuzz")


FUZZED = [p for p in STF_FILES if p.stem not in REFUSED]


@pytest.mark.parametrize("stf_path", FUZZED, ids=lambda p: p.stem)
def test_differential_fuzz(stf_path, fuzz_seed):
    program = _compile(stf_path)
    commands = stf.parse_stf(stf_path.read_text(), str(stf_path))
    if not any(isinstance(c, stf.PacketCmd) for c in commands):
        pytest.fail(f"{stf_path.name} has no packets to mutate")
    seed = fuzz_seed(stable_seed(stf_path.stem))
    problems, packets = _fuzz(program, commands, seed=seed, count=2000)
    assert packets == 2000
    assert problems == [], f"seed {seed} (re-run: --fuzz-seed {seed})"


def test_p4src_differential_fuzz(fuzz_seed):
    program = p4switch.compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": "4"})
    commands = stf.parse_stf(_agg_stf(4), "agg.stf")
    seed = fuzz_seed(7)
    problems, packets = _fuzz(program, commands, seed=seed, count=2000)
    assert packets == 2000
    assert problems == [], f"seed {seed} (re-run: --fuzz-seed {seed})"


def test_p4src_ecmp_differential_fuzz(fuzz_seed):
    """Mutated TCP/UDP/other frames through the ECMP routes: parser, the hash, the bucket."""
    program = p4switch.compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": "1"})
    commands = stf.parse_stf(ECMP_STF.read_text(), str(ECMP_STF))
    seed = fuzz_seed(13)
    problems, packets = _fuzz(program, commands, seed=seed, count=2000)
    assert packets == 2000
    assert problems == [], f"seed {seed} (re-run: --fuzz-seed {seed})"


SANITIZED = """
import io, pathlib, sys
sys.path[:0] = [{here!r}, {bench!r}]
import p4switch
from p4switch import stf
from p4switch.backend.c import build
from parity import run_commands
import agg_stf
problems = []
for path in {programs!r}:
    path = pathlib.Path(path)
    program = p4switch.compile_file(path.with_suffix('.p4'), include_dirs=[str(path.parent)])
    commands = stf.parse_stf(path.read_text(), str(path))
    problems += run_commands(program, commands, path.name, build.SANITIZER_FLAGS)[0]
out = io.StringIO()
agg_stf.write_stf(out, 4, 3, 2, 6)
program = p4switch.compile_file({main!r}, defines={{'AGG_K': '4'}})
problems += run_commands(program, stf.parse_stf(out.getvalue(), 'agg'), 'agg',
                         build.SANITIZER_FLAGS)[0]
print('PROBLEMS', problems)
sys.exit(1 if problems else 0)
"""


def test_generated_c_clean_under_asan_and_ubsan():
    """The STF programs and p4src, built with -fsanitize=address,undefined, in a process
    that preloads the sanitizer runtime: identical results and no sanitizer report."""
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    assert os.path.isabs(libasan), "gcc has no AddressSanitizer runtime (libasan)"
    programs = [str(p) for p in FUZZED]
    script = SANITIZED.format(here=str(HERE), bench=str(REPO / "tests" / "tools" / "bench"),
                              programs=programs, main=str(REPO / "p4src" / "main.p4"))
    env = dict(os.environ, LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1", PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, cwd=REPO, timeout=900)
    report = result.stdout + result.stderr
    assert "AddressSanitizer" not in report and "runtime error" not in report, report[-4000:]
    assert result.returncode == 0, report[-4000:]
    assert "PROBLEMS []" in result.stdout


OTHER_PROGRAMS = sorted((REPO / "tests" / "frontend" / "programs").glob("*.p4")) + \
    sorted((REPO / "tests" / "runtime" / "programs").glob("*.p4"))


@pytest.mark.parametrize("path", OTHER_PROGRAMS, ids=lambda p: p.stem)
def test_programs_without_stf_identical_on_random_packets(path):
    """Programs with no STF here: seeded random packets on random ports, tables as the
    program leaves them (default actions, const entries), both back ends."""
    if path.stem == "syntax":          # a front-end test: neither back end runs its extern
        with pytest.raises(p4switch.CompileError, match="extern Gen is not supported"):
            p4switch.compile_file(path, include_dirs=[str(path.parent)])
        return
    program = p4switch.compile_file(path, include_dirs=[str(path.parent)])
    rng = random.Random(path.stem)
    commands = [stf.PacketCmd(line=i, port=rng.randrange(4),
                              data=bytes(rng.randrange(256) for _ in range(rng.randrange(120))))
                for i in range(500)]
    problems, packets = run_commands(program, commands, path.name)
    assert packets == 500
    assert problems == []
