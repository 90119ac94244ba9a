/*
 * p4x.h -- what a pipeline generated for the XDP back end (emit.py) runs on in the kernel: the
 * names the C emitter's code uses (p4n_ctx, p4n_get_bits, p4n_fields, p4n_hash, ...), written
 * so that the eBPF verifier accepts them.
 *
 * Values are as in the C back end (p4n.h): every bit<W> (W <= 64) a uint64_t holding
 * 0 .. 2^W-1, int<W> an int64_t sign-extended, bool a uint8_t.
 *
 * Memory: the eBPF stack is 512 bytes, so everything of a packet but the small context lives
 * in one per-CPU scratch value (p4x_main.inc): the frame's first P4X_HEAD bytes, copied in
 * with bpf_xdp_load_bytes; the headers, metadata and standard metadata; the deparser's
 * output; the field list of a hash.  Every index into those buffers is masked with
 * P4X_MASK (their size is P4X_HEAD + 16, a power of two plus room for a 9-byte access), which
 * is what lets the verifier prove each access in bounds; the pipeline's own length checks
 * (c->len is at most P4X_HEAD) keep the masked index equal to the real one.
 */
#ifndef P4N_H
#define P4N_H
#define P4X_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

typedef __u8 uint8_t;
typedef __u16 uint16_t;
typedef __u32 uint32_t;
typedef __u64 uint64_t;
typedef __s8 int8_t;
typedef __s16 int16_t;
typedef __s32 int32_t;
typedef __s64 int64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;

/* clang expands small constant memcpy/memset inline for BPF and calls a library for larger
 * ones, which BPF has not: zero larger ones a word at a time (the tail byte by byte). */
static __always_inline void *p4x_memset(void *p, int v, unsigned long n) {
    if (n <= 64) return __builtin_memset(p, v, n);
    __u64 word = (__u8)v * 0x0101010101010101ull, *w = p;
    for (unsigned long i = 0; i < n / 8; i++) w[i] = word;
    for (unsigned long i = n / 8 * 8; i < n; i++) ((__u8 *)p)[i] = (__u8)v;
    return p;
}
#define memcpy __builtin_memcpy
#define memset p4x_memset

#define P4N_DROP_PORT 511
#define P4X_HEAD 2048                     /* the frame head the parser sees */
#define P4X_MASK (P4X_HEAD - 1)
#define P4X_BUF (P4X_HEAD + 16)

#define P4X_PARSER_STEPS 64               /* states one parse may pass */
#define P4X_TOO_MANY_STEPS (-2)          /* c->parser_error when it passes more */

#ifndef P4X_MAX_ARGS
#define P4X_MAX_ARGS 1
#endif

/* The entry a table lookup hands to the action code: a copy of the matched entry's (or the
 * default's) action and arguments. */
typedef struct { uint8_t hit; uint32_t action; uint64_t args[P4X_MAX_ARGS]; } p4n_entry;

/* `unknown` stays 0 (no code writes it); read from the map, it is a number the verifier does
 * not know, which keeps it from following a hash's running value byte by byte. */
typedef struct { uint8_t buf[P4X_BUF]; uint32_t bits; uint32_t pad; uint64_t unknown; } p4n_fields;

/* "The switch" of the generated code: in the kernel only the buffers a packet needs. */
typedef struct { p4n_fields fields; uint8_t out[P4X_BUF]; } p4n_switch;

/* Per pass: numbers only (the buffers are the scratch value's, p4x_state.inc). */
typedef struct {
    uint32_t len;            /* bytes of the frame in the scratch's `in` (at most P4X_HEAD) */
    uint32_t pos;            /* bits consumed by the parser */
    uint32_t plen;           /* packet_length */
    int32_t parser_error;    /* -1: none */
    uint64_t now_us;
    uint32_t out_bits;
    int failed;              /* a stack index out of range: drop */
    int error_from_verify;
} p4n_ctx;

/* Tracing is the user-space back ends' (the emitter writes `0` for the switch's flag). */
static __always_inline void p4n_tracef(p4n_switch *sw, const char *fmt, ...) { }
#define P4N_TRACE(c, ...) do { } while (0)

#include "p4n_values.h"            /* the C back end's, beside p4n.h */

/* `width` (<= 64) bits at bit offset `bit` of `p` (a P4X_BUF buffer), MSB first. */
static __always_inline uint64_t p4n_get_bits(const uint8_t *p, uint32_t bit, uint32_t width) {
    if (width == 0) return 0;
    uint32_t byte = (bit >> 3) & P4X_MASK, shift = bit & 7;
    if (shift == 0 && (width == 8 || width == 16 || width == 32 || width == 64)) {
        /* The common field, whole bytes: one load at any byte offset (clang splits a memcpy
         * of unknown alignment into bytes for BPF; the kernel takes unaligned accesses to map
         * values where the machine has them, as x86-64 and arm64 do). */
        switch (width) {
        case 8: return p[byte];
        case 16: return __builtin_bswap16(*(const __u16 *)(p + byte));
        case 32: return __builtin_bswap32(*(const __u32 *)(p + byte));
        default: return __builtin_bswap64(*(const __u64 *)(p + byte));
        }
    }
    uint32_t nbytes = (shift + width + 7) >> 3;
    uint64_t acc = 0;
#pragma unroll
    for (uint32_t i = 0; i < 8; i++)
        if (i < nbytes) acc = (acc << 8) | p[byte + i];
    if (nbytes <= 8) {
        acc >>= (nbytes * 8 - shift - width);
        return acc & p4n_mask(width);
    }
    /* 9 bytes: shift > 0 and width close to 64 */
    uint64_t v = (acc << shift) | ((uint64_t)p[byte + 8] >> (8 - shift));
    return (v >> (64 - width)) & p4n_mask(width);
}

static __always_inline void p4n_put_bits(uint8_t *p, uint32_t bit, uint32_t width, uint64_t v) {
    v &= p4n_mask(width);
    if ((bit & 7) == 0 && (width == 8 || width == 16 || width == 32 || width == 64)) {
        uint8_t *at = p + ((bit >> 3) & P4X_MASK);    /* one store, as p4n_get_bits loads */
        switch (width) {
        case 8: *at = (uint8_t)v; return;
        case 16: *(__u16 *)at = __builtin_bswap16((__u16)v); return;
        case 32: *(__u32 *)at = __builtin_bswap32((__u32)v); return;
        default: *(__u64 *)at = __builtin_bswap64(v); return;
        }
    }
#pragma unroll
    for (uint32_t n = 0; n < 9; n++) {          /* at most 9 bytes for 64 bits */
        if (width == 0) break;
        uint32_t byte = (bit >> 3) & P4X_MASK, shift = bit & 7;
        uint32_t room = 8 - shift;
        uint32_t take = width < room ? width : room;
        uint32_t part = (uint32_t)((v >> (width - take)) & ((1u << take) - 1));
        uint8_t keep = (uint8_t)~(((1u << take) - 1) << (room - take));
        p[byte] = (uint8_t)((p[byte] & keep) | (part << (room - take)));
        bit += take;
        width -= take;
    }
}

/* A run-time index into an array of n, bounded where it is used (the verifier cannot carry a
 * check made on a value clang reloads from memory); callers have checked i < n already. */
static __always_inline __u64 p4x_idx(__u64 i, __u64 n) {
    asm volatile("" : "+r"(i));
    return i < n ? i : 0;
}

/* -- field lists for hashes and checksums: fields packed MSB first ------------------------- */

static __always_inline void p4n_fields_add(p4n_fields *f, uint64_t v, uint32_t width) {
    uint32_t at = ((f->bits >> 3) + ((f->bits & 7) ? 1 : 0)) & P4X_MASK;
#pragma unroll
    for (uint32_t i = 0; i < 9; i++) f->buf[at + i] = 0;
    p4n_put_bits(f->buf, f->bits, width, v);
    f->bits += width;
}

enum { P4N_CRC16, P4N_CRC32, P4N_CSUM16, P4N_XOR16, P4N_IDENTITY, P4N_CRC16_CUSTOM,
       P4N_CRC32_CUSTOM, P4N_RANDOM };

struct p4x_hash_loop { const p4n_fields *f; uint32_t n; uint64_t r; int algorithm; };

static long p4x_hash_byte(uint32_t i, void *arg) {
    struct p4x_hash_loop *h = arg;
    if (i >= h->n) return 1;
    uint32_t at = i & P4X_MASK;
    uint64_t d = h->f->buf[at];
    if (h->algorithm == P4N_CRC16) {
        uint64_t r = h->r ^ d;
#pragma unroll
        for (int b = 0; b < 8; b++) r = (r >> 1) ^ (0xA001u & -(r & 1));   /* no branch */
        h->r = r & 0xFFFF;
    } else if (h->algorithm == P4N_CRC32) {
        uint64_t r = h->r ^ d;
#pragma unroll
        for (int b = 0; b < 8; b++) r = (r >> 1) ^ (0xEDB88320u & -(r & 1));
        h->r = r & 0xFFFFFFFFu;
    } else if (h->algorithm == P4N_CSUM16 || h->algorithm == P4N_XOR16) {
        uint64_t word = (i & 1) ? d : d << 8;       /* zero-padded on the right */
        h->r = h->algorithm == P4N_CSUM16 ? h->r + word : h->r ^ word;
    } else if (i < 8) {                              /* identity: the first 8 bytes */
        h->r = (h->r << 8) | d;
    }
    return 0;
}

/* The runtime's algorithms (runtime/algorithms.py, p4n_runtime.c) over a field list. */
static __noinline uint64_t p4n_hash(int algorithm, p4n_fields *f) {
    struct p4x_hash_loop h = { f, ((f->bits + 7) >> 3) & (P4X_HEAD * 2 - 1), f->unknown,
                               algorithm };
    if (h.n > P4X_HEAD) h.n = P4X_HEAD;
    if (algorithm == P4N_CRC32) h.r ^= 0xFFFFFFFFu;
    bpf_loop(P4X_HEAD, p4x_hash_byte, &h, 0);
    if (algorithm == P4N_CRC32) return h.r ^ 0xFFFFFFFFu;
    if (algorithm == P4N_CSUM16) {
        uint64_t sum = h.r;
        sum = (sum & 0xFFFF) + (sum >> 16);
        sum = (sum & 0xFFFF) + (sum >> 16);
        sum = (sum & 0xFFFF) + (sum >> 16);
        return (~sum) & 0xFFFF;
    }
    return h.r;
}

static __always_inline uint64_t p4n_hash_value(uint64_t h, uint64_t base, uint64_t maximum) {
    return maximum ? base + h % maximum : base;
}

/* -- per-CPU counters ---------------------------------------------------------------------- */

struct p4x_cell { uint64_t packets, bytes; };

#define P4X_COUNT(map, index, nbytes) do { \
    __u32 _k = (__u32)(index); \
    struct p4x_cell *_cell = bpf_map_lookup_elem(&(map), &_k); \
    if (_cell) { _cell->packets++; _cell->bytes += (nbytes); } \
} while (0)

#endif
