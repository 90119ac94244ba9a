"""The worker's aggregation protocol engine, with no sockets and no clock of its own.

`AggregationEngine` runs the worker side of docs/design.md's protocol: a window of W
slots, each slot carrying one round at a time; round q uses slot q % W and version
(q // W) % 2; a slot's next round starts only after its current round's result arrived;
a round's packet is retransmitted unchanged when its timer expires (timeout from the
measured round-trip time, doubled per retry); results are matched by (slot, version,
chunk_offset) and stale or duplicate ones are ignored.  A slot that stays unanswered after
`max_retries` retransmissions raises AggregationStalled naming the job, slot and chunk, so a
worker whose peer died stops after a bounded time.  From a round's REDO_AFTER-th
retransmission on, the slot's previous round is sent again with it: after a switch restart
(docs/protocol.md, "Switch restarts") the others may still wait for that round's result, which
this worker already has, and the restarted switch can only complete it with every
contribution.  After its last real round every slot runs one closing round (zeros, one chunk
above): its result proves that every worker had the last real one, so a worker that leaves
never leaves another without the round it still needs; a closing round that stays
unanswered is given up without error (`closings_unanswered`), since every sum is in by then.
Callers feed it bytes and times and send what it returns:

    packets = engine.start(now)          # first packet of every slot
    packets = engine.on_packet(data, now)  # a UDP payload received
    packets = engine.on_timer(now)       # retransmissions due at `now`
    engine.next_deadline(), engine.done, engine.result(), engine.stats

What a round carries is decided by a schedule:
* `Int32Schedule`: round q is chunk q (values as they are, exponent 0);
* `BlockFloatSchedule`: float32 with per-block exponents piggy-backed (hosts/ina/quantize.py).

Collectives other than allreduce (EngineConfig.collective; hosts/ina/ina_collectives.py) change
only two things per round, from `RoundPlan.flags`: the header's flags and owner (a
FLAG_NO_VALUES round sends its header alone), and whether the result's values are kept.  A
result may come header only (FLAG_NO_VALUES); a round whose values are kept ignores such a
result, any other round takes it as complete.  Slots, timers, retransmissions, REDO and
closing rounds are those of allreduce.
"""

from __future__ import annotations

import heapq
import itertools
import math
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from contracts import collectives
from contracts.requests import window_refusal
from contracts.wire import (DEFAULT_WINDOW, FLAG_NO_VALUES, HEADER_FORMAT, HEADER_LEN,
                            MAX_CONTRIBUTORS, MSG_CONTRIBUTION, MSG_RESULT, NO_OWNER)
from hosts.ina import ina_collectives, quantize
from hosts.ina.protocol import ProtocolError

MAX_ELEMENTS = 1 << 32
# The header as protocol.AggHeader packs it (same layout, no per-field range checks: the
# engine checks its configuration once) and the values in network byte order.
_HEADER = struct.Struct(HEADER_FORMAT)
WIRE_DTYPE = np.dtype(">i4")
# A round's retransmissions from this one on also re-send the slot's previous round: one lost
# packet is answered by the first retransmission, a restarted switch's missing rounds are not.
REDO_AFTER = 2


class AggregationStalled(RuntimeError):
    """A slot got no result after the allowed retransmissions."""


class Contribution(NamedTuple):
    """What one round sends: the exponent field, the chunk offset and K int32 values, the
    values in network byte order (WIRE_DTYPE, C-contiguous), ready to follow the header."""

    exponent: int
    chunk_offset: int
    values: np.ndarray


def _padded_blocks(data: np.ndarray, k: int) -> np.ndarray:
    """`data` zero-padded to whole blocks and shaped (blocks, k)."""
    blocks = -(-len(data) // k)
    padded = np.zeros(blocks * k, dtype=data.dtype)
    padded[:len(data)] = data
    return padded.reshape(blocks, k)


class _WireSums:
    """Result values per block, kept as they arrive (network byte order): accepting a
    result is one copy of its payload bytes, the conversion happens once at the end."""

    def __init__(self, blocks: int, k: int):
        self.values = np.zeros((blocks, k), dtype=WIRE_DTYPE)
        self._bytes = memoryview(self.values).cast("B")
        self._row = 4 * k

    def store(self, block: int, payload: memoryview) -> None:
        start = block * self._row
        self._bytes[start:start + self._row] = payload

    def host_order(self) -> np.ndarray:
        return self.values.astype(np.int32)


class Int32Schedule:
    """int32 vectors: round q carries chunk q's values; the switch sums them as they are."""

    description = "int32, exact integer sums"

    def __init__(self, data: np.ndarray, k: int):
        self.elements = len(data)
        self.k = k
        # Converted to network byte order once, so a round's values are a view of a row.
        self._wire = _padded_blocks(np.asarray(data, dtype=np.int32), k).astype(WIRE_DTYPE)
        self._sums = _WireSums(len(self._wire), k)
        self.round_count = len(self._wire)

    def has_round(self, q: int) -> bool:
        return 0 <= q < self.round_count

    def chunk_offset(self, q: int) -> int:
        return q * self.k

    def contribution(self, q: int) -> Contribution:
        return Contribution(0, q * self.k, self._wire[q])

    def round_blocks(self, count: int) -> np.ndarray:
        """Per round q < count: the chunk whose values it carries, -1 for none."""
        q = np.arange(count, dtype=np.int64)
        return np.where(q < self.round_count, q, -1)

    def accept_result(self, q: int, exponent: int, payload: memoryview | None) -> None:
        """`payload`: the result's K values as received (4 K bytes, network byte order), or
        None when this rank keeps none of them (hosts/ina/ina_collectives.py)."""
        if payload is not None:
            self._sums.store(q, payload)

    def result(self) -> np.ndarray:
        return self._sums.host_order().reshape(-1)[:self.elements]


class BlockFloatSchedule:
    """float32 vectors as block floating point with the exponent piggy-backed (SwitchML).

    Round q carries the local exponent of block q (if q < B) and the values of block
    q - W scaled with its agreed exponent (if q >= W).  Rounds q < W with no values are
    exponent-only rounds.  Per slot, the rounds that exist are a prefix of s, s+W, ...,
    so versions still alternate.
    """

    description = quantize.SCHEME

    def __init__(self, data: np.ndarray, k: int, world: int, window: int):
        self.elements = len(data)
        self.k = k
        self.world = world
        self.window = window
        self._blocks = _padded_blocks(np.asarray(data, dtype=np.float32), k)
        self._local_exponents = quantize.block_exponents(self._blocks)
        self._agreed = np.zeros(len(self._blocks), dtype=np.uint8)
        self._sums = _WireSums(len(self._blocks), k)
        self._no_values = np.zeros(k, dtype=WIRE_DTYPE)
        self._shift = quantize.headroom_shift(world)
        self.block_count = len(self._blocks)
        self.round_count = self.block_count + window

    def has_round(self, q: int) -> bool:
        return 0 <= q < self.block_count or self.window <= q < self.block_count + self.window

    def chunk_offset(self, q: int) -> int:
        """Round q's chunk offset: its own for exponent-only rounds, else its block's."""
        return (q if q < self.window else q - self.window) * self.k

    def contribution(self, q: int) -> Contribution:
        exponent = int(self._local_exponents[q]) if q < self.block_count else 0
        block = q - self.window
        if block < 0:
            return Contribution(exponent, q * self.k, self._no_values)
        return Contribution(exponent, block * self.k, self.quantized(block))

    def round_blocks(self, count: int) -> np.ndarray:
        """Per round q < count: the block whose values it carries, -1 for none."""
        q = np.arange(count, dtype=np.int64)
        return np.where((q >= self.window) & (q < self.block_count + self.window),
                        q - self.window, -1)

    def quantized(self, block: int) -> np.ndarray:
        """quantize.quantize() of one block with its agreed exponent, in network byte order.

        The same numbers with fewer NumPy calls: x * 2**(S + 127 - E) in float64 is exact
        like ldexp (float32 inputs and exponent fields 0..255 keep it far from float64's
        range limits), then rounded half to even like np.rint.
        """
        scale = math.ldexp(1.0, self._shift + quantize.EXPONENT_BIAS - int(self._agreed[block]))
        scaled = np.multiply(self._blocks[block], scale, dtype=np.float64)
        np.rint(scaled, out=scaled)
        if np.abs(scaled).max() > 2.0 ** self._shift:
            raise ValueError("a value exceeds its block's agreed exponent "
                             "(the agreed exponent must be the max over workers)")
        return scaled.astype(WIRE_DTYPE)

    def accept_result(self, q: int, exponent: int, payload: memoryview | None) -> None:
        """`payload`: the result's K values as received (4 K bytes, network byte order), or
        None when this rank keeps none of them; the exponent is always taken."""
        if q < self.block_count:
            if exponent < self._local_exponents[q]:
                raise ProtocolError(
                    f"switch returned exponent {exponent} for chunk offset {q * self.k}, "
                    f"below this worker's {self._local_exponents[q]} (must be the max)")
            self._agreed[q] = exponent
        if q >= self.window and payload is not None:
            self._sums.store(q - self.window, payload)

    def result(self) -> np.ndarray:
        return quantize.dequantize(self._sums.host_order(), self._agreed,
                                   self.world).reshape(-1)[:self.elements]

    def error_bound(self) -> np.ndarray:
        """Per element: a bound on |result() - float64 sum of the inputs|.

        The quantization bound B of the element's block, plus the final rounding to float32:
        |fl(y) - y| <= u |fl(y)| / (1 - u) with u = 2**-24, taken from the result itself.
        """
        quantization = np.repeat(quantize.block_error_bound(self._agreed, self.world),
                                 self.k)[:self.elements]
        unit = quantize.FLOAT32_UNIT_ROUNDOFF
        return quantization + unit / (1 - unit) * np.abs(self.result().astype(np.float64))


class RetransmissionTimer:
    """RFC 6298 round-trip estimate: timeout = SRTT + 4 RTTVAR within [minimum, maximum].

    Only rounds answered without retransmission are sampled (Karn's rule).  A round's
    round trip includes waiting for the slowest worker, so a fixed timeout would resend
    needlessly whenever workers or the switch are slower than the configured minimum.
    """

    def __init__(self, minimum: float, maximum: float):
        self.minimum, self.maximum = minimum, maximum
        self.srtt: float | None = None
        self.rttvar = 0.0
        self._timeout = minimum          # recomputed per sample, read once per packet

    def sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self._timeout = min(max(self.srtt + 4 * self.rttvar, self.minimum), self.maximum)

    @property
    def timeout(self) -> float:
        return self._timeout


@dataclass
class EngineStats:
    packets_sent: int = 0
    bytes_sent: int = 0
    retransmissions: int = 0
    redone_rounds: int = 0            # previous rounds sent again (REDO_AFTER)
    results_accepted: int = 0
    packets_ignored: int = 0
    overflow: bool = False
    closings_unanswered: int = 0      # closing rounds given up (every result was in already)


class _SlotState:
    """The round a slot is waiting for, its packet and its retransmission timer."""

    __slots__ = ("round", "slot", "version", "chunk_offset", "payload", "previous", "deadline",
                 "timeout", "retries", "first_sent")

    def __init__(self, q: int, slot: int, version: int, chunk_offset: int, payload: bytes,
                 now: float, timeout: float, previous: bytes | None = None):
        self.round, self.slot, self.version, self.chunk_offset = q, slot, version, chunk_offset
        self.payload = payload
        self.previous = previous         # the packet of the slot's previous round, if any
        self.deadline, self.timeout = now + timeout, timeout
        self.retries = 0
        self.first_sent = now


@dataclass
class EngineConfig:
    job_id: int
    contributor: int
    window: int = DEFAULT_WINDOW
    timeout_s: float = 0.1          # first and smallest retransmission timeout
    max_timeout_s: float = 3.2
    max_retries: int = 12
    # A job that runs many allreduces one after another (hosts/torch_hook.py) continues every
    # slot's version alternation and keeps each slot version's chunk offsets increasing
    # (docs/protocol.md, "Slots and versions"): `first_versions[s]` is the version of slot s's
    # first round (missing entries: 0) and `chunk_base` is added to every chunk offset.
    first_versions: tuple = ()
    chunk_base: int = 0
    # One closing round per slot after its last real round (module docstring): False only to
    # show what it prevents.
    closing_rounds: bool = True
    # From a round's REDO_AFTER-th retransmission on, the slot's previous round is re-sent
    # too (module docstring): what brings our jobs through a switch restart.  False for a
    # switch that would count it again (SwitchML's: the worker's bit of that copy is clear).
    redo_previous: bool = True
    # The collective (hosts/ina/ina_collectives.py): this worker's global rank (owner numbers),
    # the root of the rooted collectives, and for the sharded ones the first chunk of every
    # rank's shard plus the end (ShardLayout.chunk_bounds of the padded vector the engine gets).
    collective: str = "allreduce"
    rank: int = 0
    root: int = 0
    shard_chunks: tuple = ()

    def validate(self) -> None:
        if not 0 <= self.job_id < (1 << 16):
            raise ValueError(f"job id must be in 0..65535, got {self.job_id}")
        if not 0 <= self.contributor < MAX_CONTRIBUTORS:
            raise ValueError(f"contributor must be in 0..{MAX_CONTRIBUTORS - 1}, got "
                             f"{self.contributor}")
        if window_refusal(self.window):
            raise ValueError(window_refusal(self.window))
        if self.timeout_s <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout_s}s")
        if self.max_retries < 0:
            raise ValueError(f"max retries must be >= 0, got {self.max_retries}")
        if len(self.first_versions) > self.window or any(v not in (0, 1)
                                                         for v in self.first_versions):
            raise ValueError("first_versions must give version 0 or 1 for at most `window` slots")
        if self.chunk_base < 0:
            raise ValueError(f"chunk base must be >= 0, got {self.chunk_base}")
        collectives.get(self.collective)          # an unknown name fails here
        if not 0 <= self.rank < NO_OWNER or not 0 <= self.root < NO_OWNER:
            raise ValueError(f"rank and root must be in 0..{NO_OWNER - 1}")


class RoundPlan:
    """What every engine derives from a schedule and a config, checked once: the rounds that
    exist (the schedule's and the closing ones), each round's slot version and chunk offset,
    and the line that names a stalled slot.  Shared by AggregationEngine and its C twin
    (hosts/ina/engine_native.py)."""

    def __init__(self, schedule, config: EngineConfig):
        config.validate()
        if not 1 <= schedule.k < (1 << 16):
            raise ValueError(f"k must be in 1..65535, got {schedule.k}")
        self.schedule, self.config, self.window = schedule, config, config.window
        self.round_count = schedule.round_count + self.window
        rounds = [q for q in range(self.round_count) if self.has_round(q)]
        self.rounds_total = len(rounds)
        # Chunk offsets this allreduce uses, from chunk_base: the next one on the job starts
        # above them (hosts/torch_hook.py).
        self.offset_span = max((self.chunk_offset(q) for q in rounds), default=-schedule.k) \
            + schedule.k
        if config.chunk_base + self.offset_span > MAX_ELEMENTS:
            raise ValueError(f"at most {MAX_ELEMENTS - 1} elements (chunk base and closing "
                             "rounds included) fit the 32-bit chunk offset")
        self.version_base = (tuple(config.first_versions)
                             + (0,) * (self.window - len(config.first_versions)))
        collective = collectives.get(config.collective)
        if not collective.sums and isinstance(schedule, BlockFloatSchedule):
            raise ValueError(f"{collective.name} copies values: float32 goes as int32 bit "
                             "patterns (hosts/ina_collectives.engine_input), not block floats")
        # Per round (flags, owner, keep) arrays, None for allreduce (hosts/ina/ina_collectives.py)
        self.flags = None
        if not collective.plain:
            closing = np.array([self.closing(q) for q in range(self.round_count)], dtype=bool)
            self.flags = ina_collectives.round_flags(
                collective, config.rank, config.root, config.shard_chunks,
                schedule.round_blocks(self.round_count), closing)

    def closing(self, q: int) -> bool:
        """Round q is its slot's closing round: the round after the slot's last real one."""
        return (self.config.closing_rounds and q >= self.window
                and self.schedule.has_round(q - self.window) and not self.schedule.has_round(q))

    def has_round(self, q: int) -> bool:
        return self.schedule.has_round(q) or self.closing(q)

    def chunk_offset(self, q: int) -> int:
        """Round q's chunk offset, chunk_base not included.  A closing round's is one chunk
        above its slot's last real round, so it stays the largest of its slot version."""
        if self.closing(q):
            return self.schedule.chunk_offset(q - self.window) + self.schedule.k
        return self.schedule.chunk_offset(q)

    def version(self, q: int) -> int:
        return (q // self.window + self.version_base[q % self.window]) % 2

    def next_versions(self) -> tuple:
        versions = list(self.version_base)
        for q in range(self.round_count):
            if self.has_round(q):
                versions[q % self.window] = 1 - self.version(q)
        return tuple(versions)

    def stall_message(self, slot: int, chunk_offset: int, version: int, retries: int,
                      waited: float) -> str:
        return (f"job {self.config.job_id}: no result from the switch for slot {slot} "
                f"(chunk {chunk_offset // self.schedule.k}, chunk offset {chunk_offset}, "
                f"version {version}) after {retries} retransmissions over {waited:.1f}s; a "
                "worker of the job may have died or never started (the controller's "
                "missing_ranks() names it)")


@dataclass
class AggregationEngine:
    """Worker-side protocol state machine (see the module docstring).

    Per packet it does O(log W) work: headers are packed with one struct call, values are
    views of arrays already in network byte order, results are copied as bytes into the
    sums, and the retransmission deadlines live in a heap (entries of slots that moved on
    are skipped when they reach the top).
    """

    schedule: Int32Schedule | BlockFloatSchedule
    config: EngineConfig
    stats: EngineStats = field(default_factory=EngineStats)

    def __post_init__(self) -> None:
        self.plan = RoundPlan(self.schedule, self.config)
        self._slots: dict[int, _SlotState] = {}
        self._deadlines: list = []          # heap of (deadline, sequence, slot state)
        self._sequence = itertools.count()
        self.timer = RetransmissionTimer(self.config.timeout_s, self.config.max_timeout_s)
        self._rounds_done = 0
        self._rounds_total = self.plan.rounds_total
        # Read once per packet: kept as plain attributes.
        self._job_id, self._k, self._window = self.config.job_id, self.schedule.k, self.config.window
        self._packet_len = HEADER_LEN + 4 * self._k
        self._first_byte = tuple((MSG_CONTRIBUTION << 4) | (version << 3) for version in (0, 1))
        self._version = self.plan.version
        self._has_round, self._closing = self.plan.has_round, self.plan.closing
        self._no_values = np.zeros(self._k, dtype=WIRE_DTYPE)
        if self.plan.flags is None:                  # allreduce: values both ways, all kept
            self._flags, self._owner, self._keep = _Constant(0), _Constant(0), _Constant(1)
        else:
            self._flags, self._owner, self._keep = (a.tolist() for a in self.plan.flags)

    # ---- public interface -------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._rounds_done == self._rounds_total

    @property
    def progress(self) -> tuple[int, int]:
        return self._rounds_done, self._rounds_total

    def result(self) -> np.ndarray:
        if not self.done:
            raise RuntimeError("aggregation is not complete")
        return self.schedule.result()

    def next_versions(self) -> tuple:
        """Per slot, the version its next round must use after this allreduce: pass it as the
        next allreduce's `first_versions` (slots this one did not use keep theirs)."""
        return self.plan.next_versions()

    def start(self, now: float) -> list[bytes]:
        return [self._begin_round(slot, now) for slot in range(self.config.window)
                if self._has_round(slot)]

    def on_packet(self, data, now: float) -> list[bytes]:
        """`data`: a UDP payload (bytes or any buffer; not kept after the call)."""
        if len(data) < HEADER_LEN:
            self.stats.packets_ignored += 1         # not an aggregation packet
            return []
        first, exponent, job_id, slot, _, chunk_offset, count, _ = _HEADER.unpack_from(data)
        state = self._slots.get(slot)
        # A result carries K values, or none with FLAG_NO_VALUES (a non-owner's, a closing
        # round's); a round whose values this rank keeps needs them.
        with_values = len(data) == self._packet_len
        if (state is None or not (with_values or (len(data) == HEADER_LEN
                                                  and first & FLAG_NO_VALUES))
                or first >> 4 != MSG_RESULT
                or job_id != self._job_id or (first >> 3) & 1 != state.version
                or chunk_offset != state.chunk_offset or count != self._k
                or (not with_values and self._keep[state.round])):
            self.stats.packets_ignored += 1   # malformed, stale, duplicate or someone else's
            return []
        if not self._closing(state.round):
            payload = memoryview(data)[HEADER_LEN:] if self._keep[state.round] else None
            self.schedule.accept_result(state.round, exponent, payload)
        self.stats.results_accepted += 1
        if state.retries == 0:
            self.timer.sample(now - state.first_sent)
        if (first >> 2) & 1:
            self.stats.overflow = True
        self._rounds_done += 1
        del self._slots[slot]
        next_round = state.round + self._window
        if self._has_round(next_round):
            return [self._begin_round(next_round, now, state.payload)]
        return []

    def on_timer(self, now: float) -> list[bytes]:
        """Retransmissions due at `now`, earliest deadline first."""
        heap, due = self._deadlines, []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            state = entry[2]
            if self._slots.get(state.slot) is not state or state.deadline != entry[0]:
                continue                                    # answered or already re-armed
            if state.retries >= self.config.max_retries and self._closing(state.round):
                # Every result is in: the others left, or a restart took the closing
                # round's result from this worker only.  Nothing is missing; stop waiting.
                self.stats.closings_unanswered += 1
                self._rounds_done += 1
                del self._slots[state.slot]
                continue
            if state.retries >= self.config.max_retries:
                heapq.heappush(heap, entry)
                raise AggregationStalled(self.plan.stall_message(
                    state.slot, state.chunk_offset, state.version, state.retries,
                    now - state.first_sent))
            state.retries += 1
            state.timeout = min(state.timeout * 2, self.config.max_timeout_s)
            state.deadline = now + state.timeout
            heapq.heappush(heap, (state.deadline, next(self._sequence), state))
            self.stats.retransmissions += 1
            self._count_sent(state.payload)
            due.append(state.payload)
            if self.config.redo_previous and state.previous is not None \
                    and state.retries >= REDO_AFTER:
                self.stats.redone_rounds += 1
                self._count_sent(state.previous)
                due.append(state.previous)
        return due

    def next_deadline(self) -> float | None:
        heap = self._deadlines
        while heap:
            deadline, _, state = heap[0]
            if self._slots.get(state.slot) is state and state.deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    # ---- internals -----------------------------------------------------------------
    def _begin_round(self, q: int, now: float, previous: bytes | None = None) -> bytes:
        slot, version = q % self._window, self._version(q)
        if self._closing(q):
            exponent, chunk_offset, values = 0, self.plan.chunk_offset(q), self._no_values
        else:
            exponent, chunk_offset, values = self.schedule.contribution(q)
        chunk_offset += self.config.chunk_base
        flags = self._flags[q]
        header = _HEADER.pack(self._first_byte[version] | flags, exponent, self._job_id, slot,
                              self.config.contributor, chunk_offset, self._k, self._owner[q])
        payload = header if flags & FLAG_NO_VALUES else header + values.data
        state = _SlotState(q, slot, version, chunk_offset, payload, now, self.timer.timeout,
                           previous)
        self._slots[slot] = state
        heapq.heappush(self._deadlines, (state.deadline, next(self._sequence), state))
        self._count_sent(payload)
        return payload

    def _count_sent(self, payload: bytes) -> None:
        self.stats.packets_sent += 1
        self.stats.bytes_sent += len(payload)


class _Constant:
    """The same value at every index (allreduce's flags, owner and keep)."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value

    def __getitem__(self, index: int) -> int:
        return self.value


def make_schedule(data: np.ndarray, k: int, world: int, window: int):
    """The schedule for `data`'s dtype (int32 or float32)."""
    if data.dtype == np.int32:
        return Int32Schedule(data, k)
    if data.dtype == np.float32:
        return BlockFloatSchedule(data, k, world, window)
    raise ValueError(f"unsupported dtype {data.dtype} (int32 or float32)")
