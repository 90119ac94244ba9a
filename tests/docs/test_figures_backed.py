"""Every measured table in README.md and docs/ names a committed results file and its
numbers are that file's (tests/docs/figures.py has the marker's grammar; docs/testing.md,
"Every figure has a file").  No emulation: the files are read, nothing is run.

`DOC_FILES="a.md b.md" pytest tests/docs/test_figures_backed.py` points the check at other
files (a scratch copy, say); by default it reads README.md and docs/**/*.md."""

import json
import os

import pytest

import figures
from doc_commands import REPO, default_files

FILES = os.environ.get("DOC_FILES", "").split() or default_files()
README = os.path.join(REPO, "README.md")


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, REPO))
def test_measured_tables_are_backed_by_their_files(path):
    assert figures.check([path]) == []


def test_the_check_sees_the_marked_tables():
    # it must find the tables and their markers, not pass because it read none
    marked = [t for path in default_files() for t in figures.tables(path) if t.marker]
    assert len(marked) >= 12
    assert {os.path.relpath(t.path, REPO) for t in marked} >= {
        "README.md", "docs/results/star4.md", "docs/results/results.md",
        "docs/results/linkrate.md", "docs/results/training.md", "docs/scaling.md"}
    quick_start = next(t for t in figures.tables(README) if t.marker)
    assert quick_start.header[:7] == ["mode", "job", "topo", "workers", "elements", "dtype",
                                      "seconds"]
    assert all(f.startswith("docs/results/") for f in quick_start.marker.files)


def scratch_readme(tmp_path, old: str, new: str) -> str:
    text = open(README).read()
    assert text.count(old) == 1, old
    path = tmp_path / "README.md"
    path.write_text(text.replace(old, new))
    return str(path)


def quick_start_row(mode: str, dtype: str) -> str:
    table = next(t for t in figures.tables(README) if t.marker)
    row = next(r for r in table.rows if r[0] == mode and r[5] == dtype)
    return row


def test_one_number_broken_in_a_scratch_readme_fails(tmp_path):
    """The issue's check: change one figure of the quick-start table by one unit of its
    last digit and the test names that line and the file it disagrees with."""
    row = quick_start_row("ina", "int32")
    seconds = row[6]
    wrong = f"{float(seconds) + 0.001:.3f}"
    line = next(l for l in open(README).read().splitlines()
                if l.split()[:1] == ["ina"] and " int32 " in l)
    path = scratch_readme(tmp_path, line, line.replace(f" {seconds} ", f" {wrong} "))
    problems = figures.check([path])
    assert len(problems) == 1, problems
    assert "no record of docs/results/star4/" in problems[0] and f"seconds={wrong}" in problems[0]
    # the same copy with the number as it was passes
    assert figures.check([scratch_readme(tmp_path, line, line)]) == []


def test_a_mapped_column_the_file_lacks_or_a_missing_file_fails(tmp_path):
    marker_line = next(l for l in open(README).read().splitlines()
                       if l.startswith("<!-- measured: docs/results/star4/"))
    path = scratch_readme(tmp_path, marker_line,
                          marker_line.replace("docs/results/star4/", "docs/results/nowhere/"))
    assert any("no such file" in p for p in figures.check([path]))
    text = open(README).read()
    broken = text.replace("Gbit/s=gbit_per_s", "Gbit/s=gbit_per_sec", 1)
    (tmp_path / "README.md").write_text(broken)
    assert any("no record" in p for p in figures.check([str(tmp_path / "README.md")]))


def test_an_unmarked_measured_table_fails_and_not_measured_needs_a_reason(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("| mode | seconds |\n|---|--:|\n| ina | 0.139 |\n\n"
                   "| what | result |\n|---|---|\n| star | exact in 6.9 s |\n\n"
                   "<!-- not-measured: the formula of hosts/bounds.py -->\n"
                   "| p | bound s |\n|--:|--:|\n| 8 | 1.96 |\n\n"
                   "<!-- not-measured: -->\n| K | bytes |\n|--:|--:|\n| 64 | 314 MB |\n\n"
                   "| folder | what it is |\n|---|---|\n| hosts/ | the workers |\n")
    problems = figures.check([str(doc)])
    assert [p.split(":")[1] for p in problems] == ["1", "5", "15"], problems
    assert "looks measured" in problems[0] and "looks measured" in problems[1]
    assert "needs a reason" in problems[2]


def test_text_tables_rows_and_selectors(tmp_path, monkeypatch):
    """A fenced text table, a range cell (two keys), a scaled key, a column taken from the
    record a selector picks, a null written as "-", and the file's provenance required."""
    results = tmp_path / "docs" / "results"
    results.mkdir(parents=True)
    meta = {"started": "2026-11-27T20:00:00+00:00", "cores": 2, "load_average": [1, 1, 1],
            "git_commit": "abc1234"}
    rows = [{"backend": "c", "bw": 10, "mode": "ina", "median_s": 1.7368, "min_s": 1.70,
             "max_s": 1.81, "bytes": 2463000.0, "speedup": None},
            {"backend": "python", "bw": 10, "mode": "ina", "median_s": 4.3561, "min_s": 4.0,
             "max_s": 4.9, "bytes": 2463000.0, "speedup": 0.82}]
    (results / "r.json").write_text(json.dumps({"meta": meta, "rows": rows}))
    (results / "bare.json").write_text(json.dumps({"rows": rows}))
    monkeypatch.setattr(figures, "REPO", str(tmp_path))
    monkeypatch.setattr(figures, "committed", lambda path: True)     # a scratch tree
    doc = tmp_path / "doc.md"
    marker = ("<!-- measured: docs/results/r.json\ncommand: run it\n"
              "columns: bw=bw | C s (min–max)=median_s min_s max_s @backend=c | "
              "Python s=median_s @backend=python | MB=bytes/1e6 | x=speedup @backend=c\n-->\n")
    table = ("```\nbw  C s (min–max)  Python s  MB  x\n"
             "10  1.74 (1.70–1.81)  4.36  2.46  -\n```\n")
    doc.write_text(marker + table)
    assert figures.tables(str(doc)) == []       # header names with spaces: not a text table
    pipe = ("| bw | C s (min–max) | Python s | MB | x |\n|--:|--:|--:|--:|--:|\n"
            "| 10 | 1.74 (1.70–1.81) | 4.36 | 2.46 | - |\n")
    doc.write_text(marker + pipe)
    assert figures.check([str(doc)]) == []
    doc.write_text(marker + pipe.replace("4.36", "4.35"))
    assert len(figures.check([str(doc)])) == 1
    doc.write_text(marker + pipe.replace("(1.70–1.81)", "(1.70–1.80)"))
    assert len(figures.check([str(doc)])) == 1
    doc.write_text(marker.replace("r.json", "bare.json") + pipe)
    assert any("lacks started, cores, load_average, git_commit" in p
               for p in figures.check([str(doc)]))
    text = ("<!-- measured: docs/results/r.json\ncommand: run it\n"
            "columns: mode=mode | seconds=median_s @backend=c | MB=bytes/1e6\n-->\n"
            "```\nmode  job  seconds  MB\n----  ---  -------  --\nina     1    1.737  2.463\n```\n")
    doc.write_text(text)
    assert any("neither mapped nor unchecked: ['job']" in p for p in figures.check([str(doc)]))
    doc.write_text(text.replace("MB=bytes/1e6\n", "MB=bytes/1e6\nunchecked: job\n"))
    assert figures.check([str(doc)]) == []


def scratch_results(tmp_path, monkeypatch):
    """docs/results/ of a scratch tree that the check reads as committed."""
    results = tmp_path / "docs" / "results"
    results.mkdir(parents=True)
    monkeypatch.setattr(figures, "REPO", str(tmp_path))
    monkeypatch.setattr(figures, "committed", lambda path: True)
    return results


def test_a_csv_results_file(tmp_path, monkeypatch):
    """A CSV file: its `# key: value` lines are its meta, each row a record."""
    results = scratch_results(tmp_path, monkeypatch)
    (results / "r.csv").write_text("# started: 2026-11-27T20:00:00+00:00\n# cores: 2\n"
                                    "# load_average: 1.0 1.1 1.2\n# git_commit: abc1234\n"
                                    "mode,seconds,bytes\nina,0.139,4097000\nring,0.158,6000000\n")
    doc = tmp_path / "doc.md"
    marker = ("<!-- measured: docs/results/r.csv\ncommand: run it\n"
              "columns: mode=mode | seconds=seconds | MB=bytes/1e6\n-->\n"
              "| mode | seconds | MB |\n|---|--:|--:|\n")
    doc.write_text(marker + "| ina | 0.139 | 4.097 |\n| ring | 0.158 | 6.000 |\n")
    assert figures.check([str(doc)]) == []
    doc.write_text(marker + "| ina | 0.158 | 4.097 |\n")      # ring's time on ina's row
    assert len(figures.check([str(doc)])) == 1


def test_figures_in_running_text(tmp_path, monkeypatch):
    """A `<!-- figure: FILE key=number -->` comment ties the numbers of the sentence before it
    to the file: the file's value at the text's rounding, and the number written there."""
    results = scratch_results(tmp_path, monkeypatch)
    meta = {"started": "2026-11-27T20:00:00+00:00", "cores": 2, "load_average": [1, 1, 1],
            "git_commit": "abc1234"}
    (results / "t.json").write_text(json.dumps({"meta": meta, "seconds": 19.4,
                                                "runs": [{"bytes": 4097000}]}))
    (results / "t.csv").write_text("# started: 2026-11-27\n# cores: 2\n# load_average: 1 1 1\n"
                                   "# git_commit: abc1234\nmode,seconds\nina,0.139\n")
    doc = tmp_path / "doc.md"
    good = ("Intro, 3 hosts.\n\nIt took about 19 s and sent 4.1 MB a host "
            "<!-- figure: docs/results/t.json seconds=19 runs.0.bytes/1e6=4.1 -->; then ina\n"
            "took 0.139 s <!-- figure: docs/results/t.csv 0.seconds=0.139 -->.\n")
    doc.write_text(good)
    assert [f.line for f in figures.text_figures(str(doc))] == [3, 4]
    assert figures.check([str(doc)]) == []
    # the text says another number than the comment: it is not written before the comment
    doc.write_text(good.replace("about 19 s", "about 18 s"))
    assert [p.split(": ", 1)[1] for p in figures.check([str(doc)])] == \
        ["19 is not in the text before the comment"]
    # both changed: the file disagrees
    doc.write_text(good.replace("19", "18"))
    assert figures.check([str(doc)]) == [
        "doc.md:3: docs/results/t.json has seconds = 19.4, the text 18"]
    # a number of another paragraph does not count; two comments after one sentence do
    doc.write_text("It took 0.139 s.\n\nThen <!-- figure: docs/results/t.csv 0.seconds=0.139 -->\n")
    assert len(figures.check([str(doc)])) == 1
    doc.write_text("It took 19 s, then 0.139 s <!-- figure: docs/results/t.json seconds=19 -->\n"
                   "<!-- figure: docs/results/t.csv 0.seconds=0.139 -->\n")
    assert figures.check([str(doc)]) == []
    doc.write_text(good.replace("took 0.139 s", "took 0.14 s"))
    assert len(figures.check([str(doc)])) == 1
    # a key the file lacks, a missing file, no key=number
    doc.write_text(good.replace("runs.0.bytes", "runs.1.bytes"))
    assert figures.check([str(doc)]) == ["doc.md:3: docs/results/t.json has no runs.1.bytes"]
    doc.write_text(good.replace("t.csv", "u.csv"))
    assert figures.check([str(doc)]) == ["doc.md:4: docs/results/u.csv: no such file"]
    doc.write_text("It took 19 s <!-- figure: docs/results/t.json -->\n")
    assert figures.check([str(doc)]) == ["doc.md:1: figure: names no key=number"]
    # in a fenced block it is an example, not a figure
    doc.write_text("```\nIt took 18 s <!-- figure: docs/results/t.json seconds=18 -->\n```\n")
    assert figures.text_figures(str(doc)) == []


def test_the_check_sees_the_running_text_figures():
    found = [f for path in default_files() for f in figures.text_figures(path)]
    assert {os.path.relpath(f.path, REPO) for f in found} >= {
        "README.md", "docs/results/star4.md", "docs/results/sweep.md"}


def test_a_running_text_figure_changed_in_a_scratch_readme_fails(tmp_path):
    """README's `make run` time, changed in the sentence alone, or in the sentence and its
    comment, fails against docs/results/quickstart/timing.json."""
    old = "`sudo make run` takes about 8 s"
    path = scratch_readme(tmp_path, old, old.replace("8 s", "9 s"))
    assert [p.split(": ", 1)[1] for p in figures.check([path])] == \
        ["8 is not in the text before the comment"]
    text = open(path).read().replace("runs.0.seconds=8 ", "runs.0.seconds=9 ")
    (tmp_path / "README.md").write_text(text)
    (problem,) = figures.check([path])
    assert "docs/results/quickstart/timing.json has runs.0.seconds" in problem


def test_a_commit_that_reads_like_a_number_is_not_one():
    """A short git commit such as 33e5197 matches the number pattern (33 x 10^5197): it is
    skipped, not a crash, and the numbers around it still count."""
    assert figures.numbers("git 33e5197, load 0.31") == [(0.31, 0.005)]
