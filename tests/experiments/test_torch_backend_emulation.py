"""`init_process_group("cpu:ina")` in Mininet: two ranks on h1 and h2 of star:2, the job
installed over P4Runtime, run allreduce (int32, float32, float16, bfloat16; SUM and AVG),
reduce_scatter_tensor, all_gather_into_tensor, broadcast and barrier through the switch,
each checked against a local computation of both ranks' inputs (tests/hosts/
test_torch_backend.py's checks: exact for int32 and the copies, within the documented bound
for floats), and plain DDP on the backend keeps both ranks' parameters bit-identical."""

import json
import os
import sys

import numpy as np
import pytest

from test_compare_emulation import REPO, run_in_private_network

sys.path.insert(0, os.path.join(REPO, "tests", "hosts"))
import test_torch_backend  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def test_two_ranks_on_the_ina_backend_in_mininet(tmp_path):
    script = os.path.join(REPO, "tests", "experiments", "torch_backend_mininet.py")
    result = run_in_private_network(
        [sys.executable, script, str(tmp_path), str(test_torch_backend.SEED),
         str(test_torch_backend.DDP_STEPS)], tmp_path, timeout=600)
    logs = "".join((tmp_path / "logs" / f"rank{r}.log").read_text(errors="replace")[-1500:]
                   for r in range(2) if (tmp_path / "logs" / f"rank{r}.log").exists())
    assert result.returncode == 0, result.stderr[-2000:] + logs
    results = [dict(np.load(tmp_path / f"rank{rank}.npz")) for rank in range(2)]
    test_torch_backend.check_results(results, 2)
    assert results[0]["ddp_params"].tobytes() == results[1]["ddp_params"].tobytes()
    for rank in range(2):
        stats = json.loads((tmp_path / f"rank{rank}.npz.json").read_text())["collectives"]
        for name in ("allreduce", "reduce_scatter", "allgather", "broadcast", "barrier"):
            assert stats[name]["calls"] > 0 and stats[name]["packets_sent"] > 0, name
