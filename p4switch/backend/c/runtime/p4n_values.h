/*
 * p4n_values.h -- the value helpers every generated pipeline uses, the C back end's (p4n.h)
 * and the XDP back end's (backend/xdp/runtime/p4x.h) alike: masks, sign extension, and the
 * Python back end's division, shifts and saturation on uint64_t/int64_t values. The includer
 * defines the fixed-width types first.
 */
#ifndef P4N_VALUES_H
#define P4N_VALUES_H

static inline uint64_t p4n_mask(uint32_t width) {
    return width >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);
}

static inline int64_t p4n_sext(uint64_t v, uint32_t width) {
    if (width >= 64) return (int64_t)v;
    uint32_t s = 64 - width;
    return (int64_t)(v << s) >> s;
}

/* -- arithmetic helpers (the Python back end's _div/_mod/_shl and saturation) -------------- */

static inline uint64_t p4n_udiv(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t p4n_umod(uint64_t a, uint64_t b) { return b ? a % b : 0; }
static inline int64_t p4n_sdiv(int64_t a, int64_t b) {     /* floor division, as Python */
    if (!b) return 0;
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}
static inline int64_t p4n_smod(int64_t a, int64_t b) {
    if (!b) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static inline uint64_t p4n_ushl(uint64_t a, uint64_t b, uint32_t width) {
    return b < width && b < 64 ? (a << b) & p4n_mask(width) : 0;
}
static inline int64_t p4n_sshl(int64_t a, uint64_t b, uint32_t width) {
    return b < width && b < 64 ? p4n_sext((uint64_t)a << b, width) : 0;
}
static inline uint64_t p4n_ushr(uint64_t a, uint64_t b) { return b < 64 ? a >> b : 0; }
static inline int64_t p4n_sshr(int64_t a, uint64_t b) { return b < 64 ? a >> b : (a < 0 ? -1 : 0); }
static inline uint64_t p4n_usat(__int128 v, uint32_t width) {
    __int128 hi = (__int128)p4n_mask(width);
    return v < 0 ? 0 : (v > hi ? (uint64_t)hi : (uint64_t)v);
}
static inline int64_t p4n_ssat(__int128 v, uint32_t width) {
    __int128 hi = ((__int128)1 << (width - 1)) - 1, lo = -((__int128)1 << (width - 1));
    return (int64_t)(v < lo ? lo : (v > hi ? hi : v));
}
/* For widths up to the emitter's SAT64_WIDTH (c/exprs.py), where the sum or difference of
 * two values fits in 64 bits: no 128-bit arithmetic (which eBPF does in many instructions). */
static inline uint64_t p4n_usat64(int64_t v, uint32_t width) {
    int64_t hi = (int64_t)p4n_mask(width);
    return v < 0 ? 0 : (uint64_t)(v > hi ? hi : v);
}
static inline int64_t p4n_ssat64(int64_t v, uint32_t width) {
    int64_t hi = ((int64_t)1 << (width - 1)) - 1, lo = -hi - 1;
    return v < lo ? lo : (v > hi ? hi : v);
}

#endif
