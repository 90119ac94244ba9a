/*
 * p4n_big.h -- values wider than 128 bits (bit<W>/int<W>, W > 128) for generated pipelines.
 *
 * A p4n_big holds P4N_BIG_LIMBS 64-bit limbs, least significant first; the pipeline defines
 * P4N_BIG_LIMBS (enough for its widest value) before including this file.  Every value is
 * kept as its W-bit two's complement pattern with the bits above W zero -- also int<W> --,
 * so equality is limb equality and each operation masks its result to W bits: the Python
 * back end's wrap-around, shifts and comparisons, on patterns.  (Signed / and % are not
 * here: the front end forbids them.)
 */
#ifndef P4N_BIG_H
#define P4N_BIG_H

#include "p4n.h"

#ifndef P4N_BIG_LIMBS
#error "P4N_BIG_LIMBS must be defined before p4n_big.h"
#endif

#define P4N_BIG_N P4N_BIG_LIMBS
typedef struct { uint64_t w[P4N_BIG_N]; } p4n_big;

static inline p4n_big p4n_big_mask(p4n_big a, uint32_t width) {
    for (uint32_t i = 0; i < P4N_BIG_N; i++) {
        uint32_t lo = 64 * i;
        if (lo >= width) a.w[i] = 0;
        else if (width - lo < 64) a.w[i] &= ((uint64_t)1 << (width - lo)) - 1;
    }
    return a;
}

static inline int p4n_big_bit(p4n_big a, uint32_t bit) {
    return bit < 64 * P4N_BIG_N ? (int)((a.w[bit / 64] >> (bit % 64)) & 1) : 0;
}

/* The unsigned 128-bit value `v` as a W-bit pattern. */
static inline p4n_big p4n_big_u128(p4n_u128 v, uint32_t width) {
    p4n_big r = {{0}};
    r.w[0] = (uint64_t)v;
    if (P4N_BIG_N > 1) r.w[1] = (uint64_t)(v >> 64);
    return p4n_big_mask(r, width);
}

/* The signed 128-bit value `v`, sign-extended, as a W-bit pattern. */
static inline p4n_big p4n_big_s128(p4n_s128 v, uint32_t width) {
    p4n_big r;
    uint64_t fill = v < 0 ? ~(uint64_t)0 : 0;
    for (uint32_t i = 0; i < P4N_BIG_N; i++) r.w[i] = fill;
    r.w[0] = (uint64_t)v;
    if (P4N_BIG_N > 1) r.w[1] = (uint64_t)((p4n_u128)v >> 64);
    return p4n_big_mask(r, width);
}

/* The low 128 bits (what a cast to a narrower type keeps). */
static inline p4n_u128 p4n_big_lo128(p4n_big a) {
    return P4N_U128(P4N_BIG_N > 1 ? a.w[1] : 0, a.w[0]);
}

/* A shift amount: saturated to 2^64 - 1 (every width is smaller). */
static inline uint64_t p4n_big_amount(p4n_big a) {
    for (uint32_t i = 1; i < P4N_BIG_N; i++)
        if (a.w[i]) return ~(uint64_t)0;
    return a.w[0];
}
static inline uint64_t p4n_u128_amount(p4n_u128 a) {
    return (a >> 64) ? ~(uint64_t)0 : (uint64_t)a;
}

/* The W-bit pattern `a` of an int<W>, sign-extended to `to` bits. */
static inline p4n_big p4n_big_sext(p4n_big a, uint32_t width, uint32_t to) {
    if (width > 0 && p4n_big_bit(a, width - 1)) {
        for (uint32_t i = 0; i < P4N_BIG_N; i++) {
            uint32_t lo = 64 * i;
            if (lo >= width) a.w[i] = ~(uint64_t)0;
            else if (width - lo < 64) a.w[i] |= ~(uint64_t)0 << (width - lo);
        }
    }
    return p4n_big_mask(a, to);
}

static inline int p4n_big_is_zero(p4n_big a) {
    for (uint32_t i = 0; i < P4N_BIG_N; i++)
        if (a.w[i]) return 0;
    return 1;
}

static inline int p4n_big_eq(p4n_big a, p4n_big b) {
    return !memcmp(a.w, b.w, sizeof a.w);
}

static inline int p4n_big_ucmp(p4n_big a, p4n_big b) {
    for (uint32_t i = P4N_BIG_N; i-- > 0;)
        if (a.w[i] != b.w[i]) return a.w[i] < b.w[i] ? -1 : 1;
    return 0;
}

static inline int p4n_big_scmp(p4n_big a, p4n_big b, uint32_t width) {
    int na = p4n_big_bit(a, width - 1), nb = p4n_big_bit(b, width - 1);
    if (na != nb) return na ? -1 : 1;
    return p4n_big_ucmp(a, b);
}

static inline p4n_big p4n_big_add(p4n_big a, p4n_big b, uint32_t width) {
    p4n_big r;
    unsigned __int128 carry = 0;
    for (uint32_t i = 0; i < P4N_BIG_N; i++) {
        carry += (unsigned __int128)a.w[i] + b.w[i];
        r.w[i] = (uint64_t)carry;
        carry >>= 64;
    }
    return p4n_big_mask(r, width);
}

static inline p4n_big p4n_big_not(p4n_big a, uint32_t width) {
    for (uint32_t i = 0; i < P4N_BIG_N; i++) a.w[i] = ~a.w[i];
    return p4n_big_mask(a, width);
}

static inline p4n_big p4n_big_neg(p4n_big a, uint32_t width) {
    p4n_big one = {{0}};
    one.w[0] = 1;
    return p4n_big_add(p4n_big_not(a, width), one, width);
}

static inline p4n_big p4n_big_sub(p4n_big a, p4n_big b, uint32_t width) {
    return p4n_big_add(a, p4n_big_neg(b, width), width);
}

static inline p4n_big p4n_big_mul(p4n_big a, p4n_big b, uint32_t width) {
    p4n_big r = {{0}};
    for (uint32_t i = 0; i < P4N_BIG_N; i++) {
        unsigned __int128 carry = 0;
        if (!a.w[i]) continue;
        for (uint32_t j = 0; i + j < P4N_BIG_N; j++) {
            carry += (unsigned __int128)a.w[i] * b.w[j] + r.w[i + j];
            r.w[i + j] = (uint64_t)carry;
            carry >>= 64;
        }
    }
    return p4n_big_mask(r, width);
}

static inline p4n_big p4n_big_and(p4n_big a, p4n_big b) {
    for (uint32_t i = 0; i < P4N_BIG_N; i++) a.w[i] &= b.w[i];
    return a;
}
static inline p4n_big p4n_big_or(p4n_big a, p4n_big b) {
    for (uint32_t i = 0; i < P4N_BIG_N; i++) a.w[i] |= b.w[i];
    return a;
}
static inline p4n_big p4n_big_xor(p4n_big a, p4n_big b) {
    for (uint32_t i = 0; i < P4N_BIG_N; i++) a.w[i] ^= b.w[i];
    return a;
}

/* a << n, masked to `width` (0 once n >= width, as the Python back end's _shl). */
static inline p4n_big p4n_big_shl(p4n_big a, uint64_t n, uint32_t width) {
    p4n_big r = {{0}};
    if (n >= width || n >= 64 * P4N_BIG_N) return r;
    uint32_t limbs = (uint32_t)(n / 64), bits = (uint32_t)(n % 64);
    for (uint32_t i = P4N_BIG_N; i-- > limbs;) {
        uint64_t v = a.w[i - limbs] << bits;
        if (bits && i - limbs > 0) v |= a.w[i - limbs - 1] >> (64 - bits);
        r.w[i] = v;
    }
    return p4n_big_mask(r, width);
}

/* Logical a >> n of a pattern whose bits above the width are zero. */
static inline p4n_big p4n_big_lshr(p4n_big a, uint64_t n) {
    p4n_big r = {{0}};
    if (n >= 64 * P4N_BIG_N) return r;
    uint32_t limbs = (uint32_t)(n / 64), bits = (uint32_t)(n % 64);
    for (uint32_t i = 0; i + limbs < P4N_BIG_N; i++) {
        uint64_t v = a.w[i + limbs] >> bits;
        if (bits && i + limbs + 1 < P4N_BIG_N) v |= a.w[i + limbs + 1] << (64 - bits);
        r.w[i] = v;
    }
    return r;
}

/* Arithmetic a >> n of an int<W> pattern (Python's >> on the value: floor). */
static inline p4n_big p4n_big_ashr(p4n_big a, uint64_t n, uint32_t width) {
    int negative = p4n_big_bit(a, width - 1);
    if (n >= width) return negative ? p4n_big_mask(p4n_big_not((p4n_big){{0}}, width), width)
                                    : (p4n_big){{0}};
    p4n_big r = p4n_big_lshr(a, n);
    if (negative) {       /* the top n bits of the W-bit result are ones */
        p4n_big ones = p4n_big_not((p4n_big){{0}}, width);
        r = p4n_big_or(r, p4n_big_shl(ones, width - n, width));
    }
    return r;
}

/* Unsigned a / b and a % b (0 when b is 0, as the Python back end's _div/_mod). */
static inline void p4n_big_udivmod(p4n_big a, p4n_big b, p4n_big *q, p4n_big *r) {
    p4n_big quot = {{0}}, rem = {{0}};
    if (!p4n_big_is_zero(b)) {
        for (uint32_t bit = 64 * P4N_BIG_N; bit-- > 0;) {
            rem = p4n_big_shl(rem, 1, 64 * P4N_BIG_N);
            rem.w[0] |= (uint64_t)p4n_big_bit(a, bit);
            if (p4n_big_ucmp(rem, b) >= 0) {
                rem = p4n_big_sub(rem, b, 64 * P4N_BIG_N);
                quot.w[bit / 64] |= (uint64_t)1 << (bit % 64);
            }
        }
    }
    if (q) *q = quot;
    if (r) *r = rem;
}

static inline p4n_big p4n_big_udiv(p4n_big a, p4n_big b) {
    p4n_big q;
    p4n_big_udivmod(a, b, &q, NULL);
    return q;
}
static inline p4n_big p4n_big_umod(p4n_big a, p4n_big b) {
    p4n_big r;
    p4n_big_udivmod(a, b, NULL, &r);
    return r;
}

/* Saturating |+| and |-| (unsigned: 0 .. 2^W-1; signed: -2^(W-1) .. 2^(W-1)-1), computed
 * on W + 1 bits (P4N_BIG_LIMBS leaves room for one more bit than the widest value). */
static inline p4n_big p4n_big_usat(p4n_big a, p4n_big b, int subtract, uint32_t width) {
    if (subtract) return p4n_big_ucmp(a, b) < 0 ? (p4n_big){{0}} : p4n_big_sub(a, b, width);
    p4n_big s = p4n_big_add(a, b, width + 1);
    return p4n_big_bit(s, width) ? p4n_big_not((p4n_big){{0}}, width) : s;
}
static inline p4n_big p4n_big_ssat(p4n_big a, p4n_big b, int subtract, uint32_t width) {
    uint32_t w1 = width + 1;
    p4n_big x = p4n_big_sext(a, width, w1), y = p4n_big_sext(b, width, w1);
    p4n_big s = subtract ? p4n_big_sub(x, y, w1) : p4n_big_add(x, y, w1);
    int sign = p4n_big_bit(s, width);
    if (sign == p4n_big_bit(s, width - 1)) return p4n_big_mask(s, width);
    p4n_big max = p4n_big_lshr(p4n_big_not((p4n_big){{0}}, width), 1);
    return sign ? p4n_big_not(max, width) : max;
}

/* Bits lo .. lo + n - 1 of a, as an n-bit pattern. */
static inline p4n_big p4n_big_slice(p4n_big a, uint32_t lo, uint32_t n) {
    return p4n_big_mask(p4n_big_lshr(a, lo), n);
}

/* `a` with bits lo .. lo + n - 1 replaced by `v`. */
static inline p4n_big p4n_big_set_slice(p4n_big a, p4n_big v, uint32_t lo, uint32_t n,
                                        uint32_t width) {
    p4n_big field = p4n_big_shl(p4n_big_not((p4n_big){{0}}, n), lo, width);
    p4n_big keep = p4n_big_not(field, width);
    return p4n_big_or(p4n_big_and(a, keep), p4n_big_and(p4n_big_shl(v, lo, width), field));
}

/* -- packets, field lists, words ---------------------------------------------------------- */

static inline p4n_big p4n_get_bits_big(const uint8_t *p, uint32_t bit, uint32_t width) {
    p4n_big r = {{0}};
    uint32_t i = 0;
    while (width > 0) {           /* the last `take` bits go into limb i */
        uint32_t take = width < 64 ? width : 64;
        r.w[i++] = p4n_get_bits(p, bit + width - take, take);
        width -= take;
    }
    return r;
}

static inline void p4n_put_bits_big(uint8_t *p, uint32_t bit, uint32_t width, p4n_big v) {
    uint32_t top = (width - 1) / 64;
    for (uint32_t i = top + 1; i-- > 0;) {
        uint32_t take = i == top ? width - 64 * top : 64;
        p4n_put_bits(p, bit, take, v.w[i]);
        bit += take;
    }
}

static inline void p4n_fields_add_big(p4n_fields *f, p4n_big v, uint32_t width) {
    uint32_t top = (width - 1) / 64;
    for (uint32_t i = top + 1; i-- > 0;)
        p4n_fields_add(f, v.w[i], i == top ? width - 64 * top : 64);
}

/* The first `n` words (least significant first) of `v` into `out`, and back. */
static inline void p4n_big_to_words(p4n_big v, uint64_t *out, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) out[i] = i < P4N_BIG_N ? v.w[i] : 0;
}
static inline p4n_big p4n_big_from_words(const uint64_t *in, uint32_t n, uint32_t width) {
    p4n_big r = {{0}};
    for (uint32_t i = 0; i < n && i < P4N_BIG_N; i++) r.w[i] = in[i];
    return p4n_big_mask(r, width);
}

/* Words of a table key or value-set key: most significant first (as binding.py splits). */
static inline void p4n_big_key_words(p4n_big v, uint64_t *out, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) out[i] = n - 1 - i < P4N_BIG_N ? v.w[n - 1 - i] : 0;
}

/* -- the text of log_msg values (what the Python back end's log_text_src writes) ---------- */

typedef struct { char buf[16384]; size_t len; } p4n_text;

static inline void p4n_text_str(p4n_text *t, const char *s) {
    size_t n = strlen(s);
    if (n > sizeof t->buf - 1 - t->len) n = sizeof t->buf - 1 - t->len;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = 0;
}
static inline void p4n_text_words(p4n_text *t, const uint64_t *w, uint32_t n) {
    t->len += p4n_words_dec(w, n, t->buf + t->len, sizeof t->buf - t->len);
}
static inline void p4n_text_u128(p4n_text *t, p4n_u128 v) {
    uint64_t w[2] = { (uint64_t)v, (uint64_t)(v >> 64) };
    p4n_text_words(t, w, 2);
}
static inline void p4n_text_big(p4n_text *t, p4n_big v) { p4n_text_words(t, v.w, P4N_BIG_N); }
/* A varbit's value: `n` bytes, most significant first. */
static inline void p4n_text_bytes(p4n_text *t, const uint8_t *data, uint32_t n) {
    uint64_t w[64] = {0};
    for (uint32_t i = 0; i < n && i < 8 * 64; i++) {
        uint32_t bit = 8 * (n - 1 - i);
        w[bit / 64] |= (uint64_t)data[i] << (bit % 64);
    }
    p4n_text_words(t, w, 64);
}

#endif
