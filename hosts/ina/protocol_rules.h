/* The aggregation protocol's rules that the C worker engine (hosts/ina/engine_native.c) and the
 * simulator's C++ actors (simulation/simcore.cpp) both follow, written once: plain static inline
 * C, valid as C11 and C++17, no state of its own.
 *
 * The references stay Python: contracts/wire.py for the numbers, hosts/ina/engine.py for the
 * worker's rules (RoundPlan, RetransmissionTimer, AggregationEngine.on_timer) and
 * simulation/ina.py for the simulator's switch (SwitchCells).  tests/hosts/test_protocol_rules.py
 * compiles this header (as C and as C++) and checks every constant against contracts/wire.py
 * and every function against those references on a table of inputs.
 *
 * Floating point: the timer's arithmetic is Python's, operation for operation, so the engine's
 * deadlines and the simulator's timings are bit for bit the references' (both builds pass
 * -ffp-contract=off: no fused multiply-adds).
 */
#ifndef INA_PROTOCOL_RULES_H
#define INA_PROTOCOL_RULES_H

#include <math.h>
#include <stdint.h>

/* ---- the wire (contracts/wire.py) ------------------------------------------------------ */
#define INA_HEADER_LEN 16                 /* HEADER_LEN */
#define INA_VALUE_BYTES 4                 /* VALUE_BYTES */
/* INA_FRAME_OVERHEAD: Ethernet, IPv4 and UDP around the header */
#define INA_FRAME_OVERHEAD (14 + 20 + 8 + INA_HEADER_LEN)
#define INA_MSG_CONTRIBUTION 1            /* MSG_CONTRIBUTION */
#define INA_MSG_RESULT 2                  /* MSG_RESULT */
#define INA_FLAG_NO_VALUES 1              /* FLAG_NO_VALUES */
#define INA_FLAG_TO_OWNER 2               /* FLAG_TO_OWNER */
#define INA_NO_OWNER 0xFFFF               /* NO_OWNER */
#define INA_MAX_CONTRIBUTORS 64           /* MAX_CONTRIBUTORS: the switch's bitmap */
/* hosts/ina/engine.py REDO_AFTER: from this retransmission of a round on, the slot's previous
 * round goes again with it (a restarted switch's missing rounds) */
#define INA_REDO_AFTER 2

/* Byte 0 of the header: msg_type (high 4 bits) | version (bit 3) | overflow (bit 2) | flags. */
static inline uint32_t ina_first_byte(uint32_t msg_type, uint32_t version, uint32_t overflow,
                                      uint32_t flags)
{
    return (msg_type << 4) | (version << 3) | (overflow << 2) | flags;
}
static inline uint32_t ina_msg_type(uint32_t first) { return first >> 4; }
static inline uint32_t ina_version_bit(uint32_t first) { return (first >> 3) & 1; }
static inline uint32_t ina_overflow_bit(uint32_t first) { return (first >> 2) & 1; }
static inline uint32_t ina_flag_bits(uint32_t first) { return first & 3; }

/* A packet's bytes: UDP payload and Ethernet frame, with k values (0: a header-only packet). */
static inline int64_t ina_payload_bytes(int64_t k)
{
    return INA_HEADER_LEN + INA_VALUE_BYTES * k;
}
static inline int64_t ina_frame_bytes(int64_t k)
{
    return INA_FRAME_OVERHEAD + INA_VALUE_BYTES * k;
}

/* ---- which rounds exist, their slot, version and chunk offset (engine.py RoundPlan) ----- */
typedef struct {
    int64_t window;       /* slots: round q uses slot q % window */
    int64_t count;        /* int32: the schedule's rounds; block float: its blocks */
    int32_t block_float;  /* 0: real rounds [0, count) (Int32Schedule; the simulator's rounds);
                           * 1: [0, count) and [window, count + window) (BlockFloatSchedule:
                           * exponent-only rounds, then every block's values) */
    int32_t closing;      /* EngineConfig.closing_rounds: one closing round per slot */
} ina_rounds;

/* The schedule's has_round(q). */
static inline int ina_real_round(const ina_rounds *r, int64_t q)
{
    if (!r->block_float)
        return q >= 0 && q < r->count;
    return (q >= 0 && q < r->count) || (q >= r->window && q < r->count + r->window);
}

/* RoundPlan.closing: the round after a slot's last real one. */
static inline int ina_closing_round(const ina_rounds *r, int64_t q)
{
    return r->closing && q >= r->window && ina_real_round(r, q - r->window)
           && !ina_real_round(r, q);
}

static inline int ina_has_round(const ina_rounds *r, int64_t q)
{
    return ina_real_round(r, q) || ina_closing_round(r, q);
}

static inline int64_t ina_slot(const ina_rounds *r, int64_t q) { return q % r->window; }

/* RoundPlan.version: versions alternate per slot from the slot's first (`base`: 0 or 1, the
 * slot's entry of EngineConfig.first_versions; the simulator starts every slot at 0). */
static inline int ina_version(const ina_rounds *r, int64_t q, int base)
{
    return (int)((q / r->window + base) % 2);
}

/* The schedule's chunk_offset(q): a round's chunk times k; a block float values round's is
 * its block's. */
static inline uint64_t ina_real_offset(const ina_rounds *r, int64_t q, uint32_t k)
{
    if (r->block_float && q >= r->window)
        q -= r->window;
    return (uint64_t)q * k;
}

/* RoundPlan.chunk_offset (chunk_base not included): a closing round's is one chunk above its
 * slot's last real round, so it stays the largest of its slot version. */
static inline uint64_t ina_chunk_offset(const ina_rounds *r, int64_t q, uint32_t k)
{
    if (ina_closing_round(r, q))
        return ina_real_offset(r, q - r->window, k) + k;
    return ina_real_offset(r, q, k);
}

/* ---- the retransmission timer (engine.py RetransmissionTimer, RFC 6298) ------------------ */
typedef struct {
    int32_t have_srtt;    /* Python's srtt is not None */
    double srtt, rttvar;
    double timeout;       /* a new round's first timeout */
    double minimum, maximum;
} ina_timer;

static inline ina_timer ina_timer_new(double minimum, double maximum)
{
    ina_timer t = {0, 0.0, 0.0, minimum, minimum, maximum};
    return t;
}

/* Python's max(a, b) and min(a, b) for floats: the first argument unless the second is
 * strictly greater (smaller), so a NaN comes out as Python's would. */
static inline double ina_py_max(double a, double b) { return b > a ? b : a; }
static inline double ina_py_min(double a, double b) { return b < a ? b : a; }

/* RetransmissionTimer.sample: a round trip of a round answered without retransmission
 * (Karn's rule: the callers sample only those). */
static inline void ina_timer_sample(ina_timer *t, double rtt)
{
    if (!t->have_srtt) {
        t->srtt = rtt;
        t->rttvar = rtt / 2;
        t->have_srtt = 1;
    } else {
        t->rttvar = 0.75 * t->rttvar + 0.25 * fabs(t->srtt - rtt);
        t->srtt = 0.875 * t->srtt + 0.125 * rtt;
    }
    t->timeout = ina_py_min(ina_py_max(t->srtt + 4 * t->rttvar, t->minimum), t->maximum);
}

/* A round's timeout after one more retransmission: doubled, at most `maximum`. */
static inline double ina_backoff(double timeout, double maximum)
{
    return ina_py_min(timeout * 2, maximum);
}

/* What a worker does when a round's deadline passed (AggregationEngine.on_timer): retransmit;
 * after max_retries give a closing round up (every sum is in by then: closings_unanswered)
 * or, for a real round, stop with an error (AggregationStalled). */
enum { INA_RETRANSMIT = 0, INA_GIVE_UP = 1, INA_STALL = 2 };

static inline int ina_on_expiry(int64_t retries, int64_t max_retries, int closing)
{
    if (retries < max_retries)
        return INA_RETRANSMIT;
    return closing ? INA_GIVE_UP : INA_STALL;
}

/* Whether a retransmission (the `retries`-th) also re-sends the slot's previous round. */
static inline int ina_redo_previous(int has_previous, int64_t retries)
{
    return has_previous && retries >= INA_REDO_AFTER;
}

/* ---- a switch's slot version, as the simulator models p4src (simulation/ina.py SwitchCells,
 * docs/protocol.md "Slots and versions").  Rounds are placed by their number, which orders a
 * slot version's rounds as p4src's chunk offsets do.  One difference from p4src: a round above
 * the cell's while the cell still collects is a new round there (after a switch restart) and
 * stale here (the simulator restarts no switch). */
enum { INA_CELL_NEW = 0, INA_CELL_STALE = 1, INA_CELL_RETRANSMISSION = 2, INA_CELL_DUPLICATE = 3,
       INA_CELL_ADD = 4 };

/* A contribution of `contributor` to `round` at a cell (none: `has_cell` 0) holding
 * `cell_round` with `count` contributions so far (0: complete) and the bitmap `seen`. */
static inline int ina_cell_contribution(int has_cell, int64_t cell_round, int64_t count,
                                        uint64_t seen, int64_t round, int contributor)
{
    if (!has_cell || (count == 0 && round > cell_round))
        return INA_CELL_NEW;
    if (round != cell_round)
        return INA_CELL_STALE;
    if (count == 0)
        return INA_CELL_RETRANSMISSION;
    if ((seen >> contributor) & 1)
        return INA_CELL_DUPLICATE;
    return INA_CELL_ADD;
}

/* A result from the parent lands only on the complete round it is the result of. */
static inline int ina_cell_takes_result(int has_cell, int64_t cell_round, int64_t count,
                                        int64_t round)
{
    return has_cell && cell_round == round && count == 0;
}

#endif
