"""ECMP on a real fat tree: `python -m experiments compare --topo fattree:4 --modes ring` with
16 workers, five runs, and the core switches' port counters.

fattree:4 has four core switches (s1-s4).  The ring (rank r sends to r + 1) crosses pods four
times per run: ranks 3 -> 4, 7 -> 8, 11 -> 12 and 15 -> 0, four TCP data streams of the same
size S, each through one core switch, chosen per flow by the hash of its 5-tuple (random
ephemeral source ports) at the edge and at the aggregation switch.  Routed over one shortest
path, as before ECMP, all of them went through s1.  What the counters must show:

* per run, the cores together forward four streams' bytes (plus their acknowledgements), and
  each core a whole number of streams: a flow is never split over paths;
* over the five runs, at least three of the four cores carry streams.  With a uniform hash
  the chance that twenty streams use two cores or fewer is 6 * 2**-20 (+ 4 * 4**-20).

How evenly the bytes spread is printed (`-s`), not asserted: four streams per run land on
four cores one each only with probability 4!/4**4 (9%), so a fixed bound on the spread of a
run -- "within 30%" -- would fail most runs however good the hash is.

That bound is what flowlet switching is for (p4src/flowlet.p4): with
`--flowlet-max-bytes 65536` the switches cut every stream into 64 KB flowcells, each placed
anew, and in every run each core forwards within 30% of every other's bytes.
"""

import json
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_compare_emulation import run_in_private_network  # noqa: E402

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

CORES = ("s1", "s2", "s3", "s4")
RUNS = 5
ELEMENTS = 250_000
CROSSINGS = 4          # ring edges between pods (hosts h1-h4, h5-h8, ... form the pods)


def core_tx_bytes(run) -> dict:
    """{core: bytes its ports sent during the run}."""
    ports = run["interface_bytes"]["ports"]
    return {core: sum(t["tx_bytes"] for name, t in ports.items()
                      if name.startswith(core + "-eth")) for core in CORES}


def ring_runs(tmp_path, runs, *options):
    """The runs of `compare --topo fattree:4 --modes ring --workers 16` (results.json)."""
    out = tmp_path / "out"
    result = run_in_private_network(
        [sys.executable, "-m", "experiments", "compare", "--topo", "fattree:4", "--modes",
         "ring", "--workers", "16", "--elements", str(ELEMENTS), "--dtype", "int32",
         "--repeat", str(runs), "--out", str(out), "--switch", "builtin",
         "--run-timeout", "300", *options],
        tmp_path, timeout=1200)
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads((out / "results.json").read_text())["runs"]
    assert len(found) == runs
    return found


def test_ring_streams_spread_over_the_fattree_cores_one_path_each(tmp_path):
    runs = ring_runs(tmp_path, RUNS)
    streams = {core: 0 for core in CORES}
    lines = []
    for run in runs:
        assert run["correct"] is True and run["max_abs_err"] == 0
        # one stream: what a host sends (its data to the next rank and the acks of the
        # stream it receives, both the same size for every host of the ring)
        hosts = run["interface_bytes"]["hosts"]
        stream = min(t["tx_bytes"] for t in hosts.values())
        assert max(t["tx_bytes"] for t in hosts.values()) < 1.05 * stream
        cores = core_tx_bytes(run)
        total = sum(cores.values())
        assert CROSSINGS * 0.95 * stream <= total <= CROSSINGS * 1.05 * stream, (cores, stream)
        for core, sent in cores.items():
            whole = round(sent / stream)
            assert abs(sent / stream - whole) < 0.2, (core, sent / stream, cores)
            streams[core] += whole
        lines.append(" ".join(f"{core}={cores[core] / 1e6:.2f}MB" for core in CORES))
    assert sum(streams.values()) == CROSSINGS * RUNS
    used = [core for core, n in streams.items() if n]
    assert len(used) >= 3, streams
    totals = [sum(core_tx_bytes(run)[core] for run in runs) for core in CORES]
    print(f"\nper run: {'; '.join(lines)}\nstreams per core over {RUNS} runs: {streams}; "
          f"bytes max/min over the runs {max(totals) / max(1, min(totals)):.2f}")


def test_flowcells_spread_the_ring_over_the_cores_within_30_percent_in_every_run(tmp_path):
    runs = ring_runs(tmp_path, 3, "--flowlet-max-bytes", "65536")
    lines = []
    for run in runs:
        assert run["correct"] is True and run["max_abs_err"] == 0
        hosts = run["interface_bytes"]["hosts"]
        stream = min(t["tx_bytes"] for t in hosts.values())
        cores = core_tx_bytes(run)
        # the four streams cross the cores (retransmitted reordered segments on top)
        assert sum(cores.values()) >= CROSSINGS * 0.95 * stream, (cores, stream)
        assert max(cores.values()) <= 1.3 * min(cores.values()), cores
        lines.append(" ".join(f"{core}={cores[core] / 1e6:.2f}MB" for core in CORES)
                     + f" retx={run['retransmissions']}")
    print("\nper run: " + "; ".join(lines))
