"""The simulator's C++ actors (simulation/simcore.cpp, SimGrid's S4U API): built once and
cached, given the platform and the job as a text file, run as a child process.

Why C++: SimGrid's Python actors are operating-system threads (a worker, its timer and a
switch each), and every simulated message costs a few thread switches under the GIL: 165 to
2,400 messages a second on this machine, so `simulate --topo fattree:24 --workers 3456
--elements 1000000` (about 120 million ina messages, 24 million ring messages) took days.
The C++ actors run on SimGrid's own user-level contexts, in the same engine with the same
configuration (CM02, no TCP-gamma, no cross-traffic), the same platform (full zone, split-
duplex links, the same routes) and the same actors, created in the same order: ina.py's
worker, timer and switch actors and host_algorithms.py's rank actor, statement for
statement.  The Python side keeps everything else: the topology, the controller's planner
(the reduction tree and contributor indices), the host algorithms' schedules
(hosts/schedules.py, passed as a binary file of (kind, peer, elements) per operation), the
timeout, and the workers' outcomes (experiments/simulated.py writes results.json).
tests/experiments/test_simcpp.py runs both engines on small cases of every mode and checks
that they agree (completion times to 1e-9 relative, bytes, packets, switch events exactly).
The one difference: the loss draws come from C++'s mt19937_64 rather than Python's random,
so with --loss the lost frames differ between the engines (the rate does not).

Measured (docs/scaling.md): 3,456 workers on fattree:24 went from 165 messages a second with
the Python actors to about 110,000 (51,600 aggregation rounds per CPU second); the 16,384-
worker point takes a minute in simcore.  The other way the issue offered, one simulated
message per window of packets in the Python actors, is not the same model where the window
bounds the rate (a whole-window message is stored and forwarded whole: 1.55x to 3.45x off on
100 Gbit/s fat trees), so it was not taken.  Two SimGrid 3.32 costs are avoided in simcore:
actors wait for their finished sends (see Outbox in simcore.cpp), and jemalloc replaces
glibc's malloc when libjemalloc-dev is there (1.45x; the same results without it).

The worker's protocol rules (rounds, slot, version, timer, backoff, retry limit, the switch
cell's decisions) come from hosts/ina/protocol_rules.h, shared with the C worker engine.
The executable is cached under nativebuild's cache directory, keyed by the source, that
header, the compiler's identity, the flags and the SimGrid headers' version.
"""

from __future__ import annotations

import array
import hashlib
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import networkx as nx
import numpy as np

from contracts.wire import HEADER_LEN, VALUE_BYTES
from contracts.wire import INA_FRAME_OVERHEAD
from nativebuild import cache_dir, find_program

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simcore.cpp")
# The protocol's rules simcore shares with the C worker engine (#include "protocol_rules.h")
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES_DIR = os.path.join(_REPO, "hosts", "ina")
RULES_HEADER = os.path.join(RULES_DIR, "protocol_rules.h")
# No fused multiply-adds (C++'s default is to fuse where the target has them): the shared
# retransmission timer must round as Python's floats do, as in the C engine
CXX_FLAGS = ("-O2", "-std=c++17", "-ffp-contract=off")
# jemalloc (libjemalloc-dev): SimGrid allocates a few objects per message, and glibc's
# malloc took a third of the run time at 3,456 workers (1.45x faster with jemalloc)
FAST_MALLOC = ("-ljemalloc",)
SIMGRID_VERSION_HEADER = "/usr/include/simgrid/version.h"
UNSHAPED_MBIT = 100_000.0     # a link without --bw: 100 Gbit/s
PROGRESS = "simcore: progress: "
TIMES: dict = {}             # the last run's wall clock in simcore itself
MAX_TIMEOUT_S = 3.2          # hosts/ina/engine.py EngineConfig.max_timeout_s
DEFAULT_MAX_RETRIES = 50


class BuildError(RuntimeError):
    """No C++ compiler or SimGrid headers, or the compiler refused simcore.cpp."""


@dataclass(frozen=True)
class Costs:
    """Processing time per frame (simcore.cpp): a host's CPU per frame it sends (an ina
    packet, or a TCP segment's 1514-byte frame), charged before the send, and a switch's
    CPU per frame it handles: each aggregation packet it receives, and for the host-only
    modes each TCP frame it forwards (the switch's CPU is then a shared link of
    frame_bytes per switch_packet_s on every route through it).  Both 0 by default (the
    model without processing); simulate's --host-us, --switch-us and --processing emulated
    set them."""

    host_frame_s: float = 0.0
    switch_packet_s: float = 0.0
    frame_bytes: int = 1514          # contracts/wire.py TCP_FRAME_BYTES

    def line(self) -> str:
        return f"costs {self.host_frame_s!r} {self.switch_packet_s!r} {self.frame_bytes}"


NO_COSTS = Costs()


@dataclass(frozen=True)
class LinkModel:
    name: str
    mbit: float
    delay_s: float
    loss: float                # probability that a frame is lost on this link, each way


@dataclass(frozen=True)
class Shape:
    """How a job's vector is cut: chunks of K values, rounds of `train` chunks, slots.

    Rounds 0 .. real_rounds - 1 carry the vector.  With `closing` (the protocol's, as the
    workers' engines run it: hosts/ina/engine.py), every slot that had a real round then runs one
    closing round, the round `slots` after its last real one, with as many packets: rounds
    max(real_rounds, slots) .. real_rounds + slots - 1."""

    elements: int
    k: int
    window: int
    train: int = 1
    closing: bool = True

    @property
    def chunks(self) -> int:
        return math.ceil(self.elements / self.k)

    @property
    def real_rounds(self) -> int:
        return math.ceil(self.chunks / self.train)

    @property
    def slots(self) -> int:
        return max(1, math.ceil(self.window / self.train))

    @property
    def rounds(self) -> int:
        """The rounds a worker runs: the real ones and the closing ones."""
        return self.real_rounds + (min(self.slots, self.real_rounds) if self.closing else 0)

    @property
    def span(self) -> int:
        """One past the last round number in use."""
        return self.real_rounds + (self.slots if self.closing else 0)

    def has_round(self, q: int) -> bool:
        return 0 <= q < self.real_rounds or self.is_closing(q)

    def is_closing(self, q: int) -> bool:
        return self.closing and max(self.real_rounds, self.slots) <= q < self.span

    def packets(self, q: int) -> int:
        if q >= self.real_rounds:                     # a closing round: as its slot's last
            q -= self.slots
        return min(self.train, self.chunks - q * self.train)

    def payload_bytes(self, q: int) -> int:
        return self.packets(q) * (HEADER_LEN + VALUE_BYTES * self.k)

    def frame_bytes(self, q: int) -> int:
        return self.packets(q) * (INA_FRAME_OVERHEAD + VALUE_BYTES * self.k)

    def slot_of(self, q: int) -> tuple[int, int]:
        return q % self.slots, (q // self.slots) % 2


def link_model(link, index: int) -> LinkModel:
    return LinkModel(name=f"l{index}-{link.node1}-{link.node2}",
                     mbit=link.bw if link.bw else UNSHAPED_MBIT,
                     delay_s=(link.delay_ms or 0.0) / 1e3,
                     loss=(link.loss_pct or 0.0) / 100.0)


def compiler() -> str | None:
    """The C++ compiler to use ($CXX, else g++, else c++), or None when there is none."""
    return find_program("CXX", "g++", "c++")


def executable_path(cxx: str) -> str:
    """Where the executable built by `cxx` from today's sources is cached."""
    digest = hashlib.sha256()
    identity = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    for part in (identity.splitlines()[0] if identity else cxx,
                 "\0".join(CXX_FLAGS + FAST_MALLOC)):
        digest.update(part.encode() + b"\0")
    for path in (SOURCE, RULES_HEADER, SIMGRID_VERSION_HEADER):
        with open(path, "rb") as f:
            digest.update(f.read())
    return os.path.join(cache_dir(), f"simcore-{digest.hexdigest()[:24]}")


def build() -> str:
    """Path of the compiled simcore executable (built on first use)."""
    cxx = compiler()
    if cxx is None:
        raise BuildError("no C++ compiler found (install g++: scripts/setup.sh)")
    if not os.path.exists(SIMGRID_VERSION_HEADER):
        raise BuildError("SimGrid's C++ headers are missing (install libsimgrid-dev: "
                         "scripts/setup.sh)")
    target = executable_path(cxx)
    if os.path.exists(target):
        return target
    partial = f"{target}.{os.getpid()}.tmp"
    command = [cxx, *CXX_FLAGS, "-I", RULES_DIR, "-o", partial, SOURCE, "-lsimgrid"]
    result = subprocess.run([*command, *FAST_MALLOC], capture_output=True, text=True)
    if result.returncode != 0:         # no jemalloc: glibc's malloc, same results, slower
        result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise BuildError(f"{os.path.basename(cxx)} failed on simcore.cpp: "
                         + (lines[0] if lines else f"exit {result.returncode}"))
    os.replace(partial, target)
    return target


class Input:
    """The text file simcore reads: nodes, links, routes, then the job."""

    def __init__(self, spec, pairs=()):
        self.names = [h.name for h in spec.hosts] + [s.name for s in spec.switches]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.links = {}
        graph = nx.Graph()
        lines = []
        for i, link in enumerate(spec.links):
            model = link_model(link, i)
            self.links[frozenset((link.node1, link.node2))] = model
            graph.add_edge(link.node1, link.node2)
            lines.append(f"{model.name} {self.index[link.node1]} {self.index[link.node2]} "
                         f"{model.mbit * 1e6 / 8!r} {model.delay_s!r} {model.loss!r}")
        routes = []
        routed = set()
        for link in spec.links:
            for a, b in ((link.node1, link.node2), (link.node2, link.node1)):
                routes.append([a, b])
                routed.add((a, b))
        for a, b in pairs:
            if a != b and (a, b) not in routed:
                routes.append(nx.shortest_path(graph, a, b))
                routed.add((a, b))
        self.graph = graph
        self.routes = routes          # node names, first to last (smpi.py writes them too)
        self.text = [f"nodes {len(self.names)}", " ".join(self.names),
                     f"links {len(lines)}", *lines, f"routes {len(routes)}",
                     *(f"{len(path)} " + " ".join(str(self.index[n]) for n in path)
                       for path in routes)]

    def uplink(self, host: str) -> LinkModel:
        return self.links[frozenset((host, next(iter(self.graph[host]))))]


def die_with_parent() -> None:
    """Have the kernel send this process SIGTERM when its parent dies (Linux prctl
    PR_SET_PDEATHSIG), so that a killed `simulate` leaves no simulation running: its forked
    child calls it, and simcore gets it as preexec_fn."""
    import ctypes   # noqa: PLC0415  (Linux only, and only in these processes)
    import signal   # noqa: PLC0415
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)   # PR_SET_PDEATHSIG


def run_simcore(mode: str, platform_input: Input, job_lines: list, work_dir: str,
                costs: Costs = NO_COSTS) -> list:
    """Run simcore on the platform and job; its output lines."""
    path = os.path.join(work_dir, "input.txt")
    with open(path, "w") as f:
        f.write("\n".join([f"mode {mode} log critical", costs.line(), *platform_input.text,
                           *job_lines]) + "\n")
    executable = build()
    started = time.monotonic()
    out_path = os.path.join(work_dir, "output.txt")
    others = []
    with open(out_path, "w") as out:
        process = subprocess.Popen([executable, path], stdout=out, stderr=subprocess.PIPE,
                                   text=True, preexec_fn=die_with_parent)
        for line in process.stderr:             # progress lines go on to the user
            if line.startswith(PROGRESS):
                print(f"simulate: {line[len(PROGRESS):].strip()}", file=sys.stderr, flush=True)
            else:
                others.append(line.rstrip("\n"))
        returncode = process.wait()
    TIMES["simcore_s"] = round(time.monotonic() - started, 3)
    if returncode != 0:
        lines = [line for line in others if line.strip()]
        # SimGrid ends a crash with a backtrace: the line that names the error comes first
        named = [line for line in lines if "exception" in line.lower() or "simcore:" in line
                 or "error" in line.lower() or "assert" in line.lower()]
        message = (named or lines or [f"exit {returncode}"])[0 if named else -1]
        raise RuntimeError(f"simcore failed: {message.strip()}")
    with open(out_path) as f:
        return f.read().splitlines()


def run_ina(spec, plan, hosts: list, shape, timeout_s: float, max_timeout_s: float,
            max_retries: int, seed: int, costs: Costs = NO_COSTS) -> dict:
    """In-network aggregation in simcore: {"workers": [dict per rank], "events": {...},
    "frames_lost": n}."""
    platform_input = Input(spec)
    ix = platform_input.index
    lines = [f"shape {shape.elements} {shape.k} {shape.window} {shape.train} {int(shape.closing)}",
             f"timing {timeout_s!r} {max_timeout_s!r} {max_retries} {seed & (2**64 - 1)}",
             f"switches {len(plan.switches)}"]
    for name, sw in plan.switches.items():
        children = sorted((child.contributor, child.node) for child in sw.children)
        parent = -1 if sw.parent is None else ix[sw.parent]
        contributor_at_parent = sw.contributor_at_parent if sw.parent is not None else 0
        lines.append(f"{ix[name]} {parent} {contributor_at_parent} {sw.fan_in} {len(children)} "
                     + " ".join(f"{c} {ix[node]}" for c, node in children))
    lines.append(f"workers {len(hosts)}")
    for host in hosts:
        member = plan.hosts[host]
        lines.append(f"{ix[host]} {ix[member.switch]} {member.contributor}")
    with tempfile.TemporaryDirectory(prefix="simcore-") as work:
        output = run_simcore("ina", platform_input, lines, work, costs)
    workers, events, frames_lost = [], {}, 0
    for line in output:
        fields = line.split(" ", 12)
        if fields[0] == "worker":
            workers.append({"done": fields[2] == "1", "finished": float(fields[3]),
                            "packets_sent": int(fields[4]), "bytes_sent": int(fields[5]),
                            "wire_bytes_sent": int(fields[6]),
                            "bytes_received": int(fields[7]),
                            "wire_bytes_received": int(fields[8]),
                            "retransmissions": int(fields[9]),
                            "wrong_results": int(fields[10]),
                            "closings_unanswered": int(fields[11]),
                            "error": None if fields[12] == "-" else fields[12]})
        elif fields[0] == "event":
            events[fields[1]] = int(fields[2])
        elif fields[0] == "frames_lost":
            frames_lost = int(fields[1])
    return {"workers": workers, "events": events, "frames_lost": frames_lost}


def ring_fast_path(world: int, elements: int, chunk_elements: int) -> bool:
    """Whether ring_triples gives the ring's schedule: every segment one chunk, none empty."""
    return world >= 2 and elements >= world and -(-elements // world) <= chunk_elements


def ring_triples(rank: int, world: int, elements: int) -> np.ndarray:
    """hosts/schedules.py's ring allreduce for one rank as (kind, peer, elements) rows, built
    with numpy, when ring_fast_path holds: then every step t of the 2(N-1) (N-1 summing,
    then N-1 gathering) is one Send of segment r - s + offset to the right followed by one Recv
    of segment r - s - 1 + offset from the left (s = t mod (N-1), offset 0 then 1), and the
    segments are block_bounds' near-equal parts.  Python's schedule() takes 0.14 s per rank
    at 3,456 ranks (8 minutes for all); tests/experiments/test_simcpp.py checks the two
    give the same operations."""
    from hosts.schedules import block_bounds   # noqa: PLC0415  (hosts/ is heavy; only here)
    sizes = np.diff(block_bounds(elements, world))
    steps = np.arange(2 * (world - 1))
    offset = (steps >= world - 1).astype(np.int64)
    s = steps % (world - 1)
    rows = np.empty((2 * len(steps), 3), dtype=np.int32)
    rows[0::2, 0], rows[1::2, 0] = 0, 1
    rows[0::2, 1], rows[1::2, 1] = (rank + 1) % world, (rank - 1) % world
    rows[0::2, 2] = sizes[(rank - s + offset) % world]
    rows[1::2, 2] = sizes[(rank - s - 1 + offset) % world]
    return rows


def run_hosts(spec, hosts: list, programs, tcp_payload_per_frame: int,
              tcp_frame_bytes: int, costs: Costs = NO_COSTS) -> list:
    """A host-only algorithm in simcore; `programs` yields every rank's operations (Send or
    Recv of hosts/schedules.py) in rank order, read once: the routes are the pairs of ranks
    that exchange messages (run.host_pairs).  A dict per rank."""
    from hosts.schedules import Send   # noqa: PLC0415  (hosts/ is heavy; only here)
    with tempfile.TemporaryDirectory(prefix="simcore-") as work:
        ops_path = os.path.join(work, "ops.bin")
        counts, pairs = [], set()
        with open(ops_path, "wb") as f:
            for rank, ops in enumerate(programs):
                if isinstance(ops, np.ndarray):          # ring_triples: rows already
                    ops.tofile(f)
                    counts.append(len(ops))
                    for kind, peer in np.unique(ops[:, :2], axis=0).tolist():
                        pairs.add((hosts[rank], hosts[peer]) if kind == 0
                                  else (hosts[peer], hosts[rank]))
                    continue
                triples = array.array("i", [0]) * (3 * len(ops))
                for i, op in enumerate(ops):
                    send = isinstance(op, Send)
                    triples[3 * i:3 * i + 3] = array.array("i", (0 if send else 1, op.peer,
                                                                 op.stop - op.start))
                    pairs.add((hosts[rank], hosts[op.peer]) if send
                              else (hosts[op.peer], hosts[rank]))
                triples.tofile(f)
                counts.append(len(ops))
        platform_input = Input(spec, sorted(pairs))
        rank_lines = [f"{platform_input.index[host]} "
                      f"{platform_input.uplink(host).mbit * 1e6 / 8!r} {count}"
                      for host, count in zip(hosts, counts)]
        lines = [f"tcp {tcp_payload_per_frame} {tcp_frame_bytes}", f"ops {ops_path}",
                 f"ranks {len(hosts)}", *rank_lines]
        output = run_simcore("hosts", platform_input, lines, work, costs)
    ranks = []
    for line in output:
        fields = line.split()
        if fields[0] == "rank":
            ranks.append({"done": fields[2] == "1", "finished": float(fields[3]),
                          "messages_sent": int(fields[4]), "bytes_sent": int(fields[5]),
                          "wire_bytes_sent": int(fields[6]), "bytes_received": int(fields[7]),
                          "wire_bytes_received": int(fields[8])})
    return ranks
