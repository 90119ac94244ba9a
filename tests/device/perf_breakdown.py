"""Where the switch's CPU goes per forwarded frame, from a `perf record -g` of the switch
process (bench_veth.py --perf): perf's inclusive ("children") share of a few kernel and C
functions, turned into disjoint parts of the frame's cost.

    parts = breakdown("/tmp/veth.perf.c")     # [(part, percent of the samples), ...]

The parts (each a difference of inclusive shares, so they do not overlap):
- receiving host's input run inside the switch's send: the softirq that veth's transmit
  leaves pending and the kernel runs before the send returns (do_softirq under
  __dev_queue_xmit): the peer's packet sockets, IP stack, waking its readers;
- veth transmit (dev_hard_start_xmit: veth_xmit, handing the frame to the peer);
- qdisc layer and transmit checks (the rest of __dev_queue_xmit);
- AF_PACKET send (the rest of packet_sendmsg: skb allocation, copy from user, header parse);
- sendmmsg per message (the rest of __sys_sendmmsg: message and iovec import, entry);
- waiting (ppoll: naps and sleeps, with the context switches they cost);
- the pipeline in C (p4n_* and tm_* functions, clock reads);
- user-space copies (memmove/memcpy: the transmit batch);
- the rest (the loop itself, receive-ring reads, timer interrupts, ...).

The workers' side (`python -m hosts worker`, the C engine's loop in hosts/ina/engine_native.c):

    python tests/device/perf_breakdown.py workers [--perf FILE] [--syscalls] [--repo DIR]
        [--variant NAME] --json FILE -- COMPARE_ARGS...

runs `python -m experiments COMPARE_ARGS --out TMP` (from DIR's checkout, default this one;
run it under `flock /tmp/emulation.lock`) and adds to FILE (one JSON object: provenance, then
"runs" and "parts" lists) each worker's CPU seconds per round (a round: one contribution sent
and its result received, from the workers' reports). With --perf the whole machine is
sampled (`perf record -a -g`) during the run and each worker's samples between its first and
last one in the data loop (ne_run, fio_receive, recvmmsg, sendmmsg, ppoll) are cut into the
parts of WORKER_PARTS (worker_breakdown), in µs per round of the workers' own CPU seconds.
--syscalls counts the workers' sendmmsg, recvmmsg and ppoll calls (perf stat), as rounds per
call.  `perf_breakdown.py summarize FILE` then adds the median per variant and dtype (summarize).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

_LINE = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+\[([.k])\]\s+(\S+)")


def shares(path: str) -> tuple[dict, dict]:
    """{symbol: inclusive percent}, {symbol: self percent} of a perf.data file."""
    out = subprocess.run(["perf", "report", "-i", path, "--children", "--sort", "sym",
                          "--stdio", "-g", "none"], capture_output=True, text=True,
                         check=True).stdout
    children, own = {}, {}
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            children.setdefault(m.group(4), float(m.group(1)))
            own.setdefault(m.group(4), float(m.group(2)))
    return children, own


def breakdown(path: str) -> list[tuple[str, float]]:
    """The parts of the module docstring, as percent of the switch's samples."""
    children, own = shares(path)
    c = children.get
    softirq = c("__local_bh_enable_ip", 0.0)
    xmit = c("dev_hard_start_xmit", 0.0)
    queue = c("__dev_queue_xmit", 0.0)
    packet = c("packet_sendmsg", 0.0)
    sendmmsg = c("__sys_sendmmsg", 0.0)
    pipeline = sum(v for k, v in own.items() if k.startswith(("p4n_", "tm_")) or
                   k.startswith("__vdso_clock_gettime"))
    copies = sum(v for k, v in own.items() if k.startswith(("__memmove", "__memcpy")))
    parts = [
        ("receiving host's input, run in the switch's send", softirq),
        ("veth transmit", xmit),
        ("qdisc layer and transmit checks", queue - softirq - xmit),
        ("AF_PACKET send (skb, copy, parse)", packet - queue),
        ("sendmmsg per message (msghdr, iovec, entry)", sendmmsg - packet),
        ("waiting (ppoll naps, context switches)", c("__x64_sys_ppoll", 0.0)
         + c("__x64_sys_poll", 0.0)),
        ("the pipeline in C", pipeline),
        ("user-space copies", copies),
    ]
    parts.append(("the rest (loop, ring reads, interrupts)", 100.0 - sum(v for _, v in parts)))
    return [(name, round(value, 1)) for name, value in parts]


# ---- the workers' C engine, per round ------------------------------------------------------
# (part, rule): the first part whose rule matches a sample's stack takes it.  Rules see the
# stack's symbols (a set) and its leaf's symbol and object file.
_SEND = ("__sys_sendmmsg", "__x64_sys_sendmmsg")
_SOFTIRQ = ("net_rx_action", "handle_softirqs", "do_softirq.part.0", "__do_softirq")
WORKER_PARTS = [
    ("the switch port's input (its packet ring, its IP stack), run in the worker's send",
     lambda syms, leaf, dso: _any(syms, _SEND) and _any(syms, _SOFTIRQ)),
    ("veth transmit", lambda syms, leaf, dso: _any(syms, _SEND)
     and "dev_hard_start_xmit" in syms),
    ("qdisc layer and transmit checks", lambda syms, leaf, dso: _any(syms, _SEND)
     and "__dev_queue_xmit" in syms),
    ("UDP/IP send (route, skb, copy and checksum)", lambda syms, leaf, dso: _any(syms, _SEND)
     and "udp_sendmsg" in syms),
    ("sendmmsg per message (msghdr, iovec, entry)", lambda syms, leaf, dso: _any(syms, _SEND)),
    ("recvmmsg (UDP receive, copy to user, msghdr)", lambda syms, leaf, dso: _any(
        syms, ("do_recvmmsg", "__sys_recvmmsg", "__x64_sys_recvmmsg"))),
    ("waiting (ppoll, context switches)", lambda syms, leaf, dso: _any(
        syms, ("do_sys_poll", "__x64_sys_ppoll", "__x64_sys_poll"))),
    ("page faults (first touch of the sums)", lambda syms, leaf, dso: "asm_exc_page_fault"
     in syms),
    ("the engine's own code (C)", lambda syms, leaf, dso: "hosts-engine" in dso),
    ("user-space copies (values into packets, results into sums)", lambda syms, leaf, dso:
     leaf.startswith(("__memmove", "__memcpy", "memcpy", "memmove"))),
    ("clock reads (vDSO)", lambda syms, leaf, dso: dso == "[vdso]"),
    ("Python", lambda syms, leaf, dso: "python" in dso or "numpy" in dso),
    ("the rest (syscall entry and exit, interrupts, libc)", lambda syms, leaf, dso: True),
]
_LOOP = {"ne_run", "fio_receive", "__sendmmsg", "__recvmmsg", "ppoll", "__x64_sys_sendmmsg",
         "__x64_sys_recvmmsg", "__x64_sys_ppoll"}


def _any(syms: set, names: tuple) -> bool:
    return any(name in syms for name in names)


def samples_by_pid(path: str, pids: list[int]) -> dict:
    """{pid: [(time, [(symbol, object file), ...] leaf first), ...]} from `perf script`."""
    out = subprocess.run(["perf", "script", "-i", path, "--pid", ",".join(map(str, pids)),
                          "-F", "pid,time,ip,sym,dso"], capture_output=True, text=True,
                         check=True).stdout
    found: dict = {pid: [] for pid in pids}
    for block in out.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        pid, stamp = lines[0].split()[:2]
        frames = []
        for line in lines[1:]:
            rest = line.strip().split(None, 1)[1] if " " in line.strip() else ""
            symbol, _, dso = rest.rpartition(" (")
            frames.append((symbol, dso.rstrip(")")))
        found.setdefault(int(pid), []).append((float(stamp.rstrip(":")), frames))
    return found


def loop_samples(samples: list) -> list:
    """The samples between the first and the last one in the data loop."""
    times = [t for t, frames in samples if any(symbol in _LOOP for symbol, _ in frames)]
    if not times:
        return []
    first, last = min(times), max(times)
    return [frames for t, frames in samples if first <= t <= last]


def worker_breakdown(stacks: list) -> list[tuple[str, float]]:
    """WORKER_PARTS as percent of `stacks` (loop_samples of one or more workers)."""
    counts: Counter = Counter()
    for frames in stacks:
        syms = {symbol for symbol, _ in frames}
        leaf, dso = frames[0] if frames else ("", "")
        part = next(name for name, rule in WORKER_PARTS if rule(syms, leaf, dso))
        counts[part] += 1
    total = max(1, len(stacks))
    return [(name, round(100.0 * counts[name] / total, 2)) for name, _ in WORKER_PARTS]


def _worker_pids(seen: set) -> None:
    out = subprocess.run(["pgrep", "-f", "-x", r".*python.* -m hosts worker .*"],
                         capture_output=True, text=True).stdout
    seen.update(int(pid) for pid in out.split())


SYSCALLS = ("sendmmsg", "recvmmsg", "ppoll")


def _count_syscalls(pids: set, out: str) -> subprocess.Popen:
    """perf stat of the workers' sendmmsg, recvmmsg and ppoll calls until they exit."""
    events = ",".join(f"syscalls:sys_enter_{name}" for name in SYSCALLS)
    return subprocess.Popen(["perf", "stat", "-x", ",", "-e", events, "-p",
                             ",".join(map(str, sorted(pids))), "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _syscall_counts(path: str) -> dict:
    counts = {}
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[2].startswith("syscalls:sys_enter_"):
                counts[fields[2].rsplit("_", 1)[-1]] = int(fields[0])
    return counts


def run_workers(repo: str, compare_args: list[str], perf_file: str | None,
                syscalls: bool = False) -> dict:
    """One compare run from `repo`: the workers' reports, their pids, and with `syscalls`
    their socket and poll calls (perf stat attached as soon as they start: they make their
    input vectors before the start barrier)."""
    out = tempfile.mkdtemp(prefix="worker-profile-")
    perf, pids, stat, stat_file = None, set(), None, os.path.join(out, "syscalls.csv")
    if perf_file:
        perf = subprocess.Popen(["perf", "record", "-a", "-g", "-F", "2999", "-o", perf_file],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)                                  # perf is sampling before it starts
    compare = subprocess.Popen([sys.executable, "-m", "experiments", *compare_args,
                                "--out", out], cwd=repo, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    while compare.poll() is None:
        _worker_pids(pids)
        if syscalls and stat is None and pids:
            time.sleep(0.2)                              # the rest of them start
            _worker_pids(pids)
            stat = _count_syscalls(pids, stat_file)
        time.sleep(0.02)
    log = compare.stdout.read()
    counts = None
    if stat is not None:
        stat.wait(60)
        counts = _syscall_counts(stat_file)
    if perf is not None:
        perf.send_signal(2)                              # SIGINT: perf writes its file
        perf.wait(60)
    if compare.returncode != 0:
        raise SystemExit(f"compare failed:\n{log[-2000:]}")
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    shutil.rmtree(out, ignore_errors=True)
    return {"results": results, "pids": sorted(pids), "syscalls": counts}


def worker_rounds(report: dict) -> int:
    """Rounds of one worker: each first transmission is one (its result came back)."""
    return report["packets_sent"] - report["retransmissions"] - report["redone_rounds"]


def _workers_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="perf_breakdown.py workers")
    parser.add_argument("--json", required=True)
    parser.add_argument("--repo", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--variant", default="-")
    parser.add_argument("--perf", metavar="FILE", default=None,
                        help="perf record -a -g into FILE and break the workers' CPU down")
    parser.add_argument("--syscalls", action="store_true",
                        help="count the workers' sendmmsg, recvmmsg and ppoll calls")
    parser.add_argument("compare", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    compare_args = args.compare[1:] if args.compare[:1] == ["--"] else args.compare
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    from jobs.results import git_commit, now, provenance     # noqa: E402
    record = {"variant": args.variant, "started": now(), **provenance(),
              "repo_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                            cwd=args.repo, capture_output=True,
                                            text=True).stdout.strip()}
    perf_file = args.perf
    run = run_workers(args.repo, compare_args, perf_file, args.syscalls)
    (result,) = run["results"]["runs"][:1]
    reports = result["reports"]
    rounds = sum(worker_rounds(r) for r in reports)
    cpu = sum(r["cpu_seconds"] for r in reports)
    record.update(dtype=result["dtype"], elements=result["elements"], k=result["k"],
                  topo=result["topo"], seconds=result["seconds"], correct=result["correct"],
                  rounds=rounds, worker_cpu_seconds=cpu, worker_pids=run["pids"],
                  worker_cpu_us_per_round=1e6 * cpu / rounds,
                  per_worker_us_per_round=[1e6 * r["cpu_seconds"] / worker_rounds(r)
                                           for r in reports],
                  switch_cpu_us_per_round=1e6 * result["switch_cpu_seconds"] / rounds,
                  load_end=[round(x, 2) for x in os.getloadavg()])
    if run["syscalls"] is not None:
        record["syscalls"] = run["syscalls"]
        record["rounds_per_call"] = {name: round(rounds / count, 2) if count else None
                                     for name, count in run["syscalls"].items()}
    parts = []
    if perf_file:
        stacks = []
        for samples in samples_by_pid(perf_file, run["pids"]).values():
            stacks += loop_samples(samples)
        record["perf_samples"] = len(stacks)
        for name, percent in worker_breakdown(stacks):
            parts.append({"variant": args.variant, "dtype": result["dtype"], "part": name,
                          "percent": percent,
                          "us_per_round": round(percent / 100 * record[
                              "worker_cpu_us_per_round"], 3)})
    collected = {"runs": [], "parts": []}
    if os.path.exists(args.json):
        with open(args.json) as f:
            collected = json.load(f)
    else:
        collected = {"started": record["started"], "cores": record["cores"],
                     "load_average": record["load_average"], "git_commit": git_commit(),
                     "command": "python tests/device/perf_breakdown.py workers "
                                + " ".join(argv), **collected}
    collected["runs"].append(record)
    collected["parts"] += parts
    with open(args.json, "w") as f:
        json.dump(collected, f, indent=1)
    print(f"{args.variant} {result['dtype']}: {record['worker_cpu_us_per_round']:.2f} us "
          f"worker CPU per round ({rounds} rounds), switch {record['switch_cpu_us_per_round']:.2f}"
          f", load {record['load_average'][0]}", record.get("rounds_per_call", ""))
    for part in parts:
        print(f"  {part['us_per_round']:6.2f} us {part['percent']:5.1f}%  {part['part']}")
    return 0


def summarize(path: str) -> list[dict]:
    """Per variant and dtype of FILE's runs without perf: how many, the median, least and
    most worker CPU µs per round, and the median's ratio to variant "before"'s; written into
    FILE as "summary"."""
    with open(path) as f:
        collected = json.load(f)
    groups: dict = {}
    for run in collected["runs"]:
        if "perf_samples" not in run:
            groups.setdefault((run["variant"], run["dtype"]), []).append(
                run["worker_cpu_us_per_round"])
    summary = [{"variant": variant, "dtype": dtype, "runs": len(values),
                "median_us_per_round": round(statistics.median(values), 3),
                "min_us_per_round": round(min(values), 3),
                "max_us_per_round": round(max(values), 3)}
               for (variant, dtype), values in groups.items()]
    for row in summary:
        before = groups.get(("before", row["dtype"]))
        row["ratio_to_before"] = (round(row["median_us_per_round"]
                                        / statistics.median(before), 3) if before else None)
    collected["summary"] = summary
    with open(path, "w") as f:
        json.dump(collected, f, indent=1)
    return summary


if __name__ == "__main__":
    if sys.argv[1:2] == ["workers"]:
        sys.exit(_workers_main(sys.argv[2:]))
    if sys.argv[1:2] == ["summarize"] and len(sys.argv) == 3:
        for row in summarize(sys.argv[2]):
            print(row)
        sys.exit(0)
    sys.exit("usage: perf_breakdown.py workers [--perf FILE] [--repo DIR] [--variant NAME] "
             "--json FILE -- COMPARE_ARGS...  |  perf_breakdown.py summarize FILE")
