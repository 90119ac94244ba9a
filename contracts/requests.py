"""What a command asks for, typed: the fabric (`FabricRequest`) and the jobs to run on it
(`JobRequest`), built once from the command line at the top (experiments/, lab/) and handed
down as objects.  No parsed-options object goes below experiments/ and lab/
(tests/layering says so): topologies, the controller, fabric/ and jobs/ read these fields.

Each rule on a job's values is checked here once, with one error text (`k_refusal`,
`window_refusal`, `JobRequest.refusal`); the options themselves are declared once too
(contracts.jobs add_k_option and its siblings, topologies.impairment.add_link_arguments,
topologies.cluster.add_cluster_arguments, fabric.running.add_routing_arguments).  A K or a
window left unset (None) is filled in by `JobRequest.resolved` once the switch kind and the
links are known: the request is frozen, and the filled one is a new object.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from contracts import collectives, designs
from contracts.cli import UsageError
from contracts.jobs import DEFAULT_DTYPE
from contracts.wire import MAX_WINDOW, SWITCH_K_VALUES, default_window


DEFAULT_RUN_TIMEOUT_S = 900         # a run's workers are killed after this many seconds
# The TCP baselines get a congestion control without pacing unless told otherwise: with BBR
# (this machine's default) the ring's app-limited, paced flows settle at about 70% of a
# shaped link.  Host namespaces may only choose the "allowed" algorithms (cubic usually is
# not among them), and reno is, everywhere.
DEFAULT_TCP_CC = "reno"


def k_refusal(k: int) -> Optional[str]:
    """Why no job can run with K = k values per packet (one line), or None: p4src is
    compiled for SWITCH_K_VALUES only, and a switch drops every other K as wrong_k."""
    if k in SWITCH_K_VALUES:
        return None
    values = ", ".join(map(str, SWITCH_K_VALUES[:-1])) + f" or {SWITCH_K_VALUES[-1]}"
    return f"--k {k}: p4src is built for K = {values} values per packet"


def window_refusal(window: int) -> Optional[str]:
    """Why a job cannot keep `window` slots in flight (one line), or None."""
    if isinstance(window, int) and 1 <= window <= MAX_WINDOW:
        return None
    return (f"--window {window}: a job's slots are 1..{MAX_WINDOW} (the switch counts them "
            "in 16 bits)")


@dataclass(frozen=True)
class LinkSettings:
    """Every link's settings (topologies.impairment.add_link_arguments); None: unset."""
    bw: Optional[float] = None          # Mbit/s
    delay: Optional[float] = None       # ms
    jitter: Optional[float] = None      # ms
    loss: Optional[float] = None        # percent
    dup: Optional[float] = None         # percent
    reorder: Optional[float] = None     # percent

    def spec_defaults(self) -> dict:
        """The keywords of topologies.spec.TopologySpec.with_link_defaults."""
        return {"bw": self.bw, "delay_ms": self.delay, "jitter_ms": self.jitter,
                "loss_pct": self.loss, "dup_pct": self.dup, "reorder_pct": self.reorder}

    def set_options(self) -> list:
        """The names of the options that are set ("bw", "loss", ...)."""
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name)]


@dataclass(frozen=True)
class ClusterRequest:
    """--cluster SERVER,SERVER[,...] and its options (topologies.cluster)."""
    servers: str
    user: Optional[str] = None
    placement: str = "spread"
    tunnel: str = "ssh"


@dataclass(frozen=True)
class FabricRequest:
    """The network a command starts: topology, switch kind and back end, links, routing,
    placement over servers, and what the switches log and whether they are restarted."""
    topo: str
    switch: str = "auto"
    links: LinkSettings = LinkSettings()
    cluster: Optional[ClusterRequest] = None
    switch_backend: Optional[str] = None      # None: $P4SWITCH_BACKEND, else auto
    switch_logs: bool = False
    restart: bool = True
    flowlet_gap_us: int = 0
    flowlet_max_bytes: int = 0
    aggregators: Optional[int] = None         # the program's ATP_AGGREGATORS (None: default)

    @classmethod
    def from_options(cls, options) -> "FabricRequest":
        """The request of a command's parsed options (an argparse Namespace: the top of a
        command calls this once); options a command does not have keep their defaults."""
        links = LinkSettings(**picked(options, LinkSettings))
        cluster = None
        if getattr(options, "cluster", None):
            cluster = ClusterRequest(options.cluster, getattr(options, "cluster_user", None),
                                     getattr(options, "placement", "spread"),
                                     getattr(options, "tunnel", "ssh"))
        return cls(links=links, cluster=cluster,
                   **picked(options, cls, leave=("links", "cluster")))


@dataclass(frozen=True)
class JobRequest:
    """The jobs a command runs: which collective over which values, in which modes, with
    which K and window, how many at once on how many workers, and how a run is timed out,
    faulted and rescued.  `modes` are names (jobs.modes.MODES); `design` is the in-network
    design the lab's allreduce runs (contracts.designs)."""
    collective: str = collectives.ALLREDUCE.name
    dtype: str = DEFAULT_DTYPE
    elements: Optional[int] = None
    k: Optional[int] = None                  # None: the switch kind's (resolved)
    window: Optional[int] = None             # None: the links' (resolved)
    modes: tuple = ()
    design: str = designs.INA.name
    jobs: int = 1
    workers: Optional[int] = None            # per job; None: the hosts divided among jobs
    seed: int = 1
    repeat: int = 1
    fallback: Optional[str] = None           # host algorithm for a job the switches refuse
    absent_ranks: tuple = ()
    kill_switch: tuple = ()                  # jobs.faults.SwitchKill
    run_timeout: float = DEFAULT_RUN_TIMEOUT_S
    tcp_cc: str = DEFAULT_TCP_CC

    def __post_init__(self):
        refusal = self.refusal()
        if refusal:
            raise ValueError(refusal)

    def refusal(self) -> Optional[str]:
        """Why this request cannot run anywhere (one line), or None."""
        try:
            collectives.get(self.collective)
            designs.get(self.design)
        except ValueError as unknown:
            return str(unknown)
        if self.k is not None and k_refusal(self.k):
            return k_refusal(self.k)
        if self.window is not None and window_refusal(self.window):
            return window_refusal(self.window)
        return None

    @classmethod
    def from_options(cls, options, **given) -> "JobRequest":
        """The request of a command's parsed options (see FabricRequest.from_options);
        `given`: fields the command sets itself (modes parsed, elements of a point).
        UsageError (one line) for a request that cannot run (`refusal`)."""
        try:
            return cls(**{**picked(options, cls, leave=tuple(given)), **given})
        except ValueError as refused:
            raise UsageError(str(refused)) from None

    def resolved(self, k: int, bw_mbit: Optional[float],
                 delay_ms: Optional[float]) -> "JobRequest":
        """This request with K and the window filled in where unset: `k` (the switch
        kind's default, contracts.jobs.default_k) and the links' window
        (contracts.wire.default_window)."""
        k = self.k if self.k is not None else k
        window = (self.window if self.window is not None
                  else default_window(bw_mbit, k, delay_ms))
        return dataclasses.replace(self, k=k, window=window)


def picked(options, cls, leave: tuple = ()) -> dict:
    """The fields of dataclass `cls` that the parsed `options` have, by name."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(cls)
            if f.name not in leave and hasattr(options, f.name)}
