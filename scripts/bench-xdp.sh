#!/usr/bin/env bash
# The XDP back end against the C one on this machine, in one results file (issue 27;
# docs/native.md, "The XDP back end"):
# 1. plain IPv4 routing (tests/device/ipv4_route.p4) over veth with bench_veth, both back ends
#    per offered rate: forwarded pps, loss, the switch process's CPU per frame, the XDP
#    program's own run time per frame (BPF statistics), the sender's and receiver's CPU;
# 2. in-network aggregation (p4src/main.p4) on unshaped links: compare star:4, ina and ring,
#    1,000,000 int32, K values per packet, REPEATS runs, on C switches and on XDP switches,
#    with the XDP programs' run time per ingress packet and per multicast copy (over both
#    modes' frames, and in one more run of ina alone).
#
#   sudo scripts/bench-xdp.sh [OUT.json]
#
# Environment: COUNT (frames per bench_veth run, default 600000), RATES (offered pps, default
# "200000 400000 0"; 0: as fast as the sender can), REPEATS (compare runs, default 3), K
# (values per aggregation packet, default 256).
# OUT.json defaults to /tmp/bench-xdp.json. Run it alone on the machine (flock
# /tmp/emulation.lock where others share it).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-common.sh disable=SC1091  # checked on its own
source scripts/bench-common.sh
OUT=${1:-/tmp/bench-xdp.json}
COUNT=${COUNT:-600000}
RATES=${RATES:-200000 400000 0}
REPEATS=${REPEATS:-3}
K=${K:-256}
bench_begin bench-xdp
for rate in $RATES; do
    rate_args=()
    [ "$rate" != 0 ] && rate_args=(--rate "$rate")
    $PY tests/device/bench_veth.py --backend xdp,c --program tests/device/ipv4_route.p4 \
        --napi gro --count "$COUNT" "${rate_args[@]}" --receiver counter \
        --json "$WORK/veth.jsonl" >&2
done
for backend in c xdp; do
    $PY tests/device/xdp_stats.py --json "$WORK/stats-$backend.json" -- \
        env INA_VETH_NAPI=gro "$PY" -m experiments compare --topo star:4 --modes ina,ring \
        --elements 1000000 --dtype int32 --k "$K" --repeat "$REPEATS" --switch builtin \
        --switch-backend "$backend" --out "$WORK/compare-$backend" >&2
done
# The programs' run time on in-network aggregation's frames alone (the run above mixes in the
# ring's segments): one more compare, ina only, on XDP switches.
$PY tests/device/xdp_stats.py --json "$WORK/stats-xdp-ina.json" -- \
    env INA_VETH_NAPI=gro "$PY" -m experiments compare --topo star:4 --modes ina \
    --elements 1000000 --dtype int32 --k "$K" --repeat "$REPEATS" --switch builtin \
    --switch-backend xdp --out "$WORK/compare-xdp-ina" >&2
$PY - "$OUT" "$WORK" "$STARTED" "$LOAD_START" "$COUNT" "$RATES" "$REPEATS" "$K" <<'PY'
import json, os, subprocess, sys
out, work, started, load_start, count, rates, repeats, k = sys.argv[1:]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
veth = [json.loads(line) for line in open(os.path.join(work, "veth.jsonl"))]
compare = []
for backend in ("c", "xdp"):
    document = json.load(open(os.path.join(work, f"compare-{backend}", "results.json")))
    stats = json.load(open(os.path.join(work, f"stats-{backend}.json")))
    for run in document["runs"]:
        compare.append({"backend": backend, "mode": run["mode"], "repeat": run["repeat"],
                        "seconds": run["seconds"], "correct": run["correct"],
                        "worker_cpu_seconds": run["worker_cpu_seconds"],
                        "switch_cpu_seconds": run["switch_cpu_seconds"],
                        "retransmissions": run["retransmissions"],
                        "switch_backend": run["switch_backend"]})
    compare.append({"backend": backend, "programs": stats})
ina_only = json.load(open(os.path.join(work, "compare-xdp-ina", "results.json")))
compare.append({"backend": "xdp", "modes": "ina",
                "correct": all(run["correct"] for run in ina_only["runs"]),
                "programs": json.load(open(os.path.join(work, "stats-xdp-ina.json")))})
record = {"started": started, "cores": os.cpu_count(), "git_commit": commit,
          "load_average": [float(x) for x in load_start.split()],
          "load_average_end": list(os.getloadavg()),
          "commands": {"veth": f"bench_veth.py --backend xdp,c --program "
                               f"tests/device/ipv4_route.p4 --napi gro --count {count} "
                               f"[--rate R for R in {rates}] --receiver counter",
                       "compare": f"INA_VETH_NAPI=gro python -m experiments compare --topo "
                                  f"star:4 --modes ina,ring --elements 1000000 --dtype int32 "
                                  f"--k {k} --repeat {repeats} --switch builtin "
                                  f"--switch-backend B (B = c, xdp; then --modes ina with "
                                  f"B = xdp)"},
             "veth": veth, "compare": compare}
with open(out, "w") as f:
    json.dump(record, f, indent=1)
print(f"{'backend':8} {'offered':>9} {'forwarded':>9} {'lost':>7} {'switch us':>9} "
      f"{'xdp us':>7} {'sender+recv us':>14}")
for r in veth:
    print(f"{r['backend']:8} {r['offered_pps']:9} {r['forwarded_pps']:9} {r['lost']:7} "
          f"{r['switch_cpu_us_per_frame']:9.2f} {r['xdp_program_us_per_run'] or 0:7.3f} "
          f"{r['sender_receiver_cpu_us_per_frame']:14.2f}")
print(f"{'backend':8} {'mode':5} {'seconds':>8} {'worker CPU s':>12} {'switch CPU s':>12}")
for r in compare:
    if "mode" in r:
        print(f"{r['backend']:8} {r['mode']:5} {r['seconds']:8.3f} {r['worker_cpu_seconds']:12.2f} "
              f"{r['switch_cpu_seconds']:12.2f}")
    else:
        print(f"{r['backend']:8} XDP programs{' (ina only)' if 'modes' in r else ''}: " + ", ".join(
            f"{name} {p['runs']} runs {p['us_per_run']:.2f} us" for name, p in
            r["programs"].items()))
print(f"wrote {out}")
PY
