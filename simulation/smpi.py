"""SimGrid's SMPI as an independent reference for the simulated host-only algorithms.

SMPI runs MPI programs on a SimGrid platform with its own implementations of the MPI
collectives (MPICH's and Open MPI's algorithms, chosen by --cfg=smpi/allreduce:NAME).  Here
one small MPI program of ours (simulation/smpi_allreduce.c: one MPI_Allreduce of int32,
its sum checked exactly on every rank) runs under `smpirun` on the platform the simulator
builds for a topology (the same links, rates, delays, split-duplex directions and routes as
simulation/cpp_engine.py's Input, written as SimGrid XML) with the simulator's network model
(CM02, no TCP-gamma window limit, no cross-traffic) and no simulated computation.

What differs, by design: SMPI sends payload bytes; the simulator sizes every message as the
TCP frames that carry it (1514 bytes per 1448 of payload: HEADER_RATIO).  So on a link-bound
run the simulator's time is the SMPI time times about HEADER_RATIO.  The algorithms that
correspond (by their schedules, not by name):

    simulator (hosts/schedules.py)   SMPI (--cfg=smpi/allreduce:)
    ring                             lr   (logical ring: summing phase, then all-gather)
    butterfly                        rdb  (recursive doubling)
    rabenseifner                     rab1 (recursive halving, partner P/2 away first,
                                     then MPI_Allgather: here its rdb, recursive doubling)
    rabenseifner-nearest             rab_rdb (MPICH's: recursive halving, nearest first)

(rab1 with SMPI's default allgather is not our rabenseifner on a leaf-spine: 8.6% apart
on leafspine:2,1,4; with allgather rdb it is.)

tests/experiments/test_simsmpi.py checks the agreement (SMPI_PAIRS); docs/scaling.md
reports it, from `python -m experiments.smpi_crosscheck` (experiments/smpi_crosscheck.py),
which runs every pair of SMPI_PAIRS on every topology and writes both times and their ratio.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from xml.sax.saxutils import quoteattr

from contracts.wire import TCP_FRAME_BYTES, TCP_PAYLOAD_PER_FRAME
from nativebuild import cache_dir
from simulation.cpp_engine import Input, link_model

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smpi_allreduce.c")
HEADER_RATIO = TCP_FRAME_BYTES / TCP_PAYLOAD_PER_FRAME      # 1514 / 1448
SMPI_PAIRS = {"ring": ("allreduce:lr",), "butterfly": ("allreduce:rdb",),
              "rabenseifner": ("allreduce:rab1", "allgather:rdb"),
              "rabenseifner-nearest": ("allreduce:rab_rdb",)}
HOST_SPEED = "1Tf"            # no computation is simulated (smpi/simulate-computation:no)
SMPI_CONFIG = ("--cfg=network/model:CM02", "--cfg=network/TCP-gamma:0",
               "--cfg=network/crosstraffic:0", "--cfg=smpi/simulate-computation:no",
               "--log=root.thres:critical")


class SmpiMissing(RuntimeError):
    """smpicc or smpirun is not installed (libsimgrid-dev)."""


def missing_tools() -> list:
    return [tool for tool in ("smpicc", "smpirun") if shutil.which(tool) is None]


def build() -> str:
    """Path of the compiled MPI program (cached by the source's digest)."""
    if missing_tools():
        raise SmpiMissing(f"{', '.join(missing_tools())} not found: SimGrid's SMPI "
                          f"(install libsimgrid-dev: scripts/setup.sh)")
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:24]
    target = os.path.join(cache_dir(), f"smpi-allreduce-{digest}")
    if os.path.exists(target):
        return target
    partial = f"{target}.{os.getpid()}.tmp"
    result = subprocess.run(["smpicc", "-O2", "-o", partial, SOURCE], capture_output=True,
                            text=True)
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RuntimeError("smpicc failed on smpi_allreduce.c: "
                           + (lines[0] if lines else f"exit {result.returncode}"))
    os.replace(partial, target)
    return target


def platform_xml(spec, hosts: list) -> str:
    """The simulator's platform for the workers `hosts` as SimGrid XML: a full zone with
    the workers as hosts, every spec link split-duplex, and the simulator's route
    (cpp_engine's Input: a networkx shortest path) between every ordered pair of workers."""
    pairs = [(a, b) for a in hosts for b in hosts if a != b]
    platform = Input(spec, pairs)
    direction = {}
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="fabric" routing="Full">']
    lines += [f"<host id={quoteattr(host)} speed={quoteattr(HOST_SPEED)}/>" for host in hosts]
    for i, link in enumerate(spec.links):
        model = link_model(link, i)
        direction[(link.node1, link.node2)] = (model.name, "UP")
        direction[(link.node2, link.node1)] = (model.name, "DOWN")
        lines.append(f"<link id={quoteattr(model.name)} "
                     f"bandwidth=\"{model.mbit * 1e6 / 8!r}Bps\" "
                     f"latency=\"{model.delay_s!r}s\" sharing_policy=\"SPLITDUPLEX\"/>")
    wanted = set(pairs)
    for path in platform.routes:
        if (path[0], path[-1]) not in wanted:
            continue
        hops = "".join(f"<link_ctn id={quoteattr(direction[hop][0])} "
                       f"direction=\"{direction[hop][1]}\"/>" for hop in zip(path, path[1:]))
        lines.append(f"<route src={quoteattr(path[0])} dst={quoteattr(path[-1])} "
                     f"symmetrical=\"NO\">{hops}</route>")
    return "\n".join(lines + ["</zone>", "</platform>"]) + "\n"


def run_allreduce(spec, hosts: list, elements: int, smpi_algorithm: tuple,
                  timeout_s: float = 300.0) -> float:
    """SMPI's allreduce of `elements` int32 over `hosts` (rank order) with the collective
    algorithms `smpi_algorithm` (("allreduce:NAME", ...): SMPI_PAIRS' values): the
    simulated seconds until the last rank had the sum.  RuntimeError if a rank's sum was
    wrong or smpirun failed (one line)."""
    program = build()
    with tempfile.TemporaryDirectory(prefix="smpi-") as work:
        xml_path = os.path.join(work, "platform.xml")
        hostfile = os.path.join(work, "hostfile")
        with open(xml_path, "w") as f:
            f.write(platform_xml(spec, hosts))
        with open(hostfile, "w") as f:
            f.write("\n".join(hosts) + "\n")
        result = subprocess.run(
            ["smpirun", "-np", str(len(hosts)), "-platform", xml_path, "-hostfile", hostfile,
             *SMPI_CONFIG, *(f"--cfg=smpi/{choice}" for choice in smpi_algorithm),
             program, str(elements)],
            capture_output=True, text=True, timeout=timeout_s, cwd=work)
    ranks = [line.split() for line in result.stdout.splitlines() if line.startswith("rank ")]
    if result.returncode != 0 or len(ranks) != len(hosts):
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"smpirun {' '.join(smpi_algorithm)} failed: "
                           + (lines[-1] if lines else f"exit {result.returncode}"))
    wrong = [fields[1] for fields in ranks if fields[7] != "0"]
    if wrong:
        raise RuntimeError(f"smpirun {' '.join(smpi_algorithm)}: wrong sums on ranks "
                           f"{', '.join(wrong)}")
    return max(float(fields[5]) - float(fields[3]) for fields in ranks)

