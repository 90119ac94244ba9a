"""The worker's aggregation protocol engine, with no sockets and no clock of its own.

`AggregationEngine` runs the worker side of docs/design.md's protocol: a window of W
slots, each slot carrying one round at a time; round q uses slot q % W and version
(q // W) % 2; a slot's next round starts only after its current round's result arrived;
a round's packet is retransmitted unchanged when its timer expires (timeout from the
measured round-trip time, doubled per retry); results are matched by (slot, version,
chunk_offset) and stale or duplicate ones are ignored.  A slot that stays unanswered after
`max_retries` retransmissions raises AggregationStalled naming the job, slot and chunk, so a
worker whose peer died stops after a bounded time.  Callers feed it bytes and times and send what it returns:

    packets = engine.start(now)          # first packet of every slot
    packets = engine.on_packet(data, now)  # a UDP payload received
    packets = engine.on_timer(now)       # retransmissions due at `now`
    engine.next_deadline(), engine.done, engine.result(), engine.stats

What a round carries is decided by a schedule:
* `Int32Schedule`: round q is chunk q (values as they are, exponent 0);
* `BlockFloatSchedule`: float32 with per-block exponents piggy-backed (hosts/quantize.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hosts import quantize
from hosts.protocol import MSG_CONTRIBUTION, MSG_RESULT, AggHeader, AggPacket, ProtocolError

MAX_WINDOW = 1 << 16
MAX_ELEMENTS = 1 << 32


class AggregationStalled(RuntimeError):
    """A slot got no result after the allowed retransmissions."""


@dataclass(frozen=True)
class Contribution:
    """What one round sends: the exponent field, the chunk offset and K int32 values."""

    exponent: int
    chunk_offset: int
    values: np.ndarray


def _padded_blocks(data: np.ndarray, k: int) -> np.ndarray:
    """`data` zero-padded to whole blocks and shaped (blocks, k)."""
    blocks = -(-len(data) // k)
    padded = np.zeros(blocks * k, dtype=data.dtype)
    padded[:len(data)] = data
    return padded.reshape(blocks, k)


class Int32Schedule:
    """int32 vectors: round q carries chunk q's values; the switch sums them as they are."""

    description = "int32, exact integer sums"

    def __init__(self, data: np.ndarray, k: int):
        self.elements = len(data)
        self.k = k
        self._blocks = _padded_blocks(np.asarray(data, dtype=np.int32), k)
        self._sums = np.zeros_like(self._blocks)
        self.round_count = len(self._blocks)

    def has_round(self, q: int) -> bool:
        return 0 <= q < self.round_count

    def contribution(self, q: int) -> Contribution:
        return Contribution(0, q * self.k, self._blocks[q])

    def accept_result(self, q: int, exponent: int, values: np.ndarray) -> None:
        self._sums[q] = values

    def result(self) -> np.ndarray:
        return self._sums.reshape(-1)[:self.elements].copy()


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
        self._sums = np.zeros(self._blocks.shape, dtype=np.int32)
        self.block_count = len(self._blocks)
        self.round_count = self.block_count + window

    def has_round(self, q: int) -> bool:
        return 0 <= q < self.block_count or self.window <= q < self.block_count + self.window

    def contribution(self, q: int) -> Contribution:
        exponent = int(self._local_exponents[q]) if q < self.block_count else 0
        block = q - self.window
        if block < 0:
            return Contribution(exponent, q * self.k, np.zeros(self.k, dtype=np.int32))
        values = quantize.quantize(self._blocks[block:block + 1],
                                   self._agreed[block:block + 1], self.world)[0]
        return Contribution(exponent, block * self.k, values)

    def accept_result(self, q: int, exponent: int, values: np.ndarray) -> None:
        if q < self.block_count:
            if exponent < self._local_exponents[q]:
                raise ProtocolError(
                    f"switch returned exponent {exponent} for chunk offset {q * self.k}, "
                    f"below this worker's {self._local_exponents[q]} (must be the max)")
            self._agreed[q] = exponent
        if q >= self.window:
            self._sums[q - self.window] = values

    def result(self) -> np.ndarray:
        return quantize.dequantize(self._sums, self._agreed, self.world).reshape(-1)[:self.elements]

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

    def sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt

    @property
    def timeout(self) -> float:
        if self.srtt is None:
            return self.minimum
        return min(max(self.srtt + 4 * self.rttvar, self.minimum), self.maximum)


@dataclass
class EngineStats:
    packets_sent: int = 0
    bytes_sent: int = 0
    retransmissions: int = 0
    results_accepted: int = 0
    packets_ignored: int = 0
    overflow: bool = False


@dataclass
class _SlotState:
    """The round a slot is waiting for and its retransmission timer."""

    round: int
    header: AggHeader
    payload: bytes
    deadline: float
    timeout: float
    retries: int = 0
    first_sent: float = 0.0


@dataclass
class EngineConfig:
    job_id: int
    contributor: int
    window: int = 32
    timeout_s: float = 0.1          # first and smallest retransmission timeout
    max_timeout_s: float = 3.2
    max_retries: int = 12

    def validate(self) -> None:
        if not 0 <= self.job_id < (1 << 16):
            raise ValueError(f"job id must be in 0..65535, got {self.job_id}")
        if not 0 <= self.contributor < 32:
            raise ValueError(f"contributor must be in 0..31, got {self.contributor}")
        if not 1 <= self.window <= MAX_WINDOW:
            raise ValueError(f"window must be in 1..{MAX_WINDOW}, got {self.window}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout_s}s")
        if self.max_retries < 0:
            raise ValueError(f"max retries must be >= 0, got {self.max_retries}")


@dataclass
class AggregationEngine:
    """Worker-side protocol state machine (see the module docstring)."""

    schedule: Int32Schedule | BlockFloatSchedule
    config: EngineConfig
    stats: EngineStats = field(default_factory=EngineStats)

    def __post_init__(self) -> None:
        self.config.validate()
        if self.schedule.elements >= MAX_ELEMENTS:
            raise ValueError(f"at most {MAX_ELEMENTS - 1} elements fit the 32-bit chunk offset")
        self._slots: dict[int, _SlotState] = {}
        self.timer = RetransmissionTimer(self.config.timeout_s, self.config.max_timeout_s)
        self._rounds_done = 0
        self._rounds_total = sum(1 for q in range(self.schedule.round_count)
                                 if self.schedule.has_round(q))

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

    def start(self, now: float) -> list[bytes]:
        return [self._begin_round(slot, now) for slot in range(self.config.window)
                if self.schedule.has_round(slot)]

    def on_packet(self, data: bytes, now: float) -> list[bytes]:
        try:
            packet = AggPacket.unpack(data)
        except ProtocolError:
            self.stats.packets_ignored += 1
            return []
        state = self._slots.get(packet.header.slot)
        if state is None or not self._answers(packet.header, state.header):
            self.stats.packets_ignored += 1   # stale, duplicate or someone else's
            return []
        self.schedule.accept_result(state.round, packet.header.exponent, packet.values)
        self.stats.results_accepted += 1
        if state.retries == 0:
            self.timer.sample(now - state.first_sent)
        self.stats.overflow |= bool(packet.header.overflow)
        self._rounds_done += 1
        del self._slots[packet.header.slot]
        next_round = state.round + self.config.window
        if self.schedule.has_round(next_round):
            return [self._begin_round(next_round, now)]
        return []

    def on_timer(self, now: float) -> list[bytes]:
        due = [state for state in self._slots.values() if state.deadline <= now]
        for state in due:
            if state.retries >= self.config.max_retries:
                raise AggregationStalled(self._stall_message(state, now))
            state.retries += 1
            state.timeout = min(state.timeout * 2, self.config.max_timeout_s)
            state.deadline = now + state.timeout
            self.stats.retransmissions += 1
            self._count_sent(state.payload)
        return [state.payload for state in due]

    def next_deadline(self) -> float | None:
        return min((s.deadline for s in self._slots.values()), default=None)

    # ---- internals -----------------------------------------------------------------
    def _begin_round(self, q: int, now: float) -> bytes:
        window = self.config.window
        contribution = self.schedule.contribution(q)
        header = AggHeader(msg_type=MSG_CONTRIBUTION, version=(q // window) % 2,
                           job_id=self.config.job_id, slot=q % window,
                           contributor=self.config.contributor,
                           chunk_offset=contribution.chunk_offset,
                           num_elements=self.schedule.k, exponent=contribution.exponent)
        payload = AggPacket(header, contribution.values).pack()
        timeout = self.timer.timeout
        self._slots[header.slot] = _SlotState(q, header, payload, now + timeout, timeout,
                                              first_sent=now)
        self._count_sent(payload)
        return payload

    def _answers(self, result: AggHeader, sent: AggHeader) -> bool:
        return (result.msg_type == MSG_RESULT and result.job_id == sent.job_id
                and result.version == sent.version and result.chunk_offset == sent.chunk_offset
                and result.num_elements == sent.num_elements)

    def _count_sent(self, payload: bytes) -> None:
        self.stats.packets_sent += 1
        self.stats.bytes_sent += len(payload)

    def _stall_message(self, state: _SlotState, now: float) -> str:
        h = state.header
        return (f"job {h.job_id}: no result from the switch for slot {h.slot} (chunk "
                f"{h.chunk_offset // h.num_elements}, chunk offset {h.chunk_offset}, version "
                f"{h.version}) after {state.retries} retransmissions over "
                f"{now - state.first_sent:.1f}s; a worker of the job may have died or never "
                f"started (the controller's missing_ranks() names it)")


def make_schedule(data: np.ndarray, k: int, world: int, window: int):
    """The schedule for `data`'s dtype (int32 or float32)."""
    if data.dtype == np.int32:
        return Int32Schedule(data, k)
    if data.dtype == np.float32:
        return BlockFloatSchedule(data, k, world, window)
    raise ValueError(f"unsupported dtype {data.dtype} (int32 or float32)")
