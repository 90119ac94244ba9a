"""Run a command and record the XDP back end's programs' run time while it runs (not a test).

    python tests/device/xdp_stats.py --json FILE -- COMMAND...

Holds the kernel's BPF run-time statistics on (loader.run_time_stats) and samples every 0.2 s
the run count and run time of each program named p4x_pipeline or p4x_replica (bpftool); a
switch's programs go when it stops, so each program id's last sample is its total, and FILE
gets {name: {"runs", "ns", "us_per_run"}} summed over the ids (every switch of the network).
Exits with the command's status."""
import argparse
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from p4switch.backend.xdp.loader import run_time_stats  # noqa: E402

NAMES = ("p4x_pipeline", "p4x_replica")


def sample(last: dict) -> None:
    shown = subprocess.run(["bpftool", "--json", "prog", "show"], capture_output=True,
                           text=True).stdout
    for prog in json.loads(shown or "[]"):
        if prog.get("name") in NAMES:
            last[prog["id"]] = (prog["name"], prog.get("run_cnt", 0), prog.get("run_time_ns", 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    last: dict = {}
    done = threading.Event()

    def sampler():
        while not done.wait(0.2):
            sample(last)
    with run_time_stats():
        thread = threading.Thread(target=sampler, daemon=True)
        thread.start()
        status = subprocess.run(command).returncode
        done.set()
        thread.join()
    totals: dict = {}
    for name, runs, ns in last.values():
        total = totals.setdefault(name, {"runs": 0, "ns": 0})
        total["runs"] += runs
        total["ns"] += ns
    for total in totals.values():
        total["us_per_run"] = round(total["ns"] / max(total["runs"], 1) / 1000, 3)
    with open(args.json, "w") as f:
        json.dump(totals, f)
    return status


if __name__ == "__main__":
    sys.exit(main())
