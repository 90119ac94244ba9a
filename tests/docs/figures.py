"""Every measured figure in README.md and docs/ is backed by a committed results file
(docs/testing.md, "Every figure has a file").

A measured table is marked by an HTML comment right before it (blank lines between allowed),
one field a line:

    <!-- measured: docs/results/star4/x/results.json [more files]
    command: sudo make run
    columns: seconds=seconds | Gbit/s=gbit_per_s | MB_sent/host=bytes_per_host/1e6
    unchecked: ring/ina | median/bound
    -->

- `measured`: the results files (JSON, or CSV whose `# key: value` lines come first), under
  docs/results/ and committed; each carries its date (`started` or `date`), `cores`,
  `load_average` and `git_commit` (in its `meta`, or at the top of the document).
- `command`: the command that wrote them.
- `columns`: header=key, one key per number in the cell ("min–max s=min_s max_s"); a key may
  be a dotted path into a record (list indices and `*` too, `sum:` summing what `*` took) and
  scaled (`/1e6`, `*100`).  Every row of the table must be
  one record of the files (any JSON object in them, or a CSV row) whose mapped values, at the
  table's rounding (half a unit of the last digit shown), are the row's numbers; a text cell
  must be equal ("yes"/"no" for true/false; "-", "unshaped" or "not recorded" for null; a
  cell may leave out a null value).  `header=keys @key=value ...` takes that column from a
  record with those values, of the file whose record gave the unselected columns, that
  agrees with the row on those it has: for rows that join several records (one column per
  back end, say); `@_file=PATH` takes it from another file; "not run" there when no record
  has it.
- `unchecked`: numeric columns the file does not hold as such (ratios of other columns,
  formulas, configuration, ranges over ranks), named one by one; every numeric column is
  either mapped or unchecked.

A figure in running text is tied to its file by a comment right after it, in the same
paragraph: `<!-- figure: docs/results/x/results.json runs.0.seconds=0.139 -->`,
the file (as above) and, for each figure, the dotted path of its value from the file's top
(list indices too; a CSV file's rows are a list: `0.seconds`), scaled as in `columns`, `=`
the number as the text writes it.  The file's value, at the number's rounding, must be that
number, and the number must be written in the text before the comment, in its paragraph
(several comments may follow one sentence that quotes several files).

A table that looks measured (a unit of time, rate, size or CPU in its header, or a cell with a
number and such a unit, "×" included) without that marker must say why it is not:
`<!-- not-measured: a formula table -->`.
Tables are Markdown pipe tables and fenced blocks whose first line is a header of
whitespace-separated names (the text tables the commands print).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_DIR = "docs/results/"
PROVENANCE_KEYS = (("started", "date"), ("cores",), ("load_average",), ("git_commit",))

# header words that name a measured quantity (a unit of time, rate, size or CPU)
MEASURED_HEADER = re.compile(
    r"(?<![\w/'])(s|ms|µs|us|ns|seconds|min|time|Gbit/s|Mbit/s|Melem/s|pps|packets/s|MB|KB|GB|"
    r"kB|CPU-s|CPU|RSS|accuracy|loss)(?![\w])|×|/s\b", re.IGNORECASE)
# a cell that states a measured quantity: a number with a unit of time, rate or size
MEASURED_CELL = re.compile(r"\d\s?(s|ms|µs|min|h|MB|GB|KB|Mbit/s|Gbit/s|pps|packets/s|CPU-s|×)"
                           r"(?![\w/])")
NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)
NOT_RUN = ("not run", "-")        # a selected column with no record at all
NULL_CELLS = ("-", "", "unshaped", "not recorded", "none")    # what a table writes for null
COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)


@dataclass
class Table:
    path: str                 # the document
    line: int                 # its header's line number
    header: list
    rows: list                # [[cell, ...], ...] (row line numbers in row_lines)
    row_lines: list
    marker: Optional[dict] = None       # the parsed "measured" comment
    not_measured: Optional[str] = None  # the reason of a "not-measured" comment

    def where(self) -> str:
        return f"{os.path.relpath(self.path, REPO)}:{self.line}"


@dataclass
class Mapping:
    keys: list                                    # [(dotted key, scale), ...]
    where: dict = field(default_factory=dict)     # @key=value ...: from the record that has


@dataclass
class Marker:
    files: list
    command: str
    columns: dict = field(default_factory=dict)   # header -> Mapping
    unchecked: list = field(default_factory=list)


# -- reading documents -----------------------------------------------------------------

def split_row(line: str) -> list:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def is_rule(cells: list) -> bool:
    return all(re.fullmatch(r":?-{2,}:?|-+", c) for c in cells if c) and any(cells)


def tables(path: str, text: Optional[str] = None) -> list:
    """The pipe tables and text tables of a document, each with the comment before it."""
    lines = (open(path).read() if text is None else text).splitlines()
    found, index, fenced = [], 0, False
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            if not fenced:
                table, end = text_table(path, lines, index)
                if table is not None:
                    found.append(table)
                    index = end
                    continue
            fenced = not fenced
            index += 1
            continue
        if not fenced and line.startswith("|") and index + 1 < len(lines) \
                and is_rule(split_row(lines[index + 1])):
            header = split_row(line)
            rows, row_lines, end = [], [], index + 2
            while end < len(lines) and lines[end].startswith("|"):
                rows.append(split_row(lines[end]))
                row_lines.append(end + 1)
                end += 1
            found.append(attach_comment(Table(path, index + 1, header, rows, row_lines),
                                        lines, index))
            index = end
            continue
        index += 1
    return found


def text_table(path: str, lines: list, fence: int):
    """A fenced block printed by a command: a header line of names, an optional rule, rows
    with as many fields, most of them numbers.  (None, _) for anything else (commands)."""
    end = fence + 1
    while end < len(lines) and not lines[end].startswith("```"):
        end += 1
    body = [(number + 1, line) for number, line in enumerate(lines[fence + 1:end], fence + 1)
            if line.strip()]
    if len(body) < 2:
        return None, end + 1
    header = body[0][1].split()
    rows = [(n, line.split()) for n, line in body[1:] if not set(line.strip()) <= {"-", " "}]
    numeric = sum(1 for _, cells in rows for c in cells if NUMBER.fullmatch(c))
    if (len(header) < 4 or not rows or any(len(cells) != len(header) for _, cells in rows)
            or numeric < sum(len(cells) for _, cells in rows) / 3
            or any(NUMBER.fullmatch(h) for h in header)):
        return None, end + 1
    table = Table(path, body[0][0], header, [cells for _, cells in rows],
                  [n for n, _ in rows])
    return attach_comment(table, lines, fence), end + 1


def attach_comment(table: Table, lines: list, start: int) -> Table:
    """The HTML comment that ends right before line index `start` (blank lines between)."""
    index = start - 1
    while index >= 0 and not lines[index].strip():
        index -= 1
    if index < 0 or not lines[index].rstrip().endswith("-->"):
        return table
    first = index
    while first >= 0 and "<!--" not in lines[first]:
        first -= 1
    comment = COMMENT.search("\n".join(lines[first:index + 1]))
    if comment is None:
        return table
    body = comment.group(1).strip()
    if body.startswith("not-measured:"):
        table.not_measured = body.split(":", 1)[1].strip()
    elif body.startswith("measured:"):
        table.marker = parse_marker(body)
    return table


def parse_marker(body: str) -> Marker:
    fields: dict = {}
    name = None
    for line in body.splitlines():
        match = re.match(r"\s*(measured|command|columns|unchecked):(.*)", line)
        if match:
            name = match.group(1)
            fields[name] = match.group(2).strip()
        elif name is not None:                       # a field continued on the next line
            fields[name] += " " + line.strip()
    columns = {}
    for part in filter(None, (p.strip() for p in fields.get("columns", "").split("|"))):
        part, _, selector = part.partition(" @")
        header, _, keys = part.rpartition("=")
        where = dict(pair.split("=", 1) for pair in selector.split())
        columns[header.strip()] = Mapping([scaled_key(k) for k in keys.split()], where)
    return Marker(files=fields.get("measured", "").split(), command=fields.get("command", ""),
                  columns=columns,
                  unchecked=[d.strip() for d in fields.get("unchecked", "").split("|")
                             if d.strip()])


def scaled_key(text: str) -> tuple:
    match = re.fullmatch(r"(.+?)(?:([/*])(\d[0-9.e+-]*))?", text)
    if match is None:
        raise ValueError(f"bad column key {text!r}")
    key, op, number = match.groups()
    scale = 1.0 if op is None else (float(number) if op == "*" else 1 / float(number))
    return key, scale


# -- judging tables ------------------------------------------------------------------------

def numbers(cell: str) -> list:
    """The numbers written in a cell, each with half a unit of its last digit."""
    found = []
    for match in NUMBER.finditer(cell.replace("−", "-")):
        text = match.group(0).replace(",", "")
        mantissa, _, exponent = text.lower().partition("e")
        if exponent and abs(int(exponent)) > 300:
            continue        # not a number: a git commit such as 33e5197
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        half = 0.5 * 10 ** (-decimals) * (10 ** int(exponent) if exponent else 1)
        found.append((float(text), half))
    return found


def looks_measured(table: Table) -> bool:
    return bool(MEASURED_HEADER.search(" ".join(table.header))) or \
        any(MEASURED_CELL.search(cell) for row in table.rows for cell in row)


def numeric_columns(table: Table) -> list:
    return [header for index, header in enumerate(table.header)
            if any(index < len(row) and numbers(row[index]) for row in table.rows)]


def problems_of(table: Table) -> list:
    """Why a table is not backed ([] when it is, or says why it needs no file)."""
    if table.marker is None:
        if table.not_measured is not None:
            return [] if table.not_measured else [f"{table.where()}: not-measured needs a reason"]
        return ([f"{table.where()}: looks measured ({' | '.join(table.header)[:80]}) but has no "
                 "<!-- measured: FILE ... --> (or <!-- not-measured: why -->) before it"]
                if looks_measured(table) else [])
    marker = table.marker
    problems = [f"{table.where()}: {p}" for p in marker_problems(marker, table)]
    if problems:
        return problems
    records = []
    for path in marker.files:
        records += [dict(record, _file=path) for record in load_records(os.path.join(REPO, path))]
    for row, line in zip(table.rows, table.row_lines):
        if not row_backed(table.header, row, marker.columns, records):
            detail = "; ".join(f"{h}={row[table.header.index(h)]}" for h in marker.columns
                               if h in table.header)
            problems.append(f"{os.path.relpath(table.path, REPO)}:{line}: no record of "
                            f"{' '.join(marker.files)} has {detail}")
    return problems


def marker_problems(marker: Marker, table: Table) -> list:
    problems = []
    if not marker.files:
        problems.append("measured: names no results file")
    if not marker.command:
        problems.append("measured: needs a command: line")
    for path in marker.files:
        problems += file_problems(path)
    for header in list(marker.columns) + marker.unchecked:
        if header not in table.header:
            problems.append(f"the marker names a column {header!r} the table does not have")
    unaccounted = [h for h in numeric_columns(table)
                   if h not in marker.columns and h not in marker.unchecked]
    if unaccounted:
        problems.append(f"numeric columns neither mapped nor unchecked: {unaccounted}")
    if not marker.columns:
        problems.append("columns: maps no column to the file")
    return problems


def file_problems(path: str) -> list:
    if not path.startswith(RESULTS_DIR):
        return [f"{path}: results files live under {RESULTS_DIR}"]
    full = os.path.join(REPO, path)
    if not os.path.isfile(full):
        return [f"{path}: no such file"]
    problems = [] if committed(path) else [f"{path}: not committed"]
    meta = file_meta(full)
    missing = [names[0] for names in PROVENANCE_KEYS if not any(n in meta for n in names)]
    if missing:
        problems.append(f"{path}: its meta lacks {', '.join(missing)}")
    return problems


def committed(path: str) -> bool:
    return subprocess.run(["git", "ls-files", "--error-unmatch", path], cwd=REPO,
                          capture_output=True).returncode == 0


def file_meta(full: str) -> dict:
    if full.endswith(".csv"):
        meta = {}
        with open(full) as handle:
            for line in handle:
                if not line.startswith("#"):
                    break
                key, _, value = line[1:].partition(":")
                meta[key.strip()] = value.strip()
        return meta
    document = json.load(open(full))
    meta = dict(document) if isinstance(document, dict) else {}
    if isinstance(meta.get("meta"), dict):
        meta.update(meta["meta"])
    return meta


def load_records(full: str) -> list:
    """Every JSON object in the file (nested ones too), or the rows of a CSV file."""
    if full.endswith(".csv"):
        with open(full) as handle:
            lines = [line for line in handle if not line.startswith("#")]
        return [{k: parse_csv_value(v) for k, v in row.items()} for row in csv.DictReader(lines)]
    found = []

    def walk(value):
        if isinstance(value, dict):
            found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    walk(json.load(open(full)))
    return found


def parse_csv_value(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def lookup(record: dict, key: str):
    """record["a"]["b"] for "a.b"; a number indexes a list ("per_rank.3.compute"), "*"
    takes every item ("runs.0.reports.*.redone_rounds"), and "sum:" sums what it took."""
    if key.startswith("sum:"):
        values = lookup(record, key[4:])
        if not isinstance(values, list) or not all(isinstance(v, (int, float)) for v in values):
            raise KeyError(key)
        return sum(values)
    head, _, rest = key.partition(".")
    if head == "*" and isinstance(record, list):
        return [lookup(item, rest) if rest else item for item in record]
    if isinstance(record, list) and head.isdigit() and int(head) < len(record):
        value = record[int(head)]
    elif isinstance(record, dict) and head in record:
        value = record[head]
    else:
        raise KeyError(key)
    return lookup(value, rest) if rest else value


def row_backed(header: list, row: list, columns: dict, records: list) -> bool:
    """A row comes from one file: one of its records has every column without a selector,
    and each column with one (@key=value) comes from a record of that file with those values
    that agrees with the row on the unselected columns it has; a selector naming `_file`
    takes the column from that file instead (a table that puts two runs side by side)."""
    plain = {name: m for name, m in columns.items() if not m.where}
    chosen = {name: m for name, m in columns.items() if m.where}
    files = []
    for record in records:
        if record["_file"] not in files and row_matches(header, row, plain, record):
            files.append(record["_file"])
    return any(all(column_backed(header, row, plain, name, mapping, records, source)
                   for name, mapping in chosen.items())
               for source in files)


def column_backed(header: list, row: list, plain: dict, name: str, mapping: Mapping,
                  records: list, source: str) -> bool:
    where = mapping.where if "_file" in mapping.where else dict(mapping.where, _file=source)
    candidates = [record for record in records
                  if selected(record, where) and agrees(header, row, plain, record)]
    if not candidates and row[header.index(name)].strip().lower() in NOT_RUN:
        return True                               # said so in the table, and no record has it
    return any(row_matches(header, row, {name: mapping}, record) for record in candidates)


def agrees(header: list, row: list, plain: dict, record: dict) -> bool:
    """The record matches the row on every unselected column it has (none: it agrees)."""
    shared = {name: m for name, m in plain.items() if all(has(record, k) for k, _ in m.keys)}
    return row_matches(header, row, shared, record)


def has(record: dict, key: str) -> bool:
    try:
        lookup(record, key)
        return True
    except KeyError:
        return False


def selected(record: dict, where: dict) -> bool:
    try:
        return all(str(lookup(record, key)) == value for key, value in where.items())
    except KeyError:
        return False


def row_matches(header: list, row: list, columns: dict, record: dict) -> bool:
    for name, mapping in columns.items():
        cell = row[header.index(name)] if header.index(name) < len(row) else ""
        try:
            values = [(lookup(record, key), scale) for key, scale in mapping.keys]
        except KeyError:
            return False
        if not cell_matches(cell, values):
            return False
    return True


def cell_matches(cell: str, values: list) -> bool:
    written = numbers(cell)
    first = values[0][0]
    if len(values) == 1 and (isinstance(first, bool) or not isinstance(first, (int, float))):
        return text_matches(cell, first)
    present = [(value, scale) for value, scale in values if value is not None]
    if not present:
        return text_matches(cell, None)
    if len(written) != len(present):      # a null left out ("0.30" for "s (× its bound)")
        return False
    for (number, half), (value, scale) in zip(written, present):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        if abs(value * scale - number) > half * (1 + 1e-9) + 1e-12 * abs(number):
            return False
    return True


def text_matches(cell: str, value) -> bool:
    cell = cell.strip().strip("`")
    if value is None:
        return cell.lower() in NULL_CELLS
    if isinstance(value, bool):
        return cell.lower() in (("yes", "true") if value else ("no", "false"))
    if isinstance(value, float) and math.isnan(value):
        return cell.lower() == "nan"
    return cell == str(value)


# -- figures in running text ----------------------------------------------------------------

FIGURE = re.compile(r"<!--\s*figure:(.*?)-->", re.DOTALL)
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


@dataclass
class Figure:
    path: str                 # the document
    line: int                 # the comment's line
    file: str                 # the results file
    values: list              # [(dotted key, scale, the number as written), ...]
    text: str                 # the running text the figures must be in

    def where(self) -> str:
        return f"{os.path.relpath(self.path, REPO)}:{self.line}"


def text_figures(path: str, text: Optional[str] = None) -> list:
    """The `<!-- figure: FILE key=number ... -->` comments of a document, each with the text
    before it in its paragraph (those in fenced blocks are examples, not figures)."""
    text = open(path).read() if text is None else text
    found, fences = [], [m.start() for m in re.finditer(r"^```", text, re.MULTILINE)]
    for match in FIGURE.finditer(text):
        if sum(1 for fence in fences if fence < match.start()) % 2:
            continue
        breaks = list(PARAGRAPH_BREAK.finditer(text, 0, match.start()))
        paragraph = max([0] + [b.end() for b in breaks])
        fields = match.group(1).split()
        values = []
        for item in fields[1:]:
            key, _, shown = item.rpartition("=")
            values.append(scaled_key(key) + (shown,) if key else ("", 1.0, item))
        found.append(Figure(path, text.count("\n", 0, match.start()) + 1,
                            fields[0] if fields else "", values,
                            COMMENT.sub(" ", text[paragraph:match.start()])))
    return found


def figure_problems(figure: Figure) -> list:
    """Why a figure comment does not back its figures ([] when it does)."""
    if not figure.file:
        return [f"{figure.where()}: figure: names no results file"]
    problems = [f"{figure.where()}: {p}" for p in file_problems(figure.file)]
    if not figure.values:
        problems.append(f"{figure.where()}: figure: names no key=number")
    if problems:
        return problems
    document = load_document(os.path.join(REPO, figure.file))
    # as magnitudes: "0.43-0.44 s" writes 0.44, not -0.44
    written = [abs(number) for number, _ in numbers(figure.text)]
    for key, scale, shown in figure.values:
        expected = numbers(shown)
        if not key or len(expected) != 1 or NUMBER.fullmatch(shown.replace("−", "-")) is None:
            problems.append(f"{figure.where()}: {key or shown}={shown}: not key=number")
            continue
        if abs(expected[0][0]) not in written:
            problems.append(f"{figure.where()}: {shown} is not in the text before the comment")
        try:
            value = lookup(document, key)
        except KeyError:
            problems.append(f"{figure.where()}: {figure.file} has no {key}")
            continue
        if not cell_matches(shown, [(value, scale)]):
            problems.append(f"{figure.where()}: {figure.file} has {key} = {value!r}, "
                            f"the text {shown}")
    return problems


def load_document(full: str):
    """A results file as one value: the JSON document, or a CSV file's rows as a list."""
    return load_records(full) if full.endswith(".csv") else json.load(open(full))


def check(paths: list) -> list:
    """Every problem in the documents' tables and running-text figures (see the module
    docstring)."""
    problems = []
    for path in paths:
        for table in tables(path):
            problems += problems_of(table)
        for figure in text_figures(path):
            problems += figure_problems(figure)
    return problems
