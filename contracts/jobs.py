"""The job contract: what one collective run on the fabric is, as every layer agrees on it.

A job is one collective run by a set of ranks in one mode (ina: in the switches; a host
algorithm over TCP; Gloo).  This module is the one home of what the modes, the hosts'
command lines, the lab and the simulator share; it imports nothing but contracts.

* The registry: COLLECTIVES (the names of contracts/collectives/, one object each), the
  in-network designs (contracts/designs/, one object each), HOST_ALGORITHMS (one file each under hosts/algorithms/, named after the algorithm), which
  collectives each host algorithm has a schedule for (SUPPORTED), MODES and
  `mode_collectives`/`check_collective`.
* The values: DTYPES and their ELEMENT_BYTES, the switch kinds, K's default per switch kind
  (`default_k`; the values p4src compiles and the window limits are contracts/wire.py's),
  the host algorithms' chunk and connection timeout, the files of a job's workers
  (`job_file_stem`).
* The worker specs: one dataclass per command a launcher starts in a host (InaWorker:
  `python -m hosts worker`; HostAlgorithmWorker: `hosts allreduce`; GlooWorker: `hosts
  gloo`; TrainWorker: `hosts train`).  Each field is one option, declared once with
  `option()`: `to_argv()` writes the command line, `parser()` is the command's own argparse
  parser (its --help and one-line errors) and `from_argv()` parses with it.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from contracts import collectives, designs
from contracts.cli import (OneLineParser, non_negative_int, positive_float, positive_int)
from contracts.wire import (AGG_UDP_PORT, DEFAULT_K, DEFAULT_WINDOW, INA_FRAME_OVERHEAD,
                            SERVICE_IP, SWITCHML_UDP_PORT, VALUE_BYTES,
                            WINDOW_DEFAULT_HELP, ATP_DEFAULT_AGGREGATORS)

# -- the registry ---------------------------------------------------------------------------

# The collectives are objects, one file each (contracts/collectives/); here their names.
COLLECTIVES = collectives.NAMES
ALLREDUCE = collectives.ALLREDUCE.name         # the default of every command

# The host-only algorithms, in the order commands, tables and figures list them.  Each is a
# file of hosts/algorithms/ named after it ("binomial-tree": binomial_tree.py).
HOST_ALGORITHMS = ("ps", "binomial-tree", "butterfly", "ring", "rabenseifner",
                   "double-binary-tree", "rabenseifner-nearest")
# The host algorithms each collective has a schedule for (its host_phases).
SUPPORTED = {c.name: c.host_algorithms(HOST_ALGORITHMS) for c in collectives.REGISTRY.values()}
INA, GLOO = designs.INA.name, "gloo"
# The in-network designs (contracts/designs/), the host algorithms, Gloo.
MODES = (*designs.NAMES, *HOST_ALGORITHMS, GLOO)


def mode_collectives(mode: str) -> tuple:
    """The collectives `mode` runs: a design those its switches compute, a host algorithm
    those it has a schedule for, Gloo allreduce."""
    if designs.is_design(mode):
        return designs.get(mode).collectives
    if mode == GLOO:
        return (ALLREDUCE,)
    return tuple(c for c in COLLECTIVES if mode in SUPPORTED[c])


def check_collective(mode: str, collective: str) -> Optional[str]:
    """Why `mode` cannot run `collective` (one line), or None."""
    try:
        collectives.get(collective)
    except ValueError as unknown:
        return str(unknown)
    if collective in mode_collectives(mode):
        return None
    able = [name for name in MODES if collective in mode_collectives(name)]
    return (f"{mode} is not supported for the collective {collective} (modes that "
            f"run it: {', '.join(able)})")


# -- values ---------------------------------------------------------------------------------

DTYPES = ("int32", "float32")
ELEMENT_BYTES = {"int32": VALUE_BYTES, "float32": VALUE_BYTES}
DEFAULT_DTYPE = "int32"
SWITCH_KINDS = ("builtin", "bmv2", "auto")     # --switch: auto is the built-in switch
TRAIN_MODES = (INA, GLOO, "ring")               # the DDP comm hooks of `hosts train`
PARALLEL = ("hook", "ddp", "fsdp")
MODELS = ("mlp", "wide")

DEFAULT_CHUNK_BYTES = 1 << 16      # host algorithms' pipelining unit
CONNECT_TIMEOUT_S = 30.0           # a host algorithm's wait for a peer's connection or data
GROUP_TIMEOUT_S = 60.0             # Gloo's and training's wait for the process group
# K, the values per aggregation packet, when a command is given none: measured on star:4,
# 100,000 int32 values, unshaped, in-network against the ring (docs/results/k-default.md,
# its results files in docs/results/k-default/): the built-in switch is fastest at the
# largest K p4src compiles.  bmv2 keeps the program's own AGG_K: at K = 256 it could not run in-network
# allgather or broadcast (it grows a packet by at most 512 bytes), and it was not measured.
DEFAULT_K_BY_SWITCH = {"builtin": 256, "bmv2": DEFAULT_K}
K_DEFAULT_HELP = (f"(default: {DEFAULT_K_BY_SWITCH['builtin']} on the built-in switch, "
                  f"{DEFAULT_K_BY_SWITCH['bmv2']} on bmv2)")


def default_k(switch_kind: str) -> int:
    """K for a job on `switch_kind` ("builtin" or "bmv2") when none is asked for; the
    built-in switch's xdp back end takes the same (docs/native.md, "The XDP back end")."""
    return DEFAULT_K_BY_SWITCH[switch_kind]


# The options of a job that every command running or planning one takes, declared here
# once.  Left None, --k becomes the switch kind's default (default_k) and --window the links'
# (contracts.wire.default_window), once the network is known (fabric/running.py).
def add_k_option(parser, default: Optional[int] = None) -> None:
    """--k: values per aggregation packet (p4src's AGG_K)."""
    parser.add_argument("--k", type=positive_int, default=default,
                        help="values per aggregation packet (p4src's AGG_K)"
                             + (f" {K_DEFAULT_HELP}" if default is None else ""))


def add_window_option(parser, default: Optional[int] = None, what: str = "") -> None:
    """--window: aggregation slots per job (`what`: where it applies, said in --help)."""
    parser.add_argument("--window", type=positive_int, default=default,
                        help=f"aggregation slots per job{what}"
                             + (f" {WINDOW_DEFAULT_HELP}" if default is None else ""))


def add_dtype_option(parser) -> None:
    """--dtype: the vector's element type."""
    parser.add_argument("--dtype", choices=sorted(DTYPES), default=DEFAULT_DTYPE)


DEFAULT_TIMEOUT_MS = 100.0
TIMEOUT_WINDOWS = 4          # a timeout covers this many windows' worth of link time
SWITCH_TIMEOUT_WINDOWS = 3   # ... and this many windows' worth of a slow switch's work


def ina_timeout_ms(bw_mbit: Optional[float], window: int, k: int,
                   round_trip_ms: float = 0.0, switch_ms: float = 0.0) -> float:
    """The INA worker's first retransmission timeout, scaled to the link: on a slow link one
    window of packets takes long to serialize, and a timeout shorter than the queueing
    delay only adds retransmissions to a link that is already full.  round_trip_ms: the
    links' delays there and back (topologies.impairment.longest_round_trip_ms), added on
    top, so delayed links do not time out answers that are merely on their way.
    switch_ms: the switches' time for one window (jobs.modes.switch_window_ms; bmv2
    takes about a millisecond per packet at K = 64, so a window of 4 x 32 packets is 150 ms
    of work and the 100 ms default resent nearly every round: 11.3 s instead of 7.4 s at
    star:4, 100,000 elements)."""
    if not bw_mbit:
        link_ms = DEFAULT_TIMEOUT_MS
    else:
        window_ms = window * (VALUE_BYTES * k + INA_FRAME_OVERHEAD) * 8 / (bw_mbit * 1e3)
        link_ms = max(DEFAULT_TIMEOUT_MS, round(TIMEOUT_WINDOWS * window_ms))
    return max(link_ms, round(SWITCH_TIMEOUT_WINDOWS * switch_ms)) + round_trip_ms


def job_file_stem(mode: str, run: int, job: int, rank: Optional[int] = None) -> str:
    """The name a job's files share: `MODE-runRUN-jobJOB[-rankRANK]` (its workers' reports
    under reports/, their logs under logs/, its start barrier under barriers/)."""
    stem = f"{mode}-run{run}-job{job}"
    return stem if rank is None else f"{stem}-rank{rank}"


# -- worker specs ---------------------------------------------------------------------------

def option(default=dataclasses.MISSING, *, type=None, help=None, choices=None, metavar=None,
           flag=False, one_of=None):
    """A worker spec's field and its command-line option (--name, underscores as dashes):
    required without a default; `flag`: a store_true switch; `one_of`: the name of a group
    of options of which exactly one is given (--seed or --input)."""
    meta = {"type": type, "help": help, "choices": choices, "metavar": metavar, "flag": flag,
            "one_of": one_of}
    if default is dataclasses.MISSING and one_of is None:
        return field(metadata=meta)
    return field(default=None if one_of is not None else default, metadata=meta)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _text(value) -> str:
    """An option's value as typed: 322.0 -> "322", 0.1 -> "0.1"."""
    if isinstance(value, float):
        short = format(value, "g")
        return short if float(short) == value else repr(value)
    return str(value)


class WorkerSpec:
    """What a spec dataclass shares: COMMAND (the `python -m hosts` subcommand), PROG and
    DESCRIPTION (its --help), and the fields as options, in the order --help lists them."""
    COMMAND = PROG = DESCRIPTION = ""

    @classmethod
    def options(cls, fixed=()) -> list:
        return [f for f in dataclasses.fields(cls) if f.name not in fixed]

    @classmethod
    def add_arguments(cls, parser, fixed=()) -> None:
        groups = {}
        for f in cls.options(fixed):
            meta = f.metadata
            target = parser
            if meta["one_of"]:
                if meta["one_of"] not in groups:
                    groups[meta["one_of"]] = parser.add_mutually_exclusive_group(required=True)
                target = groups[meta["one_of"]]
            settings = {key: meta[key] for key in ("type", "help", "choices", "metavar")
                        if meta[key] is not None}
            if meta["flag"]:
                settings = {"action": "store_true", **settings}
            elif f.default is dataclasses.MISSING:
                settings["required"] = True
            elif f.default is not None:
                settings["default"] = f.default
            target.add_argument(_flag(f.name), **settings)

    @classmethod
    def parser(cls) -> OneLineParser:
        parser = OneLineParser(prog=cls.PROG, description=cls.DESCRIPTION)
        cls.add_arguments(parser)
        return parser

    @classmethod
    def from_argv(cls, argv: list, parser: Optional[argparse.ArgumentParser] = None):
        """The spec of a command line; UsageError (one line) for a bad one."""
        return cls(**vars((parser or cls.parser()).parse_args(argv)))

    def to_argv(self) -> list:
        """The options of this spec: every field that is set and not its default."""
        argv = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None or value is False or (f.default is not dataclasses.MISSING
                                                   and value == f.default):
                continue
            argv += [_flag(f.name)] if value is True else [_flag(f.name), _text(value)]
        return argv

    def command(self, python: str) -> list:
        """The whole command line, run with the Python `python`."""
        return [python, "-m", "hosts", self.COMMAND] + self.to_argv()


# The options several workers share, each declared once.
def _rank():
    return option(type=non_negative_int)


def _world():
    return option(type=positive_int)


def _elements():
    return option(type=positive_int)


def _dtype():
    return option(DEFAULT_DTYPE, choices=sorted(DTYPES))


def _seed():
    return option(type=non_negative_int, one_of="source")


def _input():
    return option(one_of="source", metavar="FILE", help="1-D .npy input vector")


def _output():
    return option(None, metavar="FILE", help="write the result as .npy")


def _json():
    return option(None, metavar="FILE", help="write the report ('-' for stdout)")


def _start_barrier():
    return option(None, metavar="DIR", help="write DIR/ready-RANK when set up, start the clock "
                                            "when DIR/go appears (the launcher's start barrier)")


def _master():
    return option(metavar="IP:PORT", help="rank 0's address, where the ranks meet (TCP store)")


def _ifname():
    return option(None, help="interface Gloo uses (GLOO_SOCKET_IFNAME) and whose counters "
                             "are reported")


@dataclass(kw_only=True)
class InaWorker(WorkerSpec):
    """`python -m hosts worker`: one rank of an in-network collective (hosts/ina/worker.py)."""
    COMMAND, PROG = "worker", "python -m hosts worker"
    DESCRIPTION = "In-network allreduce worker (UDP)."
    DESIGN = designs.INA.name             # the design whose switches it talks to
    job: int = option(type=non_negative_int)
    rank: int = _rank()
    world: int = _world()
    elements: int = _elements()
    dtype: str = _dtype()
    seed: Optional[int] = _seed()
    input: Optional[str] = _input()
    output: Optional[str] = _output()
    json: Optional[str] = _json()
    window: int = option(DEFAULT_WINDOW, type=positive_int,
                         help="slots in flight (must not exceed the job's slots on the switch)")
    timeout_ms: float = option(DEFAULT_TIMEOUT_MS, type=positive_float,
                               help="first retransmission timeout; doubles per retry")
    max_timeout_ms: float = option(3200.0, type=positive_float)
    max_retries: int = option(12, type=non_negative_int,
                              help="retransmissions of one packet before giving up")
    switch_ip: str = option(SERVICE_IP)
    switch_port: int = option(AGG_UDP_PORT, type=positive_int)
    bind: str = option("0.0.0.0", help="local address to bind")
    contributor: Optional[int] = option(None, type=non_negative_int,
                                        help="contributor index at the first switch "
                                             "(default: rank)")
    k: int = option(DEFAULT_K, type=positive_int,
                    help="values per packet (the switch program's AGG_K)")
    collective: str = option(ALLREDUCE, choices=COLLECTIVES,
                             help="what the switches compute (broadcast: from rank 0)")
    start_barrier: Optional[str] = _start_barrier()


@dataclass(kw_only=True)
class SwitchMLWorker(InaWorker):
    """`python -m hosts switchml`: one rank of a SwitchML allreduce (contracts/designs/
    switchml.py): the same worker algorithm, to SwitchML's port, allreduce only."""
    COMMAND, PROG = "switchml", "python -m hosts switchml"
    DESCRIPTION = "SwitchML allreduce worker (UDP port 9200, one switch)."
    DESIGN = designs.SWITCHML.name
    switch_port: int = option(SWITCHML_UDP_PORT, type=positive_int)
    collective: str = option(ALLREDUCE, choices=designs.SWITCHML.collectives,
                             help="SwitchML computes allreduce only")


@dataclass(kw_only=True)
class AtpWorker(WorkerSpec):
    """`python -m hosts atp`: one rank of an ATP allreduce (contracts/designs/atp.py,
    hosts/atp/worker.py); with --serve, the job's parameter server too."""
    COMMAND, PROG = "atp", "python -m hosts atp"
    DESCRIPTION = "ATP allreduce worker (UDP port 9300), and with --serve its parameter server."
    DESIGN = designs.ATP.name
    job: int = option(type=non_negative_int)
    rank: int = _rank()
    world: int = _world()
    elements: int = _elements()
    dtype: str = option("int32", choices=designs.ATP.dtypes, help="ATP sums int32 only")
    seed: Optional[int] = _seed()
    input: Optional[str] = _input()
    output: Optional[str] = _output()
    json: Optional[str] = _json()
    switch_ip: str = option(SERVICE_IP, help="where fragments go (the switches' service "
                                             "address; they pass on to the server)")
    index: int = option(type=non_negative_int,
                        help="this worker's index at its rack switch (its bit in bitmap0)")
    rack: int = option(0, type=non_negative_int, help="its rack's index at the next level")
    racks: str = option(help="workers per rack, comma-separated, in rack order (the server "
                             "counts contributions by them)")
    aggregators: int = option(ATP_DEFAULT_AGGREGATORS, type=positive_int,
                              help="the switches' aggregators, which fragments hash into")
    window: int = option(DEFAULT_WINDOW, type=positive_int,
                         help="fragments in flight at most (ECN marks halve it, "
                              "acknowledgements grow it back)")
    timeout_ms: float = option(DEFAULT_TIMEOUT_MS, type=positive_float,
                               help="first retransmission timeout; doubles per retry")
    max_timeout_ms: float = option(3200.0, type=positive_float)
    max_retries: int = option(12, type=non_negative_int,
                              help="resends of one fragment before giving up")
    k: int = option(DEFAULT_K, type=positive_int,
                    help="values per packet (the switch program's AGG_K)")
    serve: bool = option(False, flag=True,
                         help="also run the job's parameter server in this process")
    bind: str = option("0.0.0.0", help="local address to bind")
    start_barrier: Optional[str] = _start_barrier()


@dataclass(kw_only=True)
class HostAlgorithmWorker(WorkerSpec):
    """`python -m hosts allreduce`: one rank of a host algorithm over TCP (hosts/allreduce.py);
    `python -m hosts ring` is the same with the algorithm fixed (`parser_for`)."""
    COMMAND, PROG = "allreduce", "python -m hosts allreduce"
    DESCRIPTION = "Host-only allreduce over TCP."
    algorithm: str = option(choices=HOST_ALGORITHMS)
    collective: str = option(ALLREDUCE, choices=COLLECTIVES,
                             help="the collective to run (default allreduce)")
    rank: int = _rank()
    world: int = _world()
    peers: str = option(help="file of host:port lines, or a comma-separated list; rank r "
                             "listens on entry r")
    elements: int = _elements()
    dtype: str = _dtype()
    seed: Optional[int] = _seed()
    input: Optional[str] = _input()
    output: Optional[str] = _output()
    json: Optional[str] = _json()
    chunk_bytes: int = option(DEFAULT_CHUNK_BYTES, type=positive_int,
                              help="pipelining unit of the ring, the double binary tree and "
                                   "the parameter server's incast")
    timeout_s: float = option(CONNECT_TIMEOUT_S, type=positive_float,
                              help="how long to wait for a peer to connect or to send data")
    start_barrier: Optional[str] = _start_barrier()

    @classmethod
    def parser_for(cls, algorithm: Optional[str] = None) -> OneLineParser:
        """`hosts allreduce`'s parser, or with `algorithm` that of `hosts ALGORITHM`."""
        if algorithm is None:
            return cls.parser()
        parser = OneLineParser(prog=f"python -m hosts {algorithm}",
                               description=f"{algorithm} allreduce over TCP (host-only "
                                           "baseline).")
        cls.add_arguments(parser, fixed=("algorithm",))
        parser.set_defaults(algorithm=algorithm)
        return parser


@dataclass(kw_only=True)
class GlooWorker(WorkerSpec):
    """`python -m hosts gloo`: one rank of torch.distributed's Gloo all_reduce."""
    COMMAND, PROG = "gloo", "python -m hosts gloo"
    DESCRIPTION = "torch.distributed all_reduce with the Gloo backend."
    rank: int = _rank()
    world: int = _world()
    master: str = _master()
    ifname: Optional[str] = _ifname()
    elements: int = _elements()
    dtype: str = _dtype()
    seed: Optional[int] = _seed()
    input: Optional[str] = _input()
    output: Optional[str] = _output()
    json: Optional[str] = _json()
    timeout_s: float = option(GROUP_TIMEOUT_S, type=positive_float)


@dataclass(kw_only=True)
class TrainWorker(WorkerSpec):
    """`python -m hosts train`: one rank of DDP training (hosts/train.py)."""
    COMMAND, PROG = "train", "python -m hosts train"
    DESCRIPTION = "One rank of DDP training on the digits dataset."
    mode: str = option(choices=TRAIN_MODES)
    parallel: str = option("hook", choices=PARALLEL,
                           help="hook: DDP + the mode's comm hook; ddp: plain DDP on the "
                                "mode's process group; fsdp: FSDP2 fully_shard on it")
    model: str = option("mlp", choices=MODELS,
                        help="mlp: 64-HIDDEN-10; wide: 64-1024-1024-10 (1.1M parameters)")
    rank: int = _rank()
    world: int = _world()
    master: str = _master()
    ifname: Optional[str] = _ifname()
    epochs: int = option(20, type=positive_int)
    max_steps: Optional[int] = option(None, type=positive_int,
                                      help="stop after this many steps")
    batch: int = option(32, type=positive_int, help="images per rank per step")
    hidden: int = option(64, type=non_negative_int, help="hidden units (0: softmax regression)")
    lr: float = option(0.1, type=positive_float)
    momentum: float = option(0.9, type=float)
    seed: int = option(1, type=non_negative_int)
    slowdown: float = option(1.0, type=float,
                             help="make this rank's computation this many times slower (>= 1)")
    # ina
    job: Optional[int] = option(None, type=non_negative_int)
    switch_ip: Optional[str] = option(None)
    switch_port: int = option(AGG_UDP_PORT, type=positive_int)
    contributor: Optional[int] = option(None, type=non_negative_int)
    window: int = option(DEFAULT_WINDOW, type=positive_int)
    k: int = option(DEFAULT_K, type=positive_int)
    timeout_ms: float = option(DEFAULT_TIMEOUT_MS, type=positive_float)
    bind: str = option("0.0.0.0", help="UDP address of the ina socket")
    # ring
    peers: Optional[str] = option(None, help="ring: host:port per rank (comma list)")
    precision_check: bool = option(False, flag=True)
    json: Optional[str] = option(None, metavar="FILE")
