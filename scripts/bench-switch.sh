#!/usr/bin/env bash
# The switch's back ends in process (docs/results/switch.md, "Speed"): `p4switch bench` on
# IPv4 LPM forwarding and on p4src/main.p4 at K = 64 and 256, each on the Python and the C back
# end, into one results file with each command's `key: value` lines, the date, core count,
# load averages and git commit.
#
#   scripts/bench-switch.sh [OUT.json]      (default docs/results/switch/bench.json)
#
# Run it alone on the machine (flock /tmp/emulation.lock where others share it).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-docs/results/switch/bench.json}
PY=.venv/bin/python
WORK=$(mktemp -d /tmp/bench-switch.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
STARTED=$(date -u +%Y-%m-%dT%H:%M:%S+00:00)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
PREPARE=("tests/tools/bench/agg_stf.py --k 64 -o /tmp/agg_k64.stf"
         "tests/tools/bench/agg_stf.py --k 256 -o /tmp/agg_k256.stf")
# figure|command (after `python -m p4switch bench`)
BENCHES=("ipv4_lpm|tests/p4/ipv4_lpm.p4 tests/p4/bench/ipv4_lpm.stf --count 100000 --backend python"
         "ipv4_lpm|tests/p4/ipv4_lpm.p4 tests/p4/bench/ipv4_lpm.stf --count 500000 --backend c"
         "agg_k64|p4src/main.p4 -DAGG_K=64 /tmp/agg_k64.stf --count 20000 --backend python"
         "agg_k64|p4src/main.p4 -DAGG_K=64 /tmp/agg_k64.stf --count 500000 --backend c"
         "agg_k256|p4src/main.p4 -DAGG_K=256 /tmp/agg_k256.stf --count 5000 --backend python"
         "agg_k256|p4src/main.p4 -DAGG_K=256 /tmp/agg_k256.stf --count 100000 --backend c")
for command in "${PREPARE[@]}"; do
    # shellcheck disable=SC2086  # the command's words
    $PY $command
done
n=0
for bench in "${BENCHES[@]}"; do
    figure=${bench%%|*}
    args=${bench#*|}
    echo "== $figure: python -m p4switch bench $args" >&2
    # shellcheck disable=SC2086
    $PY -m p4switch bench $args | tee "$WORK/$n.out" >&2
    printf '%s\n%s\n' "$figure" "python -m p4switch bench $args" > "$WORK/$n.head"
    n=$((n + 1))
done
$PY - "$OUT" "$WORK" "$n" "$STARTED" "$LOAD_START" "${PREPARE[@]}" <<'PY'
import json, os, subprocess, sys
out, work, count, started, load_start, *prepare = sys.argv[1:]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()


def value(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


rows = []
for n in range(int(count)):
    figure, command = open(os.path.join(work, f"{n}.head")).read().splitlines()
    row = {"figure": figure, "command": command}
    for line in open(os.path.join(work, f"{n}.out")):
        key, sep, text = line.partition(":")
        if sep:
            row[key.strip()] = value(text.strip())
    rows.append(row)
record = {"meta": {"started": started, "cores": os.cpu_count(),
                   "load_average": [float(x) for x in load_start.split()],
                   "git_commit": commit,
                   "command": prepare + [row["command"] for row in rows],
                   "note": "each command's 'key: value' output, as printed"},
          "rows": rows}
with open(out, "w") as f:
    json.dump(record, f, indent=1)
    f.write("\n")
for row in rows:
    print(f"{row['figure']:9} {row['backend']:7} {row['pps']:>10,} pps")
PY
