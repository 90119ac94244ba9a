"""Pure algorithms used by the v1model externs: hashes, checksums and the meter.

Nothing here knows about P4.  The back end flattens the "any data" argument of
``hash``/``verify_checksum``/``update_checksum`` into a field list, a list of
``(value, width)`` pairs in declaration order, and calls one of the functions
below with it.

How a field list becomes bytes (the way bmv2 builds its hash input buffer):
the fields are concatenated most-significant bit first, without any gap, and
the result is zero-padded at the *end* up to a whole number of bytes.  For
example ``[(0b101, 3), (0x1, 4)]`` is the bit string ``101 0001`` and becomes
the single byte ``0b1010_0010``.  A value wider than its width keeps only its
low ``width`` bits.

Algorithms (results are unsigned ints; the caller truncates to the width of
its output field):

* ``crc16``: bmv2's crc16, i.e. CRC-16/ARC (poly 0x8005, init 0, no final xor,
  input and output reflected); check value of b"123456789" is 0xBB3D.
* ``crc32``: the standard reflected CRC-32 (poly 0x04C11DB7, init and final
  xor 0xFFFFFFFF); check value 0xCBF43926.
* ``crc16_custom`` / ``crc32_custom``: CRCs whose polynomial, init, final xor
  and reflection are configurable; their defaults equal ``crc16``/``crc32``.
* ``csum16``: the ones'-complement 16-bit internet checksum (RFC 1071), as the
  IPv4 header checksum; an odd trailing byte is padded with a zero byte.
* ``xor16``: XOR of the big-endian 16-bit words; a short last word is padded
  with zero bytes at its end.
* ``identity``: the first (up to) 8 bytes of the buffer as a big-endian
  number, as bmv2's identity hash.
* ``random``: a pseudo-random number, independent of the input.

The meter is the two-rate three-colour marker of RFC 2698 in the colour-blind
mode bmv2 implements, with time passed in explicitly so that it is testable.
"""

import random as _random

GREEN = 0
YELLOW = 1
RED = 2


def pack_fields(fields):
    """Concatenate ``(value, width)`` fields MSB first into zero-padded bytes."""
    acc = 0
    nbits = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    pad = (-nbits) % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def _reflect(value, nbits):
    """Reverse the order of the low ``nbits`` bits of ``value``."""
    result = 0
    for _ in range(nbits):
        result = (result << 1) | (value & 1)
        value >>= 1
    return result


class Crc:
    """A table-driven CRC of 8 to 64 bits, in the usual parametrised model.

    Parameters are those of the Rocksoft model (and of bmv2's custom CRCs):
    ``poly`` without its top bit, ``init`` register value, ``xor_out`` applied
    to the final value, ``reflect_in`` (each input byte taken LSB first) and
    ``reflect_out`` (the register reflected before the final xor).
    """

    def __init__(self, width, poly, init=0, xor_out=0, reflect_in=False, reflect_out=False):
        if width < 8:
            raise ValueError("CRCs narrower than 8 bits are not supported")
        self.width = width
        self.configure(poly, init, xor_out, reflect_in, reflect_out)

    def configure(self, poly, init=0, xor_out=0, reflect_in=False, reflect_out=False):
        """Change the parameters (as bmv2's runtime crc*_custom configuration does)."""
        mask = (1 << self.width) - 1
        self.poly = poly & mask
        self.init = init & mask
        self.xor_out = xor_out & mask
        self.reflect_in = bool(reflect_in)
        self.reflect_out = bool(reflect_out)
        self._mask = mask
        if self.reflect_in:
            # Reflected register: process LSB first with the reflected polynomial.
            self._table = self._reflected_table(_reflect(self.poly, self.width))
        else:
            self._table = self._normal_table(self.poly)

    def _normal_table(self, poly):
        top = 1 << (self.width - 1)
        table = []
        for byte in range(256):
            reg = byte << (self.width - 8)
            for _ in range(8):
                reg = ((reg << 1) ^ poly) if reg & top else (reg << 1)
            table.append(reg & self._mask)
        return table

    @staticmethod
    def _reflected_table(rpoly):
        table = []
        for byte in range(256):
            reg = byte
            for _ in range(8):
                reg = (reg >> 1) ^ rpoly if reg & 1 else reg >> 1
            table.append(reg)
        return table

    def compute_bytes(self, data):
        """The CRC of a byte string."""
        table = self._table
        if self.reflect_in:
            reg = _reflect(self.init, self.width)
            for byte in data:
                reg = table[(reg ^ byte) & 0xFF] ^ (reg >> 8)
            # ``reg`` holds the reflected register here.
            if not self.reflect_out:
                reg = _reflect(reg, self.width)
        else:
            shift = self.width - 8
            mask = self._mask
            reg = self.init
            for byte in data:
                reg = table[((reg >> shift) ^ byte) & 0xFF] ^ ((reg << 8) & mask)
            if self.reflect_out:
                reg = _reflect(reg, self.width)
        return reg ^ self.xor_out

    def __call__(self, fields):
        return self.compute_bytes(pack_fields(fields))


def _fold16(value):
    """The ones'-complement sum of the 16-bit words of a non-negative integer: 2**16 is 1
    modulo 0xFFFF, so the end-around-carry sum is the value modulo 0xFFFF, except that a
    non-zero value whose sum is a multiple of 0xFFFF folds to 0xFFFF, not 0."""
    total = value % 0xFFFF
    return total if total or not value else 0xFFFF


def ones_complement_sum16(data):
    """The 16-bit ones'-complement sum of big-endian words (odd byte zero-padded)."""
    value = int.from_bytes(data, "big")
    return _fold16(value << 8 if len(data) % 2 else value)


def csum16_bytes(data):
    """Internet checksum (RFC 1071) of a byte string."""
    return ~ones_complement_sum16(data) & 0xFFFF


def csum16(fields):
    """Internet checksum of a field list; 0 when written over a valid header. The fields
    are concatenated as one integer, zero-padded on the right to whole 16-bit words."""
    acc = 0
    nbits = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    return ~_fold16(acc << (-nbits % 16)) & 0xFFFF


def xor16(fields):
    """XOR of the big-endian 16-bit words of the packed field list."""
    data = pack_fields(fields)
    if len(data) % 2:
        data += b"\x00"
    result = 0
    for i in range(0, len(data), 2):
        result ^= (data[i] << 8) | data[i + 1]
    return result


def identity(fields):
    """The first up to 8 bytes of the packed field list, big endian."""
    return int.from_bytes(pack_fields(fields)[:8], "big")


_crc16_arc = Crc(16, 0x8005, 0x0000, 0x0000, True, True)
_crc32_std = Crc(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)


def crc16(fields):
    """bmv2's crc16 (CRC-16/ARC) of a field list."""
    return _crc16_arc(fields)


def crc32(fields):
    """Standard CRC-32 of a field list."""
    return _crc32_std(fields)


class RandomHash:
    """The ``random`` hash algorithm: ignores its input; seedable for tests."""

    def __init__(self, seed=None):
        self._rng = _random.Random(seed)

    def __call__(self, fields):
        return self._rng.getrandbits(64)


def make_hash(name, seed=None):
    """A fresh callable ``fields -> int`` for a v1model HashAlgorithm name.

    Custom CRCs and ``random`` carry state, so every hash/checksum instance in
    a program gets its own object; the stateless ones are shared functions.
    """
    if name == "crc16_custom":
        return Crc(16, 0x8005, 0x0000, 0x0000, True, True)
    if name == "crc32_custom":
        return Crc(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
    if name == "random":
        return RandomHash(seed)
    try:
        return _STATELESS[name]
    except KeyError:
        raise ValueError(f"hash algorithm {name!r} is not supported") from None


_STATELESS = {
    "crc16": crc16,
    "crc32": crc32,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
}

HASH_ALGORITHMS = tuple(sorted(list(_STATELESS) + ["crc16_custom", "crc32_custom", "random"]))


class _TokenBucket:
    """One rate of the meter: refills from a fixed time origin, as bmv2 does."""

    __slots__ = ("rate", "burst", "tokens", "tokens_last")

    def __init__(self, rate, burst):
        self.rate = rate            # units per second
        self.burst = burst          # bucket depth in units
        self.tokens = burst         # a freshly configured bucket is full
        self.tokens_last = 0        # tokens credited since the origin so far

    def refill(self, now_us):
        # Credit from the origin rather than from the last update so rounding
        # errors do not accumulate.
        since_origin = int((now_us * self.rate) // 1_000_000)
        self.tokens = min(self.tokens + since_origin - self.tokens_last, self.burst)
        self.tokens_last = since_origin


class TwoRateThreeColorMeter:
    """RFC 2698 trTCM (colour-blind) as bmv2 applies it.

    ``unit`` is ``"packets"`` (each packet costs 1) or ``"bytes"`` (each
    packet costs its length).  Rates are in units per second, bursts in units,
    time in integer microseconds since the meter's origin.  Until configured
    every packet is GREEN.  On each packet the peak bucket is checked first:
    short of tokens gives RED and nothing is taken; otherwise its tokens are
    taken and the committed bucket is checked: short gives YELLOW, otherwise
    its tokens are taken too and the packet is GREEN.
    """

    def __init__(self, unit="packets"):
        if unit not in ("packets", "bytes"):
            raise ValueError(f"meter unit must be 'packets' or 'bytes', not {unit!r}")
        self.unit = unit
        self._buckets = None        # [peak, committed] once configured

    def set_config(self, cir, cburst, pir, pburst):
        """Configure the rates; CIR above PIR is rejected as bmv2 rejects it."""
        if cir > pir:
            raise ValueError(f"meter CIR {cir} is above PIR {pir}")
        self._buckets = [_TokenBucket(pir, pburst), _TokenBucket(cir, cburst)]

    def get_config(self):
        """``(cir, cburst, pir, pburst)`` or None if not configured."""
        if self._buckets is None:
            return None
        peak, committed = self._buckets
        return (committed.rate, committed.burst, peak.rate, peak.burst)

    def reset(self):
        """Back to the unconfigured state (every packet GREEN)."""
        self._buckets = None

    def execute(self, now_us, length=1, pre_color=GREEN):
        """The colour of one packet of ``length`` bytes arriving at ``now_us``."""
        if self._buckets is None:
            return pre_color
        cost = length if self.unit == "bytes" else 1
        color = GREEN
        for bucket, color_if_short in zip(self._buckets, (RED, YELLOW)):
            bucket.refill(now_us)
            if bucket.tokens < cost:
                color = color_if_short
                break
            bucket.tokens -= cost
        return max(pre_color, color)
