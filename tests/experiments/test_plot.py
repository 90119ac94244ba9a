"""`python -m experiments plot DIR` from a stored results.json (a real star:4 sweep at
5 Mbit/s: ina, ring and gloo, 2 and 4 workers, 20000 and 50000 elements, 2 runs each)."""

import os
import shutil
import subprocess
import sys

import pytest

from contracts.cli import UsageError
from experiments.plot import plot_all

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "star4_sweep")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURES = ("time_vs_elements.png", "speedup_vs_workers.png", "bytes_per_host.png")

# Checked by hand against the runs in the sample: e.g. ina, p=4, E=50000 ran in 0.554 s and
# 0.818 s (median 0.686), its wire bound is 782 packets x 314 bytes at 5 Mbit/s = 0.393 s,
# and the ring's median 0.665 s gives 0.97x.  The formula columns: ina sends E·4 bytes per
# host in one step, the ring (and Gloo) 2(p-1)/p·E·4 in 2(p-1) steps.
EXPECTED_TABLE = """\
| topology | collective | mode | workers | elements | dtype | link Mbit/s | correct/runs | median s | min–max s | link bound s | median/bound | fabric bound s | median/fabric bound | formula MB sent/host | wire MB sent/host | wire MB received/host | steps | ina speedup | links allow | paced by |
|---|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
| star:4 | allreduce | ina | 2 | 20000 | int32 | 5 | 2/2 | 0.23 | 0.17–0.30 | 0.16 | 1.48 | - | - | 0.080 | 0.101 | 0.098 | 1 | - | - | - |
| star:4 | allreduce | ring | 2 | 20000 | int32 | 5 | 2/2 | 0.14 | 0.14–0.14 | 0.13 | 1.05 | - | - | 0.080 | 0.087 | 0.087 | 2 | 0.60× | 0.85× | links |
| star:4 | allreduce | gloo | 2 | 20000 | int32 | 5 | 2/2 | 0.15 | 0.14–0.15 | 0.13 | 1.09 | - | - | 0.080 | 0.090 | 0.090 | 2 | 0.63× | 0.85× | links |
| star:4 | allreduce | ina | 2 | 50000 | int32 | 5 | 2/2 | 0.50 | 0.43–0.57 | 0.39 | 1.28 | - | - | 0.200 | 0.247 | 0.247 | 1 | - | - | - |
| star:4 | allreduce | ring | 2 | 50000 | int32 | 5 | 2/2 | 0.36 | 0.35–0.37 | 0.33 | 1.08 | - | - | 0.200 | 0.217 | 0.217 | 2 | 0.72× | 0.85× | links |
| star:4 | allreduce | gloo | 2 | 50000 | int32 | 5 | 2/2 | 0.34 | 0.34–0.35 | 0.33 | 1.03 | - | - | 0.200 | 0.218 | 0.218 | 2 | 0.68× | 0.85× | links |
| star:4 | allreduce | ina | 4 | 20000 | int32 | 5 | 2/2 | 0.38 | 0.35–0.41 | 0.16 | 2.42 | - | - | 0.080 | 0.100 | 0.099 | 1 | - | - | - |
| star:4 | allreduce | ring | 4 | 20000 | int32 | 5 | 2/2 | 0.24 | 0.23–0.25 | 0.20 | 1.18 | - | - | 0.120 | 0.130 | 0.130 | 6 | 0.62× | 1.28× | - |
| star:4 | allreduce | gloo | 4 | 20000 | int32 | 5 | 2/2 | 0.24 | 0.23–0.24 | 0.20 | 1.19 | - | - | 0.120 | 0.138 | 0.138 | 6 | 0.63× | 1.28× | - |
| star:4 | allreduce | ina | 4 | 50000 | int32 | 5 | 2/2 | 0.69 | 0.55–0.82 | 0.39 | 1.75 | - | - | 0.200 | 0.248 | 0.246 | 1 | - | - | - |
| star:4 | allreduce | ring | 4 | 50000 | int32 | 5 | 2/2 | 0.67 | 0.65–0.68 | 0.50 | 1.33 | - | - | 0.300 | 0.325 | 0.325 | 6 | 0.97× | 1.28× | - |
| star:4 | allreduce | gloo | 4 | 50000 | int32 | 5 | 2/2 | 0.61 | 0.61–0.62 | 0.50 | 1.22 | - | - | 0.300 | 0.331 | 0.331 | 6 | 0.90× | 1.28× | - |
"""


def test_plot_command_writes_figures_and_table(tmp_path):
    result = subprocess.run([sys.executable, "-m", "experiments", "plot", SAMPLE,
                             "--out", str(tmp_path / "figs")],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    written = sorted(os.path.basename(line) for line in result.stdout.split())
    assert written == sorted(FIGURES + ("results.md",))
    for name in FIGURES:
        data = (tmp_path / "figs" / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and 10_000 < len(data) < 150_000
    marker, table = (tmp_path / "figs" / "results.md").read_text().split("-->\n")
    assert table == EXPECTED_TABLE
    # the marker that names the table's results file and command (tests/docs/figures.py)
    assert marker.splitlines()[:2] == [
        "<!-- measured: tests/experiments/data/star4_sweep/results.json",
        "command: python -m experiments sweep --topo star:4 --modes ina,ring,gloo "
        "--elements 20000,50000 --workers 2,4 --bw 5 --repeat 2 --out /tmp/e6/sample"]
    assert marker.splitlines()[2].startswith("columns: topology=topo | collective=collective")


def test_skipped_mode_is_noted_and_single_mode_has_no_speedup(tmp_path):
    """A run with only ina (gloo skipped): the time figure and the table, no speedup figure."""
    from jobs import results
    runs, _, meta = results.load_document(SAMPLE)
    results.write_results(str(tmp_path), [r for r in runs if r.mode == "ina"], meta,
                          [{"mode": "gloo", "reason": "torch is not installed"}])
    written = [os.path.basename(p) for p in plot_all(str(tmp_path), str(tmp_path))]
    assert written == ["time_vs_elements.png", "bytes_per_host.png", "results.md"]
    table = (tmp_path / "results.md").read_text().splitlines()
    assert table[-1] == "gloo was skipped: torch is not installed"
    assert table[3] == "-->"
    assert [line.split(" | ")[2] for line in table[6:10]] == ["ina"] * 4


def test_plot_errors(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        plot_all(str(tmp_path), str(tmp_path))
    shutil.copy(os.path.join(SAMPLE, "results.json"), tmp_path)
    text = (tmp_path / "results.json").read_text().replace('"correct": true', '"correct": false')
    (tmp_path / "results.json").write_text(text)
    with pytest.raises(UsageError, match="no correct run to plot"):
        plot_all(str(tmp_path), str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "experiments", "plot", str(tmp_path / "x")],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: cannot read")


def test_one_worker_count_has_no_speedup_figure(tmp_path):
    """A speedup against worker count needs two worker counts: with one, it is left out."""
    from jobs import results
    runs, _, meta = results.load_document(SAMPLE)
    results.write_results(str(tmp_path), [r for r in runs if r.workers == 4], meta, [])
    written = [os.path.basename(p) for p in plot_all(str(tmp_path), str(tmp_path))]
    assert written == ["time_vs_elements.png", "bytes_per_host.png", "results.md"]


def test_the_footer_names_command_start_and_commit():
    from experiments.plot import provenance
    meta = {"command": ["python", "-m", "experiments", "sweep", "--topo", "star:4", "--out",
                        "/tmp/x"], "started": "2026-11-25T03:34:33+00:00", "git_commit": "3978f21"}
    assert provenance(meta) == ("python -m experiments sweep --topo star:4 --out DIR  |  "
                                "2026-11-25T03:34:33+00:00  |  git 3978f21")


def test_a_footer_says_what_an_older_results_file_did_not_record():
    from experiments.plot import provenance
    meta = {"command": ["python", "-m", "experiments", "train", "--topo", "star:4"]}
    assert provenance(meta) == ("python -m experiments train --topo star:4  |  "
                                "start time not recorded  |  commit not recorded")
    # the same where the file says so in words (docs/results' older files)
    assert provenance(dict(meta, started="not recorded", git_commit="not recorded")) == \
        provenance(meta)
    assert provenance({}) == ""


def test_every_mode_has_its_own_style():
    """Each registered host algorithm, ina and gloo gets a colour and marker of its own (none
    falls back to the gray 'x' of an unknown mode), so two modes are never drawn alike."""
    from experiments.plot import MODE_STYLE, style
    from hosts.algorithms import ALGORITHMS
    modes = ("ina", *ALGORITHMS, "gloo")
    assert set(modes) <= set(MODE_STYLE)
    drawn = [style(mode)[:2] for mode in modes]
    assert len(set(drawn)) == len(drawn)


def test_the_speedup_figure_draws_what_the_links_allow_beside_each_measured_point(monkeypatch):
    """Hollow markers at the bounds' ratio (the table's "links allow": 0.85x at 2 workers,
    1.28x at 4) beside each baseline's measured speed-up."""
    from experiments import aggregate, plot
    from jobs import results
    drawn = {}

    def keep(figure, path):
        drawn.update({line.get_label(): list(zip(line.get_xdata(), line.get_ydata()))
                      for line in figure.axes[0].get_lines()})
        return path
    monkeypatch.setattr(plot, "_save", keep)
    rows = aggregate.summarize_runs(results.load_runs(SAMPLE))
    plot.speedup_vs_workers(rows, "unused.png")
    allowed = drawn["ring (TCP): the links allow, E = 50,000"]
    assert [workers for workers, _ in allowed] == [2, 4]
    assert [round(speedup, 2) for _, speedup in allowed] == [0.85, 1.28]
    assert "Gloo (torch.distributed): the links allow, E = 20,000" in drawn
