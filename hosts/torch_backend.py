"""`torch.distributed.init_process_group("cpu:ina")`: a torch.distributed backend whose
collectives run through the emulated switches.

    import hosts.torch_backend                      # registers the backend name "ina"
    dist.init_process_group("cpu:ina", init_method=..., rank=r, world_size=n,
                            pg_options=hosts.torch_backend.InaOptions(job=..., ...))

The job on the switches (its reduction tree, slots and multicast groups) is installed by
whoever holds the aggregation manager (controller.AggregationManager.start_job: `experiments
train`, a test) before the ranks start, and removed after they leave; each rank is told its
part with `pg_options` (InaOptions) or, when that is None, with the INA_* environment variables
of `InaOptions.ENVIRONMENT` (so a script that calls `init_process_group("cpu:ina")` unchanged
works under a launcher).  The process group opens its UDP socket on the job's port when it is
created and closes it at `destroy_process_group` (`shutdown`); hosts/ stands alone and never
talks to the controller.

What goes through the switches, asynchronously: every call puts its collective on one worker
thread per process group and returns a Work at once (`_create_work_from_future`), which
completes when the result is in the tensor.  The thread runs the collectives one after the
other on one job (hosts/torch_hook.py's InaAllreducer: the worker engine, protocol and UDP
transport of `python -m hosts worker`, slots continued from one collective to the next), in the
order the ranks called them, as torch.distributed requires of every backend:

* allreduce, SUM and AVG: int32 exactly (a sum beyond int32 saturates on the switch and the
  Work fails, naming the overflow); float32 as block floating point (hosts/ina/quantize.py); float16
  and bfloat16 converted to float32, reduced so, and rounded back.  Error bound per element,
  against the exact sum of the inputs: the block floating point bound N 2**(E-S-1) of its
  block (hosts/ina/quantize.py) plus the final rounding of the result, 2**-24 relative for float32,
  2**-11 for float16, 2**-8 for bfloat16; AVG divides once more (one more such rounding).
  A NaN or infinity on any rank is agreed on in the same allreduce (one extra block, as the
  DDP hook does) and the tensor is then reduced by Gloo, said once on stderr.
* reduce_scatter_tensor (`reduce_scatter_single`, `_reduce_scatter_base`): SUM and AVG, same
  dtypes and bounds; rank r's shard is laid out on whole chunks and only r gets its sums
  (hosts/ina/ina_collectives.py's FLAG_TO_OWNER), each float shard followed by its own flag block.
* all_gather_into_tensor (`all_gather_single`, `_allgather_base`) and broadcast: any dtype,
  bit-exact: values are copied, never summed, so their bytes travel as int32 words.
* barrier: a one-element int32 allreduce behind every collective already queued.

Everything else (allgather into lists, gather, scatter, reduce, all-to-all, send/recv, other
reduce ops, dtypes the switches do not add) is delegated to a Gloo process group created
alongside on the same store, announced once per operation on stderr.  A second Gloo group
serves the non-finite fallback from the worker thread, so that it never interleaves with the
delegated calls of the caller's thread.  A group of one rank computes locally.  Each group
of more ranks holds its job's UDP port: a second group (`new_group`, a 2-D DeviceMesh) needs
a job of its own in its pg_options, and one naming a job in use is refused in one line.

A job whose 32-bit chunk offsets are used up (about 4.29e9 elements in all) sends every later
collective to the second Gloo group, said once.

Why a Python ProcessGroup subclass and not a C++ c10d::Backend: docs/results/training.md
("PyTorch's own interface") gives the measurement (scripts/torch_dispatch_bench.py); in short,
every collective's time is the engine's (in C, the GIL released during the transfer), and the
Python dispatch costs tens of microseconds against milliseconds per collective.  The limit of
the route: torch's functional collectives (DTensor's full_tensor(), redistribute) dispatch in
C++ to a registered c10d::Backend and fail on this group; FSDP2's own allgather and sum
into shards use torch.distributed's Python API and run here.  `InaProcessGroup.stats` counts
per collective the calls, elements, UDP payload bytes and packets sent, and the seconds the
worker thread was busy.
"""

from __future__ import annotations

import os
import queue
import socket
import sys
import threading
import time
from dataclasses import dataclass, field, fields
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
# torch.distributed does not export AllgatherOptions (the other options types it does)
from torch._C._distributed_c10d import AllgatherOptions, ProcessGroupGloo, _create_work_from_future

from contracts import collectives
from contracts.wire import AGG_UDP_PORT, DEFAULT_K, DEFAULT_WINDOW
from hosts.ina import quantize
from hosts.torch_hook import InaAllreducer, flagged_vector

BACKEND_NAME = "ina"
SUMMED_DTYPES = (torch.int32, torch.float32, torch.float16, torch.bfloat16)
# Relative rounding of the result to its dtype (unit roundoff), for the documented bound.
UNIT_ROUNDOFF = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11,
                 torch.bfloat16: 2.0 ** -8, torch.int32: 0.0}
# The collectives this backend runs in the switches, by torch's names (stats counts them);
# torch's reduce goes to Gloo: a float's non-finite flag would reach the root alone.
SWITCH_COLLECTIVES = (*(c.torch_name for c in (collectives.ALLREDUCE, collectives.REDUCE_SCATTER,
                                               collectives.ALLGATHER, collectives.BROADCAST)),
                      "barrier")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class InaOptions:
    """This rank's part in the job on the switches (pg_options of init_process_group)."""
    job: int
    switch_ip: str
    contributor: int
    window: int = DEFAULT_WINDOW
    k: int = DEFAULT_K
    switch_port: int = AGG_UDP_PORT
    timeout_ms: float = 100.0
    bind: str = "0.0.0.0"

    ENVIRONMENT = {"job": "INA_JOB", "switch_ip": "INA_SWITCH_IP",
                   "contributor": "INA_CONTRIBUTOR", "window": "INA_WINDOW", "k": "INA_K",
                   "switch_port": "INA_SWITCH_PORT", "timeout_ms": "INA_TIMEOUT_MS",
                   "bind": "INA_BIND"}

    @classmethod
    def from_environment(cls, environ=os.environ) -> "InaOptions":
        """From the INA_* variables; ValueError (one line) naming what is missing or wrong."""
        required = ("job", "switch_ip", "contributor")
        missing = [cls.ENVIRONMENT[n] for n in required if cls.ENVIRONMENT[n] not in environ]
        if missing:
            raise ValueError(f"ina backend: no pg_options and no {', '.join(missing)} in the "
                             "environment: name this rank's job (hosts/torch_backend.py)")
        values = {}
        for item in fields(cls):
            name = cls.ENVIRONMENT[item.name]
            if name in environ:
                kind = {"int": int, "float": float}.get(str(item.type), str)
                try:
                    values[item.name] = kind(environ[name])
                except ValueError:
                    raise ValueError(f"ina backend: {name}={environ[name]!r} is not "
                                     f"{'an integer' if kind is int else 'a number'}") from None
        return cls(**values)

    def environment(self) -> dict:
        """The INA_* variables that give these options to a rank."""
        return {self.ENVIRONMENT[f.name]: str(getattr(self, f.name)) for f in fields(self)}


@dataclass
class CollectiveStats:
    calls: int = 0
    elements: int = 0          # of the tensor each rank passed in
    packets_sent: int = 0      # UDP datagrams this rank sent, retransmissions included
    payload_bytes_sent: int = 0
    seconds: float = 0.0       # the worker thread busy with it
    fallbacks: int = 0         # reduced by Gloo after a non-finite value


@dataclass
class BackendStats:
    collectives: dict = field(default_factory=lambda: {c: CollectiveStats()
                                                       for c in SWITCH_COLLECTIVES})
    delegated: dict = field(default_factory=dict)     # operation -> calls handed to Gloo
    error_bound_sq: float = 0.0   # sum of squared per-element bounds of the float sums

    def busy_seconds(self) -> float:
        return sum(c.seconds for c in self.collectives.values())

    def as_dict(self) -> dict:
        return {"collectives": {name: dict(vars(c)) for name, c in self.collectives.items()},
                "delegated": dict(self.delegated)}


def _reduce_op(opts) -> str:
    """"sum", "avg" or the name of another op (delegated)."""
    op = opts.reduceOp
    for name in ("SUM", "AVG"):
        if op == getattr(dist.ReduceOp, name):
            return name.lower()
    return str(getattr(op, "op", op)).rsplit(".", 1)[-1].lower()


def _as_words(tensor: torch.Tensor) -> np.ndarray:
    """The tensor's bytes as int32 words (zero-padded to a whole word): what a copying
    collective carries, whatever the dtype."""
    raw = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
    words = np.zeros(-(-len(raw) // 4) * 4, dtype=np.uint8)
    words[:len(raw)] = raw
    return words.view(np.int32)


def _from_words(words: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """The inverse of _as_words: a tensor of `like`'s dtype and element count."""
    nbytes = like.numel() * like.element_size()
    raw = torch.from_numpy(np.ascontiguousarray(words).view(np.uint8)[:nbytes].copy())
    return raw.view(like.dtype)


def _gloo_group(store, rank: int, size: int, timeout: timedelta,
                options: InaOptions | None) -> ProcessGroupGloo:
    """A Gloo group on the store.  Its device is the address this host reaches the switch
    from, unless GLOO_SOCKET_IFNAME names one: Gloo's own default, the address the host name
    resolves to, is 127.0.0.1 in a Mininet host."""
    if os.environ.get("GLOO_SOCKET_IFNAME") or options is None or size == 1:
        return ProcessGroupGloo(store, rank, size, timeout)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((options.switch_ip, options.switch_port))   # no packet: a route lookup
        address = probe.getsockname()[0]
    finally:
        probe.close()
    gloo_options = ProcessGroupGloo._Options()
    gloo_options._devices = [ProcessGroupGloo.create_device(hostname=address)]
    gloo_options._timeout = timeout
    return ProcessGroupGloo(store, rank, size, gloo_options)


_JOBS_IN_USE: set = set()      # jobs of this process's live groups: one socket, one group each


class OffsetsUsedUp(Exception):
    """The job's chunk offsets cannot hold another collective (hosts/torch_hook.py)."""


def _sum_opts(kind):
    opts = kind()
    opts.reduceOp = dist.ReduceOp.SUM
    return opts


# Why an operation goes to Gloo, as the group says it once per operation.
_LISTS = "lists of tensors"
_NOT_OURS = "not an operation of this backend"


def _to_gloo(operation: str, why: str, options_type):
    """A process-group method `operation(outputs, inputs, opts=None)` that Gloo runs."""
    def delegated(self, outputs, inputs, opts=None):
        return self._delegate(operation, why, outputs, inputs, opts or options_type())
    delegated.__name__ = operation
    delegated.__qualname__ = f"InaProcessGroup.{operation}"
    return delegated


class InaProcessGroup(dist.ProcessGroup):
    """The `ina` process group (module docstring)."""

    def __init__(self, store, rank: int, size: int, timeout: timedelta,
                 options: InaOptions | None, say=_stderr):
        super().__init__(rank, size)
        self._rank, self._size, self.say = rank, size, say
        self._group_name = ""
        self.options = options
        self.stats = BackendStats()
        self._announced: set = set()
        if size > 1 and options.job in _JOBS_IN_USE:
            raise ValueError(f"ina backend: job {options.job} already serves another process "
                             "group of this process: give this group its own job "
                             "(pg_options=InaOptions(job=...))")
        self.gloo = _gloo_group(dist.PrefixStore("ina-delegate/", store), rank, size, timeout,
                                options)
        self.fallback_gloo = _gloo_group(dist.PrefixStore("ina-fallback/", store), rank, size,
                                         timeout, options)
        self.allreducer = None
        if size > 1:
            self.allreducer = InaAllreducer(options.job, options.contributor, size,
                                            options.switch_ip, options.window, options.k,
                                            timeout_s=options.timeout_ms / 1000,
                                            switch_port=options.switch_port, bind=options.bind)
            _JOBS_IN_USE.add(options.job)
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name=f"ina-job-{options.job}",
                                        daemon=True)
        self._thread.start()

    # ---- what torch asks of every process group -----------------------------------------
    def getBackendName(self) -> str:
        return BACKEND_NAME

    @property
    def name(self) -> str:
        return BACKEND_NAME

    # torch keeps a group's name in its C++ backends, which a Python group has none of: the
    # name torch gives the group (init_process_group, DeviceMesh) is kept here instead.
    def _set_group_name(self, name: str) -> None:
        self._group_name = name

    @property
    def group_name(self) -> str:
        return self._group_name

    def shutdown(self) -> None:
        """destroy_process_group: drain the queue, stop the thread, close the socket."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self.allreducer is not None:
            self.allreducer.close()
            self.allreducer = None
            _JOBS_IN_USE.discard(self.options.job)
        self.gloo.shutdown()
        self.fallback_gloo.shutdown()
        # Gloo's C++ groups go now, while the interpreter runs: left to its exit, one could
        # be destroyed with a thread still running, and the process abort ("terminate called
        # without an active exception").
        self.gloo = self.fallback_gloo = None

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            name, elements, run, gloo_run, future = item
            started = time.monotonic()
            sent = self._sent()
            try:
                try:
                    value = run()
                except OffsetsUsedUp:
                    value = self._offsets_fallback(name, gloo_run)
            except Exception as exc:       # the Work fails with it, the group goes on
                future.set_exception(RuntimeError(f"ina {name}: {exc}"))
                continue
            stats = self.stats.collectives[name]
            packets, payload = self._sent()
            stats.calls += 1
            stats.elements += elements
            stats.packets_sent += packets - sent[0]
            stats.payload_bytes_sent += payload - sent[1]
            stats.seconds += time.monotonic() - started
            future.set_result(value)

    def _sent(self) -> tuple:
        a = self.allreducer
        return (a.packets_sent, a.bytes_sent) if a is not None else (0, 0)

    def _submit(self, name: str, elements: int, run, gloo_run) -> "dist.Work":
        """Queue `run` for the worker thread; `gloo_run` does the same with the fallback
        Gloo group, for a job whose chunk offsets are used up."""
        future = torch.futures.Future()
        self._queue.put((name, elements, run, gloo_run, future))
        return _create_work_from_future(future)

    def _switch_run(self, vector: np.ndarray, *args, **kwargs) -> np.ndarray:
        """InaAllreducer.run, or OffsetsUsedUp when the job's 32-bit chunk offsets cannot
        hold the collective (every rank's offsets are the same, so all agree)."""
        a = self.allreducer
        if not a.fits(len(vector) + (a.window + 1) * a.k):
            raise OffsetsUsedUp()
        return a.run(vector, *args, **kwargs)

    def _offsets_fallback(self, name: str, gloo_run):
        if "offsets" not in self._announced:
            self._announced.add("offsets")
            self.say(f"ina: job {self.options.job} has used up its 32-bit chunk offsets: "
                     "collectives go to Gloo from now on")
        self.stats.collectives[name].fallbacks += 1
        return gloo_run()

    def _delegate(self, operation: str, why: str, *args):
        if operation not in self._announced:
            self._announced.add(operation)
            self.say(f"ina: {operation} goes to Gloo ({why})")
        self.stats.delegated[operation] = self.stats.delegated.get(operation, 0) + 1
        return getattr(self.gloo, operation)(*args)

    def _switch_cannot(self, tensor: torch.Tensor, op: str) -> str | None:
        """Why a sum of `tensor` with `op` cannot go through the switches (None: it can)."""
        if op not in ("sum", "avg"):
            return f"the switches add; {op.upper()} is not a sum"
        if tensor.dtype not in SUMMED_DTYPES:
            return f"the switches add int32 and float32 (float16, bfloat16 converted); " \
                   f"not {tensor.dtype}"
        if op == "avg" and tensor.dtype == torch.int32:
            return "AVG of int32 is not an integer"
        return None

    # ---- allreduce -------------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        opts = opts or dist.AllreduceOptions()
        op = _reduce_op(opts)
        why = next(filter(None, (self._switch_cannot(t, op) for t in tensors)), None)
        if why:
            if op == "avg" and "int32" in why:
                raise ValueError(f"ina: {why} (Gloo has no AVG either)")
            return self._delegate("allreduce", why, tensors, opts)
        return self._submit("allreduce", sum(t.numel() for t in tensors),
                            lambda: [self._allreduce_one(t, op) for t in tensors],
                            lambda: [self._gloo_allreduce(t, op) for t in tensors])

    def _gloo_allreduce(self, tensor, op: str) -> torch.Tensor:
        self.fallback_gloo.allreduce([tensor], _sum_opts(dist.AllreduceOptions)).wait()
        if op == "avg":
            tensor.div_(self._size)
        return tensor

    def _allreduce_one(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        if self.allreducer is None:
            return tensor
        flat = tensor.detach().reshape(-1)
        if tensor.dtype == torch.int32:
            summed = torch.from_numpy(self._switch_run(flat.contiguous().numpy()))
        else:
            k = self.allreducer.k
            local = flat.float().numpy()
            vector, _ = flagged_vector(local, k)
            result = self._switch_run(vector)
            if result[len(vector) - k] != 0:
                return self._nonfinite("allreduce", tensor, op,
                                       lambda t: self.fallback_gloo.allreduce(
                                           [t], dist.AllreduceOptions()))
            self._add_bound(self.allreducer.last_engine.schedule.error_bound()[:len(local)])
            summed = torch.from_numpy(result[:len(local)].copy())
        self._finish(tensor, summed, op)
        return tensor

    def _finish(self, tensor: torch.Tensor, summed: torch.Tensor, op: str) -> None:
        if op == "avg":
            summed = summed / self._size
        tensor.copy_(summed.view(tensor.shape).to(tensor.dtype))

    def _nonfinite(self, name: str, tensor: torch.Tensor, op: str, gloo_sum) -> torch.Tensor:
        """A NaN or infinity on some rank (agreed in the collective): Gloo sums instead."""
        if f"nonfinite {name}" not in self._announced:
            self._announced.add(f"nonfinite {name}")
            self.say(f"ina: {name} of a tensor with NaN or infinity on some rank goes to "
                     "Gloo (block floating point cannot carry it)")
        self.stats.collectives[name].fallbacks += 1
        summed = tensor.detach().clone()
        gloo_sum(summed).wait()
        if op == "avg":
            summed = summed / self._size
        if tensor.shape == summed.shape:
            tensor.copy_(summed)
        return summed

    def _add_bound(self, bound: np.ndarray) -> None:
        self.stats.error_bound_sq += float(np.dot(bound, bound))

    def allreduce_coalesced(self, tensors, opts=None):
        return self._delegate("allreduce_coalesced", "not an operation of this backend",
                              tensors, opts or dist.AllreduceCoalescedOptions())

    # ---- reduce-scatter --------------------------------------------------------------------
    def reduce_scatter_single(self, output, input, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        op = _reduce_op(opts)
        if input.numel() != output.numel() * self._size:
            raise ValueError(f"ina: reduce_scatter_tensor needs an input of world size x the "
                             f"output ({self._size} x {output.numel()}), got {input.numel()}")
        why = self._switch_cannot(input, op)
        if why:
            return self._delegate("_reduce_scatter_base", why, output, input, opts)
        return self._submit("reduce_scatter", input.numel(),
                            lambda: [self._reduce_scatter(output, input, op)],
                            lambda: [self._gloo_reduce_scatter(output, input, op)])

    def _gloo_reduce_scatter(self, output, input, op: str) -> torch.Tensor:
        self.fallback_gloo._reduce_scatter_base(output, input.contiguous(),
                                                _sum_opts(dist.ReduceScatterOptions)).wait()
        if op == "avg":
            output.div_(self._size)
        return output

    _reduce_scatter_base = reduce_scatter_single

    def _reduce_scatter(self, output, input, op: str) -> torch.Tensor:
        if self.allreducer is None:
            self._finish(output, input.detach().reshape(-1).clone(), op)
            return output
        k, world, n = self.allreducer.k, self._size, output.numel()
        floating = input.dtype != torch.int32
        # each shard on whole chunks, a float shard followed by its own flag block
        chunks = -(-n // k) + (1 if floating else 0)
        shards = input.detach().reshape(world, n)
        vector = np.zeros((world, chunks * k),
                          dtype=np.float32 if floating else np.int32)
        vector[:, :n] = shards.float().numpy() if floating else shards.numpy()
        if floating:
            nonfinite = not bool(np.isfinite(vector).all())
            if nonfinite:
                vector[~np.isfinite(vector)] = 0
            vector[:, (chunks - 1) * k] = 1.0 if nonfinite else 0.0
        bounds = tuple(range(0, (world + 1) * chunks, chunks))
        result = self._switch_run(vector.reshape(-1), collectives.REDUCE_SCATTER, self._rank,
                                     shard_chunks=bounds)
        start = self._rank * chunks * k
        if floating:
            if result[start + (chunks - 1) * k] != 0:
                out = self._nonfinite("reduce_scatter", output, op,
                                      lambda t: self.fallback_gloo._reduce_scatter_base(
                                          t, input.detach().reshape(-1).clone(),
                                          dist.ReduceScatterOptions()))
                return out
            bound = self.allreducer.last_engine.schedule.error_bound()
            self._add_bound(bound[start:start + n])
        self._finish(output, torch.from_numpy(result[start:start + n].copy()), op)
        return output

    # ---- allgather and broadcast: copies ---------------------------------------------------
    def all_gather_single(self, output, input, opts=None):
        if output.numel() != input.numel() * self._size or output.dtype != input.dtype:
            raise ValueError(f"ina: all_gather_into_tensor needs an output of world size x "
                             f"the input ({self._size} x {input.numel()} {input.dtype}), got "
                             f"{output.numel()} {output.dtype}")
        return self._submit("allgather", input.numel(),
                            lambda: [self._allgather(output, input)],
                            lambda: self._gloo_wait(self.fallback_gloo._allgather_base(
                                output, input.contiguous(), AllgatherOptions()), [output]))

    _allgather_base = all_gather_single

    def _allgather(self, output, input) -> torch.Tensor:
        if self.allreducer is None:
            output.copy_(input.reshape(output.shape))
            return output
        k, world = self.allreducer.k, self._size
        words = _as_words(input)
        chunks = -(-len(words) // k)
        vector = np.zeros((world, chunks * k), dtype=np.int32)
        vector[self._rank, :len(words)] = words
        bounds = tuple(range(0, (world + 1) * chunks, chunks))
        result = self._switch_run(vector.reshape(-1), "allgather", self._rank,
                                     shard_chunks=bounds).reshape(world, chunks * k)
        gathered = [_from_words(result[r, :len(words)], input) for r in range(world)]
        output.copy_(torch.cat(gathered).view(output.shape))
        return output

    def broadcast(self, tensors, opts=None):
        opts = opts or dist.BroadcastOptions()
        root = opts.rootRank
        return self._submit("broadcast", sum(t.numel() for t in tensors),
                            lambda: [self._broadcast(t, root) for t in tensors],
                            lambda: self._gloo_wait(self.fallback_gloo.broadcast(tensors, opts),
                                                    tensors))

    def _broadcast(self, tensor, root: int) -> torch.Tensor:
        if self.allreducer is None:
            return tensor
        words = _as_words(tensor)
        result = self._switch_run(words if self._rank == root else np.zeros_like(words),
                                     "broadcast", self._rank, root=root)
        if self._rank != root:
            tensor.copy_(_from_words(result, tensor).view(tensor.shape))
        return tensor

    def barrier(self, opts=None):
        return self._submit("barrier", 1, self._barrier,
                            lambda: self._gloo_wait(self.fallback_gloo.barrier(), []))

    @staticmethod
    def _gloo_wait(work, value):
        work.wait()
        return value

    def _barrier(self) -> list:
        if self.allreducer is not None:
            self._switch_run(np.ones(1, dtype=np.int32))
        return []

    # ---- delegated to Gloo -----------------------------------------------------------------
    allgather = _to_gloo("allgather", _LISTS, AllgatherOptions)
    allgather_coalesced = _to_gloo("allgather_coalesced", _LISTS, AllgatherOptions)
    gather = _to_gloo("gather", _NOT_OURS, dist.GatherOptions)
    scatter = _to_gloo("scatter", _NOT_OURS, dist.ScatterOptions)
    reduce_scatter = _to_gloo("reduce_scatter", _LISTS, dist.ReduceScatterOptions)
    alltoall = _to_gloo("alltoall", _NOT_OURS, dist.AllToAllOptions)

    def reduce(self, tensors, opts=None):
        return self._delegate("reduce", _NOT_OURS, tensors, opts or dist.ReduceOptions())

    def alltoall_base(self, output, input, output_splits, input_splits, opts=None):
        return self._delegate("alltoall_base", _NOT_OURS, output, input, output_splits,
                              input_splits, opts or dist.AllToAllOptions())

    def send(self, tensors, dst: int, tag: int = 0):
        return self._delegate("send", "point to point", tensors, dst, tag)

    def recv(self, tensors, src: int, tag: int = 0):
        return self._delegate("recv", "point to point", tensors, src, tag)

    def recv_anysource(self, tensors, tag: int = 0):
        return self._delegate("recv_anysource", "point to point", tensors, tag)


def create(common, options: InaOptions | None):
    """The backend's creator (extended API): torch passes the store, rank, size, timeout."""
    options = options if options is not None else InaOptions.from_environment()
    if not isinstance(options, InaOptions):
        raise TypeError(f"ina backend: pg_options must be hosts.torch_backend.InaOptions, got "
                        f"{type(options).__name__}")
    return InaProcessGroup(common.store, common.group_rank, common.group_size, common.timeout,
                           options)


def register() -> None:
    """Make "ina" a torch.distributed backend name for the CPU (once per process)."""
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, create, extended_api=True,
                                      devices=["cpu"])


def float_error_bound(dtype: torch.dtype, block_bound: np.ndarray, result: np.ndarray,
                      average: bool) -> np.ndarray:
    """Per element, the bound the module docstring states for a float sum or average: the
    block floating point bound (divided by N for AVG) plus the rounding of the result to
    `dtype` (twice for AVG: the float32 sum, then the quotient)."""
    u = UNIT_ROUNDOFF[dtype]
    magnitude = np.abs(np.asarray(result, dtype=np.float64))
    rounding = quantize.FLOAT32_UNIT_ROUNDOFF * magnitude * (1 + u) + u * magnitude
    return np.asarray(block_bound, dtype=np.float64) + rounding * (2 if average else 1)


register()
