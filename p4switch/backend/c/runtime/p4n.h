/*
 * p4n.h -- the C runtime of the native back end: what generated pipelines link with.
 *
 * Values: every bit<W> (W <= 64) is a uint64_t holding 0 .. 2^W-1, every int<W> an int64_t
 * holding the value sign-extended, bool a uint8_t 0/1 -- the same ranges as the Python back
 * end's ints, so each operation wraps into its type right where it is computed.
 *
 * State owned here (registers, counters, tables, multicast groups, clone sessions) is
 * guarded by the switch's mutex: p4n_process takes it per packet; every control-plane entry
 * point (p4n_api.c) takes it too.
 */
#ifndef P4N_H
#define P4N_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define P4N_DROP_PORT 511
#define P4N_MAX_PASSES 64
#define P4N_MAX_FRAME 65536
#define P4N_MAX_COPIES 1024
#define P4N_MEMBER 0xFFFFFFF0u     /* table entry pointing at an action profile member */
#define P4N_GROUP 0xFFFFFFF1u      /* ... at an action selector group */        /* copies of one received packet in flight (egress queue) */

typedef void (*p4n_emit_fn)(void *emit_ctx, uint32_t port, const uint8_t *data, uint32_t len);

/* -- registers, counters ------------------------------------------------------------------ */

/* A cell of more than 64 bits takes `words` words, least significant first (the unsigned
 * pattern); one of up to 64 bits one word (an int<W> sign-extended).  Cell i starts at
 * cells[i * stride]: every register lies in the switch's one array of register cells, those
 * of one shape interleaved (the emitter's cell_layout), so the generated code indexes that
 * array with constants. */
/* A register cell's word: a type of its own, so that the compiler knows a cell written does
 * not change a header or metadata field (both uint64_t too) it has loaded. */
typedef struct { uint64_t v; } p4n_cell;
typedef struct {
    uint64_t *cells;
    uint32_t size, width;
    int is_signed;
    uint32_t words, stride;
} p4n_register;
typedef struct { uint64_t *packets, *bytes; uint32_t size; } p4n_counter;

/* A two-rate three-colour meter (RFC 2698, colour-blind, as runtime/algorithms.py):
 * bucket 0 is the peak one, 1 the committed one; tokens are credited from a fixed origin. */
typedef struct {
    uint8_t configured;
    uint64_t rate[2], burst[2];
    int64_t tokens[2];
    uint64_t last[2];
} p4n_meter_cell;
typedef struct { p4n_meter_cell *cells; uint32_t size; int bytes; } p4n_meter;

static inline uint64_t p4n_meter_execute(p4n_meter_cell *m, uint64_t now_us, uint64_t cost) {
    if (!m->configured) return 0;                        /* GREEN until configured */
    for (int b = 0; b < 2; b++) {
        uint64_t since = (uint64_t)(((unsigned __int128)now_us * m->rate[b]) / 1000000u);
        __int128 tokens = (__int128)m->tokens[b] + (__int128)since - (__int128)m->last[b];
        if (tokens > (__int128)m->burst[b]) tokens = m->burst[b];
        m->tokens[b] = (int64_t)tokens;
        m->last[b] = since;
        if (m->tokens[b] < (int64_t)cost) return b == 0 ? 2 : 1;   /* RED : YELLOW */
        m->tokens[b] -= (int64_t)cost;
    }
    return 0;
}

/* -- tables: levels of (mask, hash of masked keys) for exact/lpm, an ordered scan for the
 *    others.  Entries come whole from the control plane (p4n_table_load). */

typedef struct {
    uint64_t *key;          /* nkeys values (already masked for levels) */
    uint64_t *mask;         /* scan entries: nkeys masks */
    uint64_t *lo, *hi;      /* scan entries: ranges (lo <= k <= hi) where is_range[i] */
    uint8_t *is_range;
    uint32_t action;
    uint64_t *args;
    uint64_t packets, bytes, last_hit_ns;
    uint8_t hit;
    p4n_meter_cell meter;   /* the entry's direct meter */
} p4n_entry;

typedef struct {
    uint64_t *mask;         /* nkeys */
    uint32_t *slots;        /* open addressing: entry index + 1, 0 = empty */
    uint32_t nslots;
} p4n_level;

typedef struct {
    uint32_t nkeys, nargs_max;
    int kind;               /* 0: no keys, 1: levels, 2: scan */
    uint32_t nentries;
    p4n_entry *entries;
    uint64_t *pool;         /* all entries' arrays */
    uint8_t *pool_flags;    /* all entries' is_range */
    uint32_t nlevels;
    p4n_level *levels;
    p4n_entry default_entry;
    uint64_t default_args[64];
    uint64_t default_packets, default_bytes;
} p4n_table;

/* -- parser value sets: members are (values, masks) over up to P4N_VS_FIELDS key fields -- */

#define P4N_VS_FIELDS 16
typedef struct { uint32_t n, nfields; uint64_t *words; } p4n_value_set;   /* per member: values, masks */

static inline int p4n_value_set_match(const p4n_value_set *vs, const uint64_t *key, uint32_t nkey) {
    for (uint32_t m = 0; m < vs->n; m++) {
        const uint64_t *v = vs->words + (size_t)m * 2 * vs->nfields, *mask = v + vs->nfields;
        uint32_t i;
        for (i = 0; i < nkey && i < vs->nfields; i++)
            if ((key[i] & mask[i]) != (v[i] & mask[i])) break;
        if (i == nkey) return 1;
    }
    return 0;
}

/* -- replication ------------------------------------------------------------------------ */

typedef struct { uint32_t n; uint32_t *ports; uint32_t *rids; uint32_t truncate; } p4n_replicas;

/* -- digests and the CPU port: queued for Python ------------------------------------------ */

typedef struct { uint8_t buf[P4N_MAX_FRAME + 4096]; uint32_t bits; } p4n_fields;

typedef struct { uint32_t mt[624]; uint32_t index; } p4n_mt;

typedef struct p4n_msg { struct p4n_msg *next; uint32_t kind, id, len; uint8_t data[]; } p4n_msg;

typedef struct p4n_switch {
    pthread_mutex_t lock;
    uint32_t nregisters, ncounters, ntables;
    p4n_register *registers;
    p4n_cell *register_cells;
    p4n_counter *counters;
    p4n_table *tables;
    uint32_t nmeters, ndirect_meters;
    p4n_meter *meters;
    uint64_t *direct_colors;         /* colour of each direct meter's latest table hit */
    uint32_t nvalue_sets;
    p4n_value_set *value_sets;
    int32_t assertion;               /* >= 0: the assert/assume that failed (its index) */
    int tracing;                     /* packet trace lines wanted (p4n_tracef) */
    char *trace;
    uint32_t trace_len, trace_cap;
    p4n_mt rng_state;                /* random(): Python's Mersenne Twister, seeded alike */
    p4n_mt *random_hashes;           /* one stream per `random` hash call site */
    p4n_replicas *groups[65536];
    p4n_replicas *sessions[65536];
    int32_t cpu_port;
    uint64_t (*clock_us)(struct p4n_switch *);
    uint64_t clock_origin_ns;
    int64_t fixed_clock_us;          /* >= 0: the clock reads this (tests) */
    uint64_t rng;
    p4n_msg *msg_head, *msg_tail;
    uint32_t msg_count;
    uint64_t msg_dropped;
    uint64_t packets_dropped_internal;
    uint8_t out[P4N_MAX_FRAME + 4096];
    p4n_fields fields;
    void *tm;                        /* the generated traffic manager's queues */
    void (*tm_free)(void *);
} p4n_switch;

/* Per packet pass (one ingress or one egress copy). */
typedef struct {
    p4n_switch *sw;
    const uint8_t *data;
    uint32_t len;            /* bytes */
    uint32_t pos;            /* bits consumed by the parser */
    uint32_t plen;           /* packet_length, for counters and meters */
    int32_t parser_error;    /* -1: none */
    int32_t clone_session, clone_fields, resubmit, recirculate;
    uint32_t truncate;
    uint64_t now_us;
    uint8_t *out;
    uint32_t out_bits;
    const uint8_t *payload;  /* what the parser left, for *_checksum_with_payload */
    uint32_t payload_len;
    int failed;              /* a stack index out of range in a control, or a failed
                                assert/assume: drop */
    int error_from_verify;   /* the parser error came from verify(): traced as its code */
} p4n_ctx;

void p4n_tracef(p4n_switch *sw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define P4N_TRACE(c, ...) do { if ((c)->sw->tracing) p4n_tracef((c)->sw, __VA_ARGS__); } while (0)

/* -- bits in and out of packets ----------------------------------------------------------- */

#include "p4n_values.h"

/* `n` (1..8) bytes at `p` as a big-endian number, and back: whole loads and stores, which
 * fold into one or two instructions where `n` is a constant. */
static inline __attribute__((always_inline)) uint64_t p4n_load_be(const uint8_t *p, uint32_t n) {
    uint16_t v16; uint32_t v32; uint64_t v64;
    switch (n) {
    case 1: return p[0];
    case 2: memcpy(&v16, p, 2); return __builtin_bswap16(v16);
    case 3: memcpy(&v16, p, 2); return (uint64_t)__builtin_bswap16(v16) << 8 | p[2];
    case 4: memcpy(&v32, p, 4); return __builtin_bswap32(v32);
    case 8: memcpy(&v64, p, 8); return __builtin_bswap64(v64);
    default: break;  /* 5 to 7: four bytes, then the rest */
    }
    memcpy(&v32, p, 4);
    uint64_t hi = (uint64_t)__builtin_bswap32(v32) << (8 * (n - 4));
    if (n == 5) return hi | p[4];
    memcpy(&v16, p + 4, 2);
    if (n == 6) return hi | __builtin_bswap16(v16);
    return hi | (uint64_t)__builtin_bswap16(v16) << 8 | p[6];
}
static inline __attribute__((always_inline)) void p4n_store_be(uint8_t *p, uint32_t n, uint64_t v) {
    uint16_t v16; uint32_t v32; uint64_t v64;
    switch (n) {
    case 1: p[0] = (uint8_t)v; return;
    case 2: v16 = __builtin_bswap16((uint16_t)v); memcpy(p, &v16, 2); return;
    case 3: v16 = __builtin_bswap16((uint16_t)(v >> 8)); memcpy(p, &v16, 2); p[2] = (uint8_t)v; return;
    case 4: v32 = __builtin_bswap32((uint32_t)v); memcpy(p, &v32, 4); return;
    case 8: v64 = __builtin_bswap64(v); memcpy(p, &v64, 8); return;
    default: break;  /* 5 to 7 */
    }
    v32 = __builtin_bswap32((uint32_t)(v >> (8 * (n - 4)))); memcpy(p, &v32, 4);
    if (n == 5) { p[4] = (uint8_t)v; return; }
    v16 = __builtin_bswap16((uint16_t)(v >> (8 * (n - 6)))); memcpy(p + 4, &v16, 2);
    if (n == 7) p[6] = (uint8_t)v;
}

/* `width` (1..64) bits at bit `bit` from `h`, MSB first, touching only the bytes they lie in
 * (the others in those bytes keep their bits).  The generated parser and deparser call these
 * for a header at a byte with constant `bit` and `width` (its bytes lie inside the header,
 * which the parser checked is there): each folds into a load or a load, shift and mask. */
static inline __attribute__((always_inline)) uint64_t p4n_field_get(const uint8_t *h, uint32_t bit,
                                                                    uint32_t width) {
    uint32_t byte = bit >> 3, shift = bit & 7, nbytes = (shift + width + 7) >> 3;
    if (nbytes <= 8)
        return p4n_load_be(h + byte, nbytes) >> (nbytes * 8 - shift - width) & p4n_mask(width);
    unsigned __int128 acc = (unsigned __int128)p4n_load_be(h + byte, 8) << 8 | h[byte + 8];
    return (uint64_t)(acc >> (72 - shift - width)) & p4n_mask(width);
}
static inline __attribute__((always_inline)) void p4n_field_put(uint8_t *h, uint32_t bit, uint32_t width,
                                                                uint64_t v) {
    uint32_t byte = bit >> 3, shift = bit & 7, nbytes = (shift + width + 7) >> 3;
    v &= p4n_mask(width);
    if (shift == 0 && (width & 7) == 0) {    /* whole bytes: a store */
        p4n_store_be(h + byte, nbytes, v);
        return;
    }
    if (nbytes <= 8) {      /* the bytes it shares with its neighbours keep their bits */
        uint32_t low = nbytes * 8 - shift - width;
        uint64_t mask = p4n_mask(width) << low;
        uint64_t old = p4n_load_be(h + byte, nbytes);
        p4n_store_be(h + byte, nbytes, (old & ~mask) | (v << low));
        return;
    }
    uint32_t low = 72 - shift - width;       /* 9 bytes */
    unsigned __int128 mask = (unsigned __int128)p4n_mask(width) << low;
    unsigned __int128 old = (unsigned __int128)p4n_load_be(h + byte, 8) << 8 | h[byte + 8];
    unsigned __int128 now = (old & ~mask) | ((unsigned __int128)v << low);
    p4n_store_be(h + byte, 8, (uint64_t)(now >> 8));
    h[byte + 8] = (uint8_t)now;
}

/* The same at a bit offset known only at run time (and of any width up to 64, 0 included):
 * left to the compiler to inline. */
static inline uint64_t p4n_get_bits(const uint8_t *p, uint32_t bit, uint32_t width) {
    return width ? p4n_field_get(p + (bit >> 3), bit & 7, width) : 0;
}

static inline void p4n_put_bits(uint8_t *p, uint32_t bit, uint32_t width, uint64_t v) {
    if (width)
        p4n_field_put(p + (bit >> 3), bit & 7, width, v);
}

/* -- values of 65 to 128 bits (IPv6 addresses, ...) ---------------------------------------- */

typedef unsigned __int128 p4n_u128;
typedef __int128 p4n_s128;
#define P4N_U128(hi, lo) ((((p4n_u128)(hi)) << 64) | (p4n_u128)(lo))

static inline p4n_u128 p4n_mask128(uint32_t width) {
    return width >= 128 ? ~(p4n_u128)0 : ((((p4n_u128)1) << width) - 1);
}
static inline p4n_s128 p4n_sext128(p4n_u128 v, uint32_t width) {
    if (width >= 128) return (p4n_s128)v;
    uint32_t s = 128 - width;
    return (p4n_s128)(v << s) >> s;
}
static inline p4n_u128 p4n_get_bits128(const uint8_t *p, uint32_t bit, uint32_t width) {
    if (width <= 64) return p4n_get_bits(p, bit, width);
    return P4N_U128(p4n_get_bits(p, bit, width - 64), p4n_get_bits(p, bit + width - 64, 64));
}
static inline void p4n_put_bits128(uint8_t *p, uint32_t bit, uint32_t width, p4n_u128 v) {
    if (width <= 64) { p4n_put_bits(p, bit, width, (uint64_t)v); return; }
    p4n_put_bits(p, bit, width - 64, (uint64_t)(v >> 64));
    p4n_put_bits(p, bit + width - 64, 64, (uint64_t)v);
}
static inline p4n_u128 p4n_udiv128(p4n_u128 a, p4n_u128 b) { return b ? a / b : 0; }
static inline p4n_u128 p4n_umod128(p4n_u128 a, p4n_u128 b) { return b ? a % b : 0; }
static inline p4n_u128 p4n_ushl128(p4n_u128 a, p4n_u128 b, uint32_t width) {
    return b < width && b < 128 ? (a << (uint32_t)b) & p4n_mask128(width) : 0;
}
static inline p4n_s128 p4n_sshl128(p4n_s128 a, p4n_u128 b, uint32_t width) {
    return b < width && b < 128 ? p4n_sext128((p4n_u128)a << (uint32_t)b, width) : 0;
}
static inline p4n_u128 p4n_ushr128(p4n_u128 a, p4n_u128 b) { return b < 128 ? a >> (uint32_t)b : 0; }
static inline p4n_s128 p4n_sshr128(p4n_s128 a, p4n_u128 b) {
    return b < 128 ? a >> (uint32_t)b : (a < 0 ? -1 : 0);
}

/* -- field lists for hashes and checksums: fields packed MSB first ------------------------- */

static inline void p4n_fields_add(p4n_fields *f, uint64_t v, uint32_t width) {
    if ((f->bits & 7) == 0) memset(f->buf + (f->bits >> 3), 0, 9);
    else memset(f->buf + (f->bits >> 3) + 1, 0, 9);
    p4n_put_bits(f->buf, f->bits, width, v);
    f->bits += width;
}

static inline void p4n_fields_add128(p4n_fields *f, p4n_u128 v, uint32_t width) {
    if (width <= 64) { p4n_fields_add(f, (uint64_t)v, width); return; }
    p4n_fields_add(f, (uint64_t)(v >> 64), width - 64);
    p4n_fields_add(f, (uint64_t)v, 64);
}

static inline void p4n_fields_add_bytes(p4n_fields *f, const uint8_t *data, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) p4n_fields_add(f, data[i], 8);
}

uint64_t p4n_hash(int algorithm, const p4n_fields *f);
enum { P4N_CRC16, P4N_CRC32, P4N_CSUM16, P4N_XOR16, P4N_IDENTITY, P4N_CRC16_CUSTOM,
       P4N_CRC32_CUSTOM, P4N_RANDOM };

static inline uint64_t p4n_hash_value(uint64_t h, uint64_t base, uint64_t maximum) {
    return maximum ? base + h % maximum : base;
}

/* -- tables -------------------------------------------------------------------------------- */

p4n_entry *p4n_table_lookup(p4n_table *t, const uint64_t *key);

/* -- the rest of the runtime -------------------------------------------------------------- */

uint64_t p4n_now_us(p4n_switch *sw);
uint64_t p4n_random(p4n_switch *sw, uint64_t lo, uint64_t hi);
void p4n_random_words(p4n_switch *sw, const uint64_t *lo, const uint64_t *hi, uint32_t n,
                      uint64_t *out);
int p4n_random_seed(p4n_switch *sw, const uint32_t *key, uint32_t len, uint32_t nhashes);
uint64_t p4n_random_hash(p4n_switch *sw, uint32_t h);
/* `n` words (least significant first) in decimal into `out` (`cap` bytes): its length. */
size_t p4n_words_dec(const uint64_t *words, uint32_t n, char *out, size_t cap);
void p4n_queue_msg(p4n_switch *sw, uint32_t kind, uint32_t id, const uint8_t *data, uint32_t len);
p4n_switch *p4n_switch_alloc(uint32_t nregisters, const uint32_t *reg_sizes,
                             const uint32_t *reg_widths, const int *reg_signed,
                             const uint32_t *reg_bases, const uint32_t *reg_strides,
                             uint64_t reg_cell_words, uint32_t ncounters, const uint32_t *counter_sizes,
                             uint32_t ntables, const uint32_t *table_keys);

enum { P4N_MSG_PACKET_IN = 1, P4N_MSG_DIGEST = 2 };

#endif
