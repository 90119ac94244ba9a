#!/usr/bin/env bash
# The switch's figures on this machine, whatever its core count, in one table and one results
# file (issue 27): switch CPU per forwarded frame and forwarded packets/s of `p4switch run` (C
# back end, tests/device/bench_veth.py, 100-byte frames) for each --threads value, then the
# linkrate points (leafspine:2,1,4, p = 8, 500,000 int32, K = 256; ina against its link-rate
# bound, ring/ina).
#
#   sudo scripts/bench-cores.sh [OUT.json]
#
# Environment: COUNT (frames per bench_veth run, default 600000), RATE (offered pps, default
# 200000; 0: as fast as the sender can), THREADS (default "1 2"; "-": the switch's own
# default, for a tree without --threads), RECEIVERS (default "counter ring"; "drop": frames to
# another host's MAC, which h2's input drops at once), BW (linkrate Mbit/s list, default
# "100"; "none" skips linkrate; a 16-core machine: "100,1000,0"), NAPI (veth NAPI modes on the
# hosts' ends, default "off"; e.g. "off threaded": bench_veth --napi and linkrate under
# $INA_VETH_NAPI, with the CPU of the napi kernel threads (tests/device/kernel_cpu.py)
# recorded beside each row), REPEATS (linkrate runs per NAPI mode, alternating, default 1).
# OUT.json defaults to /tmp/bench-cores.json; it holds the date, core count, load averages,
# git commit, commands and every row. Run it alone on the machine (flock /tmp/emulation.lock
# where others share it): the rates depend on the load.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-common.sh disable=SC1091  # checked on its own
source scripts/bench-common.sh
OUT=${1:-/tmp/bench-cores.json}
COUNT=${COUNT:-600000}
RATE=${RATE:-200000}
THREADS=${THREADS:-1 2}
RECEIVERS=${RECEIVERS:-counter ring}
BW=${BW:-100}
NAPI=${NAPI:-off}
REPEATS=${REPEATS:-1}
bench_begin bench-cores
rate_args=()
[ "$RATE" != 0 ] && rate_args=(--rate "$RATE")
for receiver in $RECEIVERS; do
    for threads in $THREADS; do
        for napi in $NAPI; do
            thread_args=()
            [ "$threads" != - ] && thread_args=(--threads "$threads")
            $PY tests/device/bench_veth.py --backend c --count "$COUNT" "${rate_args[@]}" \
                --receiver "$receiver" "${thread_args[@]}" --napi "$napi" \
                --json "$WORK/veth.jsonl" >&2
        done
    done
done
if [ "$BW" != none ]; then
    for repeat in $(seq "$REPEATS"); do
        for napi in $NAPI; do
            INA_VETH_NAPI=$napi $PY tests/device/kernel_cpu.py --json \
                "$WORK/linkrate-$napi-$repeat.kernel.jsonl" -- \
                "$PY" -m experiments linkrate --topo leafspine:2,1,4 --bw "$BW" --backends c \
                --modes ina,ring --elements 500000 --dtype int32 --k 256 \
                --out "$WORK/linkrate-$napi-$repeat" >&2
        done
    done
fi
$PY - "$OUT" "$WORK" "$STARTED" "$LOAD_START" "$COUNT" "$RATE" "$BW" "$NAPI" "$REPEATS" <<'PY'
import json, os, subprocess, sys
out, work, started, load_start, count, rate, bw, napis, repeats = sys.argv[1:]
veth = [json.loads(line) for line in open(os.path.join(work, "veth.jsonl"))]
linkrate = []
for repeat in range(1, int(repeats) + 1):
    for napi in napis.split():
        run = os.path.join(work, f"linkrate-{napi}-{repeat}")
        if not os.path.exists(os.path.join(run, "linkrate.json")):
            continue
        kernel = json.loads(open(run + ".kernel.jsonl").readline())
        for row in json.load(open(os.path.join(run, "linkrate.json")))["rows"]:
            # the kernel threads' CPU covers the whole linkrate run (every mode in it)
            linkrate.append(dict(row, napi=napi, repeat=repeat,
                                 run_napi_threads_cpu_s=kernel["napi_threads_cpu_s"],
                                 run_ksoftirqd_cpu_s=kernel["ksoftirqd_cpu_s"]))
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
rate_text = f" --rate {rate}" if rate != "0" else ""
document = {
    "meta": {"started": started, "cores": len(os.sched_getaffinity(0)),
             "load_average": [float(x) for x in load_start.split()],
             "load_average_end": list(os.getloadavg()), "git_commit": commit,
             "environment": {k: v for k, v in os.environ.items() if k.startswith("P4IO_")},
             "napi_modes": napis.split(), "linkrate_repeats": int(repeats),
             "command": [f"tests/device/bench_veth.py --backend c --count {count}{rate_text} "
                         "--receiver RECEIVER --threads THREADS --napi NAPI",
                         "INA_VETH_NAPI=NAPI tests/device/kernel_cpu.py --json FILE -- "
                         f"python -m experiments linkrate --topo leafspine:2,1,4 --bw {bw} "
                         "--backends c --modes ina,ring --elements 500000 --dtype int32 "
                         "--k 256"] if bw != "none" else []},
    "veth": veth, "linkrate": linkrate}
with open(out, "w") as f:
    json.dump(document, f, indent=1)
print(f"{document['meta']['cores']} cores, git {commit}, load average at start {load_start}")
print(f"{'figure':<44} {'threads':>7} {'value':>12} {'load':>5}")
for r in veth:
    what = f"veth {r['receiver']} napi={r.get('napi', 'off')}: switch CPU us/frame"
    print(f"{what:<44} {r['threads'] or '-':>7} {r['switch_cpu_us_per_frame']:>12.2f} "
          f"{r['load_average'][0]:>5.2f}   ({r['forwarded_pps']} pps, {r['lost']} lost; "
          f"napi threads {r.get('napi_threads_cpu_us_per_frame', 0):.2f} us/frame)")
for r in linkrate:
    label = (f"{r['bw_mbit']:g} Mbit/s" if r["bw_mbit"] else "unshaped") + f" napi={r['napi']}"
    if r["mode"] == "ina" and r["of_bound"] is not None:
        print(f"{'linkrate ' + label + ': ina / its bound':<44} {'':>7} {r['of_bound']:>12.2f} "
              f"{r['load_1min'] or 0:>5.2f}")
    if r["mode"] != "ina" and r["ina_speedup"] is not None:
        print(f"{'linkrate ' + label + ': ' + r['mode'] + '/ina':<44} {'':>7} "
              f"{r['ina_speedup']:>12.2f} {r['load_1min'] or 0:>5.2f}")
print(f"results: {out}")
PY
