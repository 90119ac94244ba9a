"""PyTorch DDP with in-network allreduce: a DDP communication hook over the emulated switches.

The hook is the alternative to the `ina` backend (hosts/torch_backend.py,
`init_process_group("cpu:ina")`) for DDP users who want only the gradients on the switches:
DDP hands a hook each gradient bucket as one flat tensor (`GradBucket.buffer()`) and wants a
`torch.futures.Future` of the reduced bucket back (`DistributedDataParallel.
register_comm_hook`, PyTorch's "DDP Communication Hooks" notes), and DDP keeps a normal Gloo
process group for everything else (the initial parameter broadcast, and the fallback below).
The backend instead takes every collective of the process group (DDP's broadcast and bucket
allreduces, FSDP's allgather and its sum into shards) and runs them asynchronously.

`InaAllreducer` runs many allreduces (`run`: any collective of hosts/ina/ina_collectives.py) in a
row on one job, in process, with the same worker
engine, protocol and UDP transport as `python -m hosts worker` (hosts/ina/engine.py,
hosts/ina/worker.py): int32 vectors exactly, float32 as block floating point (hosts/ina/quantize.py).
A job's slots are reused from one allreduce to the next, so each allreduce continues every
slot's version alternation (`EngineConfig.first_versions`) and starts its chunk offsets above
the previous one's (`chunk_base`): docs/protocol.md's rules then hold across allreduces as
within one.  The 32-bit chunk offset bounds the elements a job can reduce in total (about
4.29e9); after that the hook falls back to Gloo.

`comm_hook` (the DDP hook) reduces every float32 bucket through the switches and falls back
to Gloo, with one line on stderr the first time for each reason, for what the switches
cannot take: buckets of another dtype (float64, float16, bfloat16: the switch adds int32),
a bucket with a NaN or an infinity on any rank, and a job whose chunk offsets are used up.
Every rank must take the same path, so the non-finite case is agreed on in the allreduce
itself: each bucket is sent with one extra block that holds 1 on a rank whose bucket has a
non-finite value (those values are sent as 0) and 0 otherwise; the block's sum is exact, and
if it is non-zero every rank throws the result away and reduces the bucket with Gloo.

The hooks here reduce each bucket synchronously (the future they return is complete), in
every mode alike (`GlooHook`, `RingHook` for the baselines), so that a training step's time
splits cleanly into computation and communication (`HookStats.seconds`).  DDP's overlap of
communication with the rest of the backward pass is given up in every mode alike.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.distributed as dist

from contracts.wire import AGG_UDP_PORT, worker_port
from hosts.ina import engine_native
from hosts.ina.engine import MAX_ELEMENTS, EngineConfig, make_schedule
from hosts.ina.worker import UdpTransport

FALLBACK_DTYPE = "dtype"
FALLBACK_NONFINITE = "nonfinite"
FALLBACK_OFFSETS = "offsets"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class HookStats:
    """What the hook did, cumulative: read and reset by the training loop per step."""
    allreduces: int = 0              # buckets reduced (by any path)
    seconds: float = 0.0             # time spent inside the hook
    elements: int = 0
    fallbacks: dict = field(default_factory=dict)   # reason -> buckets reduced with Gloo
    error_bound_sq: float = 0.0      # sum over buckets of ||per-element error bound||^2
    local_norm_sq: float = 0.0       # sum over buckets of ||local gradient||^2


class InaAllreducer:
    """Sums numpy vectors (int32 exactly, float32 as block floating point) over the ranks of
    one in-network aggregation job, one allreduce after another, over one UDP socket."""

    def __init__(self, job: int, contributor: int, world: int, switch_ip: str, window: int,
                 k: int, timeout_s: float = 0.1, max_retries: int = 12,
                 switch_port: int = AGG_UDP_PORT, bind: str = "0.0.0.0",
                 batch_io: bool = True):
        self.job, self.contributor, self.world = job, contributor, world
        self.window, self.k = window, k
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.transport = UdpTransport(bind, worker_port(job), (switch_ip, switch_port),
                                      batch_io)
        self.versions: tuple = ()         # the version of each slot's next round
        self.chunk_base = 0               # offsets below this were used by earlier allreduces
        self.timer = None                 # the round-trip estimate, carried across allreduces
        self.packets_sent = self.bytes_sent = self.retransmissions = 0
        self.last_engine = None           # AggregationEngine or its C twin

    def close(self) -> None:
        self.transport.close()

    def fits(self, elements: int) -> bool:
        """Whether an allreduce of `elements` still fits the job's 32-bit chunk offsets."""
        return self.chunk_base + elements < MAX_ELEMENTS

    def allreduce(self, data: np.ndarray) -> np.ndarray:
        """The sum of `data` (int32 or float32, 1-D) over the job's ranks.  ValueError for
        what the protocol cannot carry (another dtype, NaN or infinity, offsets used up);
        the transport's and engine's errors (a stalled job, a protocol error) pass on."""
        return self.run(data)

    def run(self, data: np.ndarray, collective: str = "allreduce", rank: int = 0,
            root: int = 0, shard_chunks: tuple = ()) -> np.ndarray:
        """One collective (hosts/ina/ina_collectives.py) on the job, continuing its slots: the
        engine's whole result vector (for the sharded collectives laid out on
        `shard_chunks`, each rank's shard from chunk shard_chunks[r]); `rank` is this
        worker's rank in the job (the owner number the switches route by)."""
        schedule = make_schedule(np.ascontiguousarray(data), self.k, self.world, self.window)
        config = EngineConfig(job_id=self.job, contributor=self.contributor,
                              window=self.window, timeout_s=self.timeout_s,
                              max_timeout_s=max(3.2, self.timeout_s),
                              max_retries=self.max_retries, first_versions=self.versions,
                              chunk_base=self.chunk_base, collective=collective, rank=rank,
                              root=root, shard_chunks=shard_chunks)
        engine = engine_native.make_engine(schedule, config)
        if self.timer is not None:
            engine.timer = self.timer
        self.transport.run(engine)
        self.timer = engine.timer
        self.versions = engine.next_versions()
        self.chunk_base += engine.plan.offset_span      # closing rounds included
        self.packets_sent += engine.stats.packets_sent
        self.bytes_sent += engine.stats.bytes_sent
        self.retransmissions += engine.stats.retransmissions
        self.last_engine = engine
        if engine.stats.overflow:
            raise OverflowError(f"job {self.job}: the switch saturated a sum (overflow flag)")
        return engine.result()


def flagged_vector(local: np.ndarray, k: int) -> tuple[np.ndarray, bool]:
    """`local` (float32) padded to whole blocks of k, non-finite values replaced by 0, and
    one more block whose first value is 1.0 if `local` had a non-finite value (else 0)."""
    blocks = -(-len(local) // k)
    vector = np.zeros((blocks + 1) * k, dtype=np.float32)
    finite = np.isfinite(local)
    nonfinite = not bool(finite.all())
    vector[:len(local)] = np.where(finite, local, 0) if nonfinite else local
    vector[blocks * k] = 1.0 if nonfinite else 0.0
    return vector, nonfinite


class _Hook:
    """What the three hooks share: timing, counting, averaging, the completed future."""

    name = "hook"

    def __init__(self, world: int, say=_stderr):
        self.world = world
        self.say = say
        self.stats = HookStats()
        self._said: set = set()
        self.keep_local = False          # keep each bucket's local gradient (precision checks)
        self.local_buckets: list = []

    def once(self, reason: str, line: str) -> None:
        if reason not in self._said:
            self._said.add(reason)
            self.say(line)

    def __call__(self, state, bucket):
        buffer = bucket.buffer()
        started = time.monotonic()
        if self.keep_local:
            self.local_buckets.append((list(bucket.parameters()), buffer.detach().clone()))
        local = buffer.detach().numpy().reshape(-1)
        self.stats.local_norm_sq += float(np.dot(local.astype(np.float64),
                                                 local.astype(np.float64)))
        if self.world > 1:
            summed = self.reduce(bucket.index(), buffer)
            buffer.copy_(torch.from_numpy(np.asarray(summed)).view_as(buffer))
            buffer.div_(self.world)
        self.stats.allreduces += 1
        self.stats.elements += buffer.numel()
        self.stats.seconds += time.monotonic() - started
        future = torch.futures.Future()
        future.set_result(buffer)
        return future

    def reduce(self, index: int, buffer):
        """The sum of `buffer` over the ranks, as a numpy array or tensor of its shape."""
        raise NotImplementedError

    def gloo_sum(self, buffer):
        summed = buffer.detach().clone()
        dist.all_reduce(summed, op=dist.ReduceOp.SUM)
        return summed.numpy()

    def fallback(self, reason: str, line: str, buffer):
        self.once(reason, line)
        self.stats.fallbacks[reason] = self.stats.fallbacks.get(reason, 0) + 1
        return self.gloo_sum(buffer)


class InaHook(_Hook):
    """Each bucket through the switches (see the module docstring)."""

    name = "ina"

    def __init__(self, allreducer: InaAllreducer, say=_stderr):
        super().__init__(allreducer.world, say)
        self.allreducer = allreducer

    def reduce(self, index: int, buffer):
        k = self.allreducer.k
        if buffer.dtype != torch.float32:
            return self.fallback(FALLBACK_DTYPE, f"ina: bucket {index} holds {buffer.dtype} "
                                 "gradients; the switches add int32 and float32 only: "
                                 "reduced with Gloo", buffer)
        local = buffer.detach().numpy().reshape(-1)
        vector, _ = flagged_vector(local, k)
        if not self.allreducer.fits(len(vector)):
            return self.fallback(FALLBACK_OFFSETS, f"ina: job {self.allreducer.job} has used "
                                 "up its 32-bit chunk offsets: buckets are reduced with Gloo "
                                 "from now on", buffer)
        summed = self.allreducer.allreduce(vector)
        flag_at = len(vector) - k
        if summed[flag_at] != 0:
            return self.fallback(FALLBACK_NONFINITE, f"ina: bucket {index} has NaN or "
                                 "infinite gradients on some rank; block floating point "
                                 "cannot carry them: reduced with Gloo", buffer)
        bound = self.allreducer.last_engine.schedule.error_bound()[:len(local)]
        self.stats.error_bound_sq += float(np.dot(bound, bound))
        return summed[:len(local)]


class GlooHook(_Hook):
    """Each bucket with torch.distributed's Gloo all_reduce (DDP's own allreduce, waited for)."""

    name = "gloo"

    def reduce(self, index: int, buffer):
        return self.gloo_sum(buffer)


class RingHook(_Hook):
    """Each bucket with this project's ring allreduce over TCP (hosts/allreduce.py)."""

    name = "ring"

    def __init__(self, member, world: int, say=_stderr):
        super().__init__(world, say)
        self.member = member          # a connected hosts.allreduce.HostAllreduce

    def reduce(self, index: int, buffer):
        if buffer.dtype not in (torch.float32, torch.int32):
            return self.fallback(FALLBACK_DTYPE, f"ring: bucket {index} holds {buffer.dtype} "
                                 "gradients; the ring adds int32 and float32 only: reduced "
                                 "with Gloo", buffer)
        return self.member.allreduce(buffer.detach().numpy().reshape(-1))


def comm_hook(state, bucket):
    """The function to register: `ddp.register_comm_hook(hook, comm_hook)`, where `hook` is
    an InaHook, GlooHook or RingHook (DDP passes it back as `state`)."""
    return state(None, bucket)
