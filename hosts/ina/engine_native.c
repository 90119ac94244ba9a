/* The worker's aggregation engine (hosts/ina/engine.py) in C, and the UDP loop that drives it.
 *
 * hosts/ina/engine.py is the reference: this file is the same state machine, decision for
 * decision, so that a worker's data loop (receive results, store their sums, build each
 * slot's next contribution, send, retransmit on timers) runs without the interpreter.
 * tests/hosts/test_engine_native.py drives both with the same packets and clock and compares
 * every packet, counter and sum.  Keep them in step: a change to one is a change to both.
 *
 * Arrays of the schedule (the values to send, the sums, the block exponents) belong to the
 * Python schedule objects; the engine only points into them, so result() and the float
 * error bound stay Python's.  Times are seconds of CLOCK_MONOTONIC (Python's
 * time.monotonic()), as doubles, with the same arithmetic in the same order as engine.py,
 * so deadlines and round-trip estimates are bit for bit the same (the build must not fuse
 * multiply-adds: -ffp-contract=off).
 *
 * The other collectives (hosts/ina/ina_collectives.py) arrive as three per-round arrays of the
 * RoundPlan (flags, owner, keep; NULL for allreduce): a NO_VALUES round's packet is the
 * 16-byte header alone, so packets have per-slot lengths, and a result may be header only.
 *
 * The rules this engine shares with the simulator's C++ actors (simulation/simcore.cpp) are in
 * protocol_rules.h: which rounds exist, their slot, version and chunk offset, the header's first
 * byte, the retransmission timer, backoff, retry limit and REDO.  This file keeps the rest:
 * packets, schedules, the deadline heap and the UDP loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "protocol_rules.h"

#define NE_MAX_BATCH 256             /* FIO_MAX_BATCH */

/* hosts/ina/fastio.c, built into the same object */
struct fio_receiver;
struct fio_receiver *fio_receiver_new(unsigned char *buf, int slot_size, int max);
void fio_receiver_free(struct fio_receiver *r);
int fio_receive(struct fio_receiver *r, int fd, int *lens, unsigned int *addrs,
                unsigned short *ports);

/* Return codes besides counts and -errno. */
#define NE_DONE 1
#define NE_BUDGET 0
#define NE_STALLED (-100000)         /* a slot ran out of retransmissions */
#define NE_PROTOCOL (-100001)        /* a result's exponent below ours (float schedule) */
#define NE_RANGE (-100002)           /* a value exceeds its block's agreed exponent */
#define NE_NOMEM (-100003)

enum { NE_INT32 = 0, NE_FLOAT = 1 };

typedef struct {
    double deadline;
    uint64_t sequence;
    uint32_t slot;
} ne_entry;

typedef struct {
    int64_t round;                   /* -1: no round in flight */
    double deadline, timeout, first_sent;
    uint64_t sequence;               /* of the heap entry armed for `deadline` */
    int32_t retries;
    int32_t version;
    uint32_t chunk_offset;
    int32_t current;                 /* which half of `packets` holds this round's packet */
    uint32_t lengths[2];             /* bytes of each half's packet (header only: 16) */
    int32_t has_previous;
    uint8_t *packets;                /* two packets: this round's and the previous round's */
    uint64_t replied_epoch;          /* ne_run: the batch whose pending replies include ours */
} ne_slot;

typedef struct {
    /* configuration (EngineConfig and the schedule's shape) */
    int32_t kind;
    uint32_t job_id, contributor, window, k, packet_len;
    int32_t max_retries;
    int32_t redo;                    /* EngineConfig.redo_previous */
    uint64_t chunk_base;
    int64_t blocks, round_count, rounds_total;
    int32_t shift;                   /* float: quantize.headroom_shift(world) */
    ina_rounds rounds;               /* which rounds exist (EngineConfig.closing_rounds too) */
    /* the schedule's arrays, owned by Python */
    const uint8_t *version_base;     /* window entries */
    const uint8_t *wire;             /* int32: blocks x k values in network byte order */
    const float *data;               /* float: blocks x k values */
    const uint8_t *local_exponents;  /* float: per block */
    uint8_t *agreed;                 /* float: per block */
    uint8_t *sums;                   /* blocks x k values in network byte order */
    /* RoundPlan.flags per round (hosts/ina/ina_collectives.py), all NULL for allreduce */
    const uint8_t *flags;
    const uint16_t *owner;
    const uint8_t *keep;
    ina_timer timer;                 /* RetransmissionTimer */
    /* EngineStats, TransportStats, progress */
    uint64_t packets_sent, bytes_sent, retransmissions, redone_rounds, results_accepted,
             packets_ignored, closings_unanswered, packets_received, bytes_received,
             packets_foreign;
    int32_t overflow;
    int64_t rounds_done;
    /* what went wrong, for the Python side's message */
    int32_t error_slot, error_exponent, error_errno, error_sending;
    int64_t error_round;
    double error_now;
    /* outgoing packets of the last call: pointers into slot packet buffers */
    uint32_t out_count;
    const uint8_t **out_packets;
    uint32_t *out_lengths;
    /* state */
    ne_slot *slots;
    ne_entry *heap;
    size_t heap_len, heap_capacity;
    uint64_t next_sequence;
    uint64_t batch_epoch;            /* ne_run's batches, for ne_slot.replied_epoch */
    uint8_t *receive;                /* ne_run's datagrams: receive_batch x receive_slot bytes */
    int receive_batch, receive_slot;
    struct fio_receiver *receiver;   /* recvmmsg's headers for `receive` */
} ne_engine;

/* ---- small helpers ------------------------------------------------------------------- */
static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static uint32_t get16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }
static uint32_t get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* ---- the deadline heap: (deadline, sequence) min-heap, stale entries skipped lazily --- */
static int entry_less(const ne_entry *a, const ne_entry *b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->sequence < b->sequence);
}

static int heap_push(ne_engine *e, double deadline, uint64_t sequence, uint32_t slot)
{
    if (e->heap_len == e->heap_capacity) {
        size_t capacity = e->heap_capacity ? 2 * e->heap_capacity : 64;
        ne_entry *grown = realloc(e->heap, capacity * sizeof(*grown));
        if (!grown)
            return NE_NOMEM;
        e->heap = grown;
        e->heap_capacity = capacity;
    }
    size_t i = e->heap_len++;
    ne_entry item = {deadline, sequence, slot};
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_less(&item, &e->heap[parent]))
            break;
        e->heap[i] = e->heap[parent];
        i = parent;
    }
    e->heap[i] = item;
    return 0;
}

static ne_entry heap_pop(ne_engine *e)
{
    ne_entry top = e->heap[0], last = e->heap[--e->heap_len];
    size_t i = 0, n = e->heap_len;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && entry_less(&e->heap[child + 1], &e->heap[child]))
            child++;
        if (!entry_less(&e->heap[child], &last))
            break;
        e->heap[i] = e->heap[child];
        i = child;
    }
    if (n)
        e->heap[i] = last;
    return top;
}

static int entry_live(const ne_engine *e, const ne_entry *entry)
{
    const ne_slot *s = &e->slots[entry->slot];
    return s->round >= 0 && s->sequence == entry->sequence;
}

/* ---- rounds ----------------------------------------------------------------------------- */
static void count_sent(ne_engine *e, uint32_t length)
{
    e->packets_sent++;
    e->bytes_sent += length;
}

static void emit(ne_engine *e, const uint8_t *packet, uint32_t length)
{
    e->out_lengths[e->out_count] = length;
    e->out_packets[e->out_count++] = packet;
}

static uint32_t round_flags(const ne_engine *e, int64_t q) { return e->flags ? e->flags[q] : 0; }
static uint32_t round_owner(const ne_engine *e, int64_t q) { return e->owner ? e->owner[q] : 0; }
static int round_keep(const ne_engine *e, int64_t q) { return e->keep ? e->keep[q] : 1; }

/* nearbyint(v) in the default rounding mode (half to even, like np.rint) for |v| < 2^51,
 * without a libm call: adding 1.5 * 2^52 leaves no bits below the units, so the sum is v
 * rounded as the FPU rounds, and taking the constant off again is exact (-0.0 comes back as
 * 0.0: the same integer).  Where doubles carry excess precision (x87) the trick would round
 * twice: there, nearbyint. */
static double round_half_even(double v)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    const double rounder = 6755399441055744.0;       /* 1.5 * 2^52 */
    return (v + rounder) - rounder;
#else
    return nearbyint(v);
#endif
}

/* BlockFloatSchedule.quantized(block) into `out` (network byte order).  The loop has no
 * branch (it was most of a float32 round's own work): each scaled value is first clamped to
 * limit + 1, which changes no value that passes (|v| <= limit + 1 stays) and keeps every one
 * that fails failing (it rounds to limit + 1), so one check of the largest after the loop
 * refuses exactly the blocks np.rint's check refuses, and the int32 conversion stays in range. */
static int quantize_block(ne_engine *e, int64_t block, uint8_t *restrict out)
{
    const double scale = ldexp(1.0, e->shift + 127 - (int)e->agreed[block]);
    const double limit = ldexp(1.0, e->shift), clamp = limit + 1;
    const uint32_t k = e->k;
    const float *restrict x = e->data + block * k;
    double largest = 0;
    for (uint32_t i = 0; i < k; i++) {
        double v = (double)x[i] * scale;                        /* exact: a power of two */
        v = v < clamp ? v : clamp;
        v = v > -clamp ? v : -clamp;
        double scaled = round_half_even(v), magnitude = fabs(scaled);
        largest = magnitude > largest ? magnitude : largest;
        put32(out + 4 * i, (uint32_t)(int32_t)scaled);
    }
    if (largest > limit) {
        e->error_round = block;
        return NE_RANGE;
    }
    return 0;
}

/* AggregationEngine._begin_round: build round q's packet, arm its timer, queue it. */
static int begin_round(ne_engine *e, int64_t q, double now, int has_previous)
{
    uint32_t index = (uint32_t)ina_slot(&e->rounds, q);
    ne_slot *s = &e->slots[index];
    if (!s->packets) {
        s->packets = malloc(2 * (size_t)e->packet_len);
        if (!s->packets)
            return NE_NOMEM;
        s->current = 1;
    }
    int version = ina_version(&e->rounds, q, e->version_base[index]);
    uint32_t exponent = 0;
    uint64_t offset = ina_chunk_offset(&e->rounds, q, e->k) + e->chunk_base;
    int32_t current = has_previous ? 1 - s->current : s->current;
    uint8_t *packet = s->packets + (size_t)current * e->packet_len;
    uint8_t *values = packet + INA_HEADER_LEN;
    uint32_t flags = round_flags(e, q);
    if (ina_closing_round(&e->rounds, q)) {
        memset(values, 0, (size_t)e->k * 4);
    } else if (e->kind == NE_INT32) {
        if (!(flags & INA_FLAG_NO_VALUES))
            memcpy(values, e->wire + (size_t)q * e->k * 4, (size_t)e->k * 4);
    } else {
        exponent = q < e->blocks ? e->local_exponents[q] : 0;
        int64_t block = q - e->window;
        if (block < 0) {
            memset(values, 0, (size_t)e->k * 4);
        } else {
            int status = quantize_block(e, block, values);
            if (status)
                return status;
        }
    }
    packet[0] = (uint8_t)ina_first_byte(INA_MSG_CONTRIBUTION, (uint32_t)version, 0, flags);
    packet[1] = (uint8_t)exponent;
    put16(packet + 2, e->job_id);
    put16(packet + 4, index);
    put16(packet + 6, e->contributor);
    put32(packet + 8, (uint32_t)offset);
    put16(packet + 12, e->k);
    put16(packet + 14, round_owner(e, q));
    uint32_t length = flags & INA_FLAG_NO_VALUES ? INA_HEADER_LEN : e->packet_len;
    s->lengths[current] = length;
    s->round = q;
    s->version = version;
    s->chunk_offset = (uint32_t)offset;
    s->current = current;
    s->has_previous = has_previous;
    s->timeout = e->timer.timeout;
    s->deadline = now + e->timer.timeout;
    s->first_sent = now;
    s->retries = 0;
    s->sequence = e->next_sequence++;
    if (heap_push(e, s->deadline, s->sequence, index))
        return NE_NOMEM;
    count_sent(e, length);
    emit(e, packet, length);
    return 0;
}

void ne_free(ne_engine *e);

/* ---- the engine's interface (each call replaces the outgoing packets) ------------------- */

/* A new engine (NULL when out of memory).  The arrays stay Python's and must outlive it:
 * version_base (window bytes), and per kind the schedule's arrays (NULL where unused). */
ne_engine *ne_create(int kind, uint32_t job_id, uint32_t contributor, uint32_t window, uint32_t k,
                     double timeout_min, double timeout_max, int max_retries, uint64_t chunk_base,
                     int64_t blocks, int64_t round_count, int64_t rounds_total, int shift,
                     int closing, int redo,
                     const uint8_t *version_base, const uint8_t *wire, const float *data,
                     const uint8_t *local_exponents, uint8_t *agreed, uint8_t *sums,
                     const uint8_t *flags, const uint16_t *owner, const uint8_t *keep)
{
    ne_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->kind = kind;
    e->job_id = job_id;
    e->contributor = contributor;
    e->window = window;
    e->k = k;
    e->packet_len = (uint32_t)ina_payload_bytes(k);
    e->max_retries = max_retries;
    e->redo = redo;
    e->chunk_base = chunk_base;
    e->blocks = blocks;
    e->round_count = round_count;
    e->rounds_total = rounds_total;
    e->shift = shift;
    e->rounds.window = window;
    e->rounds.count = kind == NE_INT32 ? round_count : blocks;
    e->rounds.block_float = kind == NE_FLOAT;
    e->rounds.closing = closing;
    e->version_base = version_base;
    e->wire = wire;
    e->data = data;
    e->local_exponents = local_exponents;
    e->agreed = agreed;
    e->sums = sums;
    e->flags = flags;
    e->owner = owner;
    e->keep = keep;
    e->timer = ina_timer_new(timeout_min, timeout_max);
    e->slots = calloc(window, sizeof(ne_slot));
    /* at most two packets per slot (ne_on_timer: a round and its previous one) */
    e->out_packets = calloc(2 * (size_t)window + 1, sizeof(*e->out_packets));
    e->out_lengths = calloc(2 * (size_t)window + 1, sizeof(*e->out_lengths));
    if (!e->slots || !e->out_packets || !e->out_lengths) {
        ne_free(e);
        return NULL;
    }
    for (uint32_t i = 0; i < window; i++)
        e->slots[i].round = -1;
    return e;
}

void ne_free(ne_engine *e)
{
    if (!e)
        return;
    if (e->slots)
        for (uint32_t i = 0; i < e->window; i++)
            free(e->slots[i].packets);
    free(e->slots);
    free(e->out_packets);
    free(e->out_lengths);
    free(e->heap);
    fio_receiver_free(e->receiver);
    free(e->receive);
    free(e);
}

/* The last call's outgoing packets (ne_start/ne_on_packet/ne_on_timer return how many);
 * each is packet_len bytes and stays valid until the next call. */
const uint8_t **ne_outgoing(ne_engine *e) { return e->out_packets; }

/* Their lengths (packet_len, or 16 for a header-only packet). */
const uint32_t *ne_outgoing_lengths(ne_engine *e) { return e->out_lengths; }

/* Counters, in hosts/ina/engine.py's EngineStats order then TransportStats' and progress:
 * packets_sent, bytes_sent, retransmissions, redone_rounds, results_accepted,
 * packets_ignored, overflow, closings_unanswered, packets_received, bytes_received,
 * packets_foreign, rounds_done, rounds_total. */
void ne_counters(const ne_engine *e, uint64_t *out)
{
    uint64_t values[] = {e->packets_sent, e->bytes_sent, e->retransmissions, e->redone_rounds,
                         e->results_accepted, e->packets_ignored, (uint64_t)e->overflow,
                         e->closings_unanswered, e->packets_received, e->bytes_received, e->packets_foreign,
                         (uint64_t)e->rounds_done, (uint64_t)e->rounds_total};
    memcpy(out, values, sizeof(values));
}

/* The retransmission timer: have_srtt, srtt, rttvar, timeout (get), or set all four. */
void ne_get_timer(const ne_engine *e, double *out)
{
    out[0] = e->timer.have_srtt;
    out[1] = e->timer.srtt;
    out[2] = e->timer.rttvar;
    out[3] = e->timer.timeout;
}

void ne_set_timer(ne_engine *e, const double *in)
{
    e->timer.have_srtt = in[0] != 0;
    e->timer.srtt = in[1];
    e->timer.rttvar = in[2];
    e->timer.timeout = in[3];
}

/* What the last error was about: slot, round, exponent, errno, sending, and the time. */
void ne_error(const ne_engine *e, int64_t *out, double *now)
{
    out[0] = e->error_slot;
    out[1] = e->error_round;
    out[2] = e->error_exponent;
    out[3] = e->error_errno;
    out[4] = e->error_sending;
    *now = e->error_now;
}

/* A slot's round in flight: round (-1: none), version, chunk offset, retries; first_sent. */
void ne_slot_state(const ne_engine *e, uint32_t slot, int64_t *out, double *first_sent)
{
    const ne_slot *s = &e->slots[slot];
    out[0] = s->round;
    out[1] = s->version;
    out[2] = s->chunk_offset;
    out[3] = s->retries;
    *first_sent = s->first_sent;
}

int ne_start(ne_engine *e, double now)
{
    e->out_count = 0;
    for (uint32_t slot = 0; slot < e->window; slot++)
        if (ina_has_round(&e->rounds, slot)) {
            int status = begin_round(e, slot, now, 0);
            if (status)
                return status;
        }
    return (int)e->out_count;
}

int ne_on_packet(ne_engine *e, const uint8_t *data, uint32_t length, double now)
{
    e->out_count = 0;
    if (length < INA_HEADER_LEN) {
        e->packets_ignored++;
        return 0;
    }
    uint32_t first = data[0], exponent = data[1], job = get16(data + 2), index = get16(data + 4);
    uint32_t offset = get32(data + 8), count = get16(data + 12);
    ne_slot *s = index < e->window ? &e->slots[index] : NULL;
    /* K values, or none with the NO_VALUES flag; a round whose values we keep needs them */
    int with_values = length == e->packet_len;
    if (!s || s->round < 0
            || !(with_values || (length == INA_HEADER_LEN && (first & INA_FLAG_NO_VALUES)))
            || ina_msg_type(first) != INA_MSG_RESULT
            || job != e->job_id || (int)ina_version_bit(first) != s->version
            || offset != s->chunk_offset || count != e->k
            || (!with_values && round_keep(e, s->round))) {
        e->packets_ignored++;
        return 0;
    }
    int64_t q = s->round;
    const uint8_t *values = data + INA_HEADER_LEN;
    size_t row = (size_t)e->k * 4;
    int keep = round_keep(e, q);
    if (ina_closing_round(&e->rounds, q)) {
        /* nothing to keep: its result only proves the slot's last real round reached all */
    } else if (e->kind == NE_INT32) {
        if (keep)
            memcpy(e->sums + (size_t)q * row, values, row);
    } else {
        if (q < e->blocks) {
            if (exponent < e->local_exponents[q]) {
                e->error_round = q;
                e->error_exponent = (int32_t)exponent;
                return NE_PROTOCOL;
            }
            e->agreed[q] = (uint8_t)exponent;
        }
        if (q >= (int64_t)e->window && keep)
            memcpy(e->sums + (size_t)(q - e->window) * row, values, row);
    }
    e->results_accepted++;
    if (s->retries == 0)
        ina_timer_sample(&e->timer, now - s->first_sent);
    if (ina_overflow_bit(first))
        e->overflow = 1;
    e->rounds_done++;
    s->round = -1;
    int64_t next = q + e->window;
    if (ina_has_round(&e->rounds, next)) {
        int status = begin_round(e, next, now, 1);
        if (status)
            return status;
    }
    return (int)e->out_count;
}

int ne_on_timer(ne_engine *e, double now)
{
    e->out_count = 0;
    while (e->heap_len && e->heap[0].deadline <= now) {
        ne_entry entry = heap_pop(e);
        if (!entry_live(e, &entry))
            continue;                                  /* answered or already re-armed */
        ne_slot *s = &e->slots[entry.slot];
        int action = ina_on_expiry(s->retries, e->max_retries,
                                   ina_closing_round(&e->rounds, s->round));
        if (action == INA_GIVE_UP) {
            e->closings_unanswered++;          /* every result is in: stop waiting */
            e->rounds_done++;
            s->round = -1;
            continue;
        }
        if (action == INA_STALL) {
            heap_push(e, entry.deadline, entry.sequence, entry.slot);
            e->error_slot = (int32_t)entry.slot;
            e->error_now = now;
            return NE_STALLED;
        }
        s->retries++;
        s->timeout = ina_backoff(s->timeout, e->timer.maximum);
        s->deadline = now + s->timeout;
        s->sequence = e->next_sequence++;
        if (heap_push(e, s->deadline, s->sequence, entry.slot))
            return NE_NOMEM;
        e->retransmissions++;
        count_sent(e, s->lengths[s->current]);
        emit(e, s->packets + (size_t)s->current * e->packet_len, s->lengths[s->current]);
        if (e->redo && ina_redo_previous(s->has_previous, s->retries)) {
            int previous = 1 - s->current;
            e->redone_rounds++;
            count_sent(e, s->lengths[previous]);
            emit(e, s->packets + (size_t)previous * e->packet_len, s->lengths[previous]);
        }
    }
    return (int)e->out_count;
}

/* The earliest live deadline (stale heap tops are dropped), or -1 when none is armed. */
int ne_next_deadline(ne_engine *e, double *deadline)
{
    while (e->heap_len) {
        if (entry_live(e, &e->heap[0])) {
            *deadline = e->heap[0].deadline;
            return 1;
        }
        heap_pop(e);
    }
    return 0;
}

/* ---- the UDP loop (worker.UdpTransport.run with batch I/O) ------------------------------ */
static double monotonic_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* sendmmsg of the outgoing packets to the switch; 0 or -errno. */
static int send_out(ne_engine *e, int fd, const struct sockaddr_in *dst)
{
    struct mmsghdr msgs[NE_MAX_BATCH];
    struct iovec iov[NE_MAX_BATCH];
    uint32_t done = 0;
    while (done < e->out_count) {
        uint32_t batch = e->out_count - done < NE_MAX_BATCH ? e->out_count - done : NE_MAX_BATCH;
        memset(msgs, 0, sizeof(msgs[0]) * batch);
        for (uint32_t i = 0; i < batch; i++) {
            iov[i].iov_base = (void *)e->out_packets[done + i];
            iov[i].iov_len = e->out_lengths[done + i];
            msgs[i].msg_hdr.msg_name = (void *)dst;
            msgs[i].msg_hdr.msg_namelen = sizeof(*dst);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int sent = sendmmsg(fd, msgs, batch, 0);
        if (sent < 0) {
            if (errno == EINTR)
                continue;
            e->error_errno = errno;
            e->error_sending = 1;
            return -errno;
        }
        done += (uint32_t)sent;
    }
    e->out_count = 0;
    return 0;
}

static int send_pending(ne_engine *e, int fd, const struct sockaddr_in *dst,
                        const uint8_t **pending, const uint32_t *lengths, uint32_t *count)
{
    if (!*count)
        return 0;
    memcpy(e->out_packets, pending, *count * sizeof(*pending));
    memcpy(e->out_lengths, lengths, *count * sizeof(*lengths));
    e->out_count = *count;
    *count = 0;
    return send_out(e, fd, dst);
}

/* Run until the engine is done (NE_DONE), `budget` seconds passed (NE_BUDGET: call again, after
 * the caller's progress line), or an error: NE_STALLED / NE_PROTOCOL / NE_RANGE / NE_NOMEM, or
 * -errno of a socket call (error_sending says which side).  `batch` datagrams at most per
 * recvmmsg, each cut at `slot_size` bytes (worker._slot_size).  Datagrams not from
 * switch_ip:switch_port (network order, host order) are counted as foreign and dropped.
 * `start` sends ne_start's packets first.  Waits in ppoll, never spins. */
int ne_run(ne_engine *e, int fd, uint32_t switch_ip, uint16_t switch_port, int batch,
           int slot_size, double budget, int start)
{
    int lengths[NE_MAX_BATCH];
    unsigned int addresses[NE_MAX_BATCH];
    unsigned short ports[NE_MAX_BATCH];
    struct sockaddr_in dst;
    const uint8_t *replies[NE_MAX_BATCH];
    uint32_t reply_lengths[NE_MAX_BATCH];
    if (batch > NE_MAX_BATCH)
        batch = NE_MAX_BATCH;
    if (batch < 1 || slot_size < (int)e->packet_len)
        return -EINVAL;
    if (e->receive_batch != batch || e->receive_slot != slot_size) {
        fio_receiver_free(e->receiver);
        free(e->receive);
        e->receiver = NULL;
        e->receive_batch = e->receive_slot = 0;
        e->receive = malloc((size_t)batch * (size_t)slot_size);
        if (e->receive)
            e->receiver = fio_receiver_new(e->receive, slot_size, batch);
        if (!e->receiver)
            return NE_NOMEM;
        e->receive_batch = batch;
        e->receive_slot = slot_size;
    }
    uint8_t *buffer = e->receive;
    memset(&dst, 0, sizeof(dst));
    dst.sin_family = AF_INET;
    dst.sin_addr.s_addr = switch_ip;
    dst.sin_port = htons(switch_port);
    int status;
    if (start) {
        if ((status = ne_start(e, monotonic_now())) < 0 || (status = send_out(e, fd, &dst)) < 0)
            return status;
    }
    double end = monotonic_now() + budget;
    while (e->rounds_done < e->rounds_total) {
        /* drain: every waiting datagram, up to a batch (fastio.c's recvmmsg), then one
         * sendmmsg for the replies; the results' round trips end when the batch was read */
        int n = fio_receive(e->receiver, fd, lengths, addresses, ports);
        if (n < 0) {
            e->error_errno = -n;
            e->error_sending = 0;
            return n;
        }
        double arrived = monotonic_now();     /* one clock read for the batch: all were in */
        /* Replies leave together after the batch.  A slot's two packet buffers hold its
         * current and previous rounds, so a reply still pending could be rewritten only if
         * its slot advanced again in the same batch: then the pending ones go first. */
        uint32_t pending = 0;
        e->batch_epoch++;
        for (int i = 0; i < n; i++) {
            if (addresses[i] != switch_ip || ports[i] != switch_port) {
                e->packets_foreign++;
                continue;
            }
            uint32_t length = (uint32_t)lengths[i];
            const uint8_t *data = buffer + (size_t)i * (size_t)slot_size;
            e->packets_received++;
            e->bytes_received += length;
            uint32_t seen = length < (uint32_t)slot_size ? length : (uint32_t)slot_size;
            uint32_t index = seen >= INA_HEADER_LEN ? get16(data + 4) : e->window;
            if (index < e->window && e->slots[index].replied_epoch == e->batch_epoch) {
                if ((status = send_pending(e, fd, &dst, replies, reply_lengths, &pending)) < 0)
                    return status;
                e->batch_epoch++;
            }
            if ((status = ne_on_packet(e, data, seen, arrived)) < 0)
                return status;
            if (status > 0) {
                reply_lengths[pending] = e->out_lengths[0];
                replies[pending++] = e->out_packets[0];
                e->slots[index].replied_epoch = e->batch_epoch;
            }
        }
        if ((status = send_pending(e, fd, &dst, replies, reply_lengths, &pending)) < 0)
            return status;
        double deadline, now = monotonic_now();
        int armed = ne_next_deadline(e, &deadline);
        if (armed && deadline <= now) {
            if ((status = ne_on_timer(e, now)) < 0 || (status = send_out(e, fd, &dst)) < 0)
                return status;
            armed = ne_next_deadline(e, &deadline);
        }
        if (e->rounds_done >= e->rounds_total)
            break;
        now = monotonic_now();
        if (now >= end)
            return NE_BUDGET;
        if (n < batch) {                 /* the socket ran empty: sleep until data or a timer */
            double wait = end - now;
            if (armed && deadline - now < wait)
                wait = deadline - now > 0 ? deadline - now : 0;
            struct timespec timeout = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            struct pollfd p = {fd, POLLIN, 0};
            ppoll(&p, 1, &timeout, NULL);
        }
    }
    return NE_DONE;
}
