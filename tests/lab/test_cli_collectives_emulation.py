"""The lab's `collective` command end to end on star:4: ring reduce-scatter, ring allgather
(float32), binomial broadcast and binomial reduce (float32), each correct on every rank (the
workers verify against the seed's exact answer) with the bytes each rank sent equal to
hosts/bounds.py's formula; the same four in the switches (`collective NAME ina`), correct on
every rank; and the unsupported pairs as one-line errors at the prompt."""

import os
import shutil
import sys

import pytest

from contracts.jobs import default_k
from hosts import bounds

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_cli_emulation import processes_mentioning, run_session  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
              pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")]

COMMANDS = (("collective reduce-scatter 6001", "ring", "reduce-scatter", 6001, "int32"),
            ("collective allgather ring 6001 float32", "ring", "allgather", 6001, "float32"),
            ("collective broadcast 5000", "binomial-tree", "broadcast", 5000, "int32"),
            ("collective reduce 5000 float32", "binomial-tree", "reduce", 5000, "float32"))
INA_COMMANDS = (("collective reduce-scatter ina 6001", "reduce-scatter", 6001, "int32"),
                ("collective allgather ina 6001 float32", "allgather", 6001, "float32"),
                ("collective broadcast ina 5000", "broadcast", 5000, "int32"),
                ("collective reduce ina 5000", "reduce", 5000, "int32"))


def test_collectives_in_the_lab(tmp_path):
    script = tmp_path / "session"
    script.write_text("".join(command + "\n" for command, *_ in COMMANDS + INA_COMMANDS) +
                      "collective broadcast ring\ncollective gather\n")
    code, stdout, stderr = run_session(tmp_path, "star:4", script=str(script))
    assert code == 0, stderr
    output = stdout.splitlines()
    for command, algorithm, collective, elements, dtype in COMMANDS:
        header = f"{algorithm} {collective}: 4 workers (h1, h2, h3, h4)"
        assert header in output, stdout
        lines = output[output.index(header):]
        for rank in range(4):
            sent = bounds.traffic(algorithm, rank, 4, elements, 4, collective)[0]
            assert lines[1 + rank].startswith(f"  h{rank + 1} rank {rank}: correct in "), lines
            assert f"/ {sent / 1e6:.3f} MB sent" in lines[1 + rank], (lines, sent)
        assert lines[5].startswith(f"{algorithm} {collective} job 1, {elements} x {dtype} on "
                                   "4 workers: correct in "), lines
    for command, collective, elements, dtype in INA_COMMANDS:
        header = f"ina {collective}: 4 workers (h1, h2, h3, h4)"
        assert header in output, stdout
        lines = output[output.index(header):]
        for rank in range(4):
            # at the lab's default K on the built-in switch
            sent = bounds.ina_traffic(collective, rank, 4, elements, default_k("builtin"), 32,
                                      dtype)[0]
            assert lines[1 + rank].startswith(f"  h{rank + 1} rank {rank}: correct in "), lines
            megabytes = float(lines[1 + rank].split(" MB sent")[0].rsplit("/ ", 1)[1])
            assert megabytes >= round(sent / 1e6, 3), (lines, sent)   # + retransmissions
        assert lines[5].startswith(f"ina {collective} job 1, {elements} x {dtype} on "
                                   "4 workers: correct in "), lines
    errors = [line for line in output if line.startswith("error:")]
    assert errors == [
        "error: ring is not supported for the collective broadcast (modes that run it: "
        "ina, binomial-tree)",
        "error: usage: collective NAME [ALGORITHM] [ELEMENTS] [DTYPE] (NAME: allreduce, "
        "reduce-scatter, allgather, broadcast, reduce)"]
    assert processes_mentioning(str(tmp_path)) == []
