/*
 * p4n_runtime.c -- the state behind generated pipelines: hashes and checksums (the same
 * algorithms as runtime/algorithms.py), table lookup, the clock, the message queue to
 * Python (packet-ins, digests) and allocation.  Control-plane entry points: p4n_api.c.
 */
#include "p4n.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* -- hashes ---------------------------------------------------------------------------- */

static uint32_t crc32_table[256];
static uint16_t crc16_table[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void make_crc_tables(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r = b;
        for (int i = 0; i < 8; i++) r = (r & 1) ? (r >> 1) ^ 0xEDB88320u : r >> 1;
        crc32_table[b] = r;
        uint16_t s = (uint16_t)b;
        for (int i = 0; i < 8; i++) s = (s & 1) ? (uint16_t)((s >> 1) ^ 0xA001u) : (uint16_t)(s >> 1);
        crc16_table[b] = s;
    }
}

uint64_t p4n_hash(int algorithm, const p4n_fields *f) {
    uint32_t n = (f->bits + 7) >> 3;
    const uint8_t *d = f->buf;
    switch (algorithm) {
    case P4N_CRC16: {
        pthread_once(&tables_once, make_crc_tables);
        uint16_t r = 0;
        for (uint32_t i = 0; i < n; i++) r = (uint16_t)(crc16_table[(r ^ d[i]) & 0xFF] ^ (r >> 8));
        return r;
    }
    case P4N_CRC32: {
        pthread_once(&tables_once, make_crc_tables);
        uint32_t r = 0xFFFFFFFFu;
        for (uint32_t i = 0; i < n; i++) r = crc32_table[(r ^ d[i]) & 0xFF] ^ (r >> 8);
        return r ^ 0xFFFFFFFFu;
    }
    case P4N_CSUM16: {
        /* whole 16-bit words: the bit string is zero-padded on the right */
        uint64_t sum = 0;
        uint32_t words = (f->bits + 15) >> 4;
        for (uint32_t i = 0; i < words; i++) {
            uint32_t hi = 2 * i < n ? d[2 * i] : 0, lo = 2 * i + 1 < n ? d[2 * i + 1] : 0;
            sum += (hi << 8) | lo;
        }
        while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
        return (~sum) & 0xFFFF;
    }
    case P4N_XOR16: {
        uint64_t r = 0;
        for (uint32_t i = 0; i < n; i += 2) r ^= ((uint64_t)d[i] << 8) | (i + 1 < n ? d[i + 1] : 0);
        return r;
    }
    case P4N_IDENTITY: {
        uint64_t r = 0;
        for (uint32_t i = 0; i < n && i < 8; i++) r = (r << 8) | d[i];
        return r;
    }
    default:
        return 0;
    }
}

/* -- decimal text of multi-word values (digest traces, log_msg) -------------------------- */

size_t p4n_words_dec(const uint64_t *words, uint32_t n, char *out, size_t cap) {
    uint64_t v[64];
    char digits[1300];
    size_t nd = 0;
    if (n > 64) n = 64;
    memcpy(v, words, n * sizeof(uint64_t));
    for (;;) {                  /* divide by 10^19 until zero, 19 digits at a time */
        unsigned __int128 rem = 0;
        int nonzero = 0;
        for (uint32_t i = n; i-- > 0;) {
            unsigned __int128 cur = (rem << 64) | v[i];
            v[i] = (uint64_t)(cur / 10000000000000000000ull);
            rem = cur % 10000000000000000000ull;
            nonzero |= v[i] != 0;
        }
        uint64_t chunk = (uint64_t)rem;
        for (int d = 0; d < 19 && (nonzero || chunk); d++) {
            digits[nd++] = (char)('0' + chunk % 10);
            chunk /= 10;
        }
        if (!nonzero) break;
    }
    if (nd == 0) digits[nd++] = '0';
    size_t len = 0;
    while (nd > 0 && len + 1 < cap) out[len++] = digits[--nd];
    if (cap) out[len] = 0;
    return len;
}

/* -- tables ---------------------------------------------------------------------------- */

static inline uint64_t hash_key(const uint64_t *k, uint32_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < n; i++) {
        h ^= k[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 29);
}

static int words_cmp(const uint64_t *a, const uint64_t *b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

p4n_entry *p4n_table_lookup(p4n_table *t, const uint64_t *key) {
    uint32_t nk = t->nkeys;
    if (t->kind == 1) {
        uint64_t masked[64];
        for (uint32_t l = 0; l < t->nlevels; l++) {
            p4n_level *lv = &t->levels[l];
            for (uint32_t i = 0; i < nk; i++) masked[i] = key[i] & lv->mask[i];
            uint32_t slot = (uint32_t)hash_key(masked, nk) & (lv->nslots - 1);
            for (;;) {
                uint32_t e = lv->slots[slot];
                if (!e) break;
                p4n_entry *en = &t->entries[e - 1];
                if (!memcmp(en->key, masked, nk * sizeof(uint64_t))) return en;
                slot = (slot + 1) & (lv->nslots - 1);
            }
        }
    } else if (t->kind == 2) {
        for (uint32_t e = 0; e < t->nentries; e++) {
            p4n_entry *en = &t->entries[e];
            uint32_t i;
            for (i = 0; i < nk; i++) {
                if (en->is_range[i] > 1) {      /* a range over is_range[i] words, high first */
                    uint32_t n = en->is_range[i];
                    if (words_cmp(key + i, en->lo + i, n) < 0 ||
                        words_cmp(key + i, en->hi + i, n) > 0) break;
                    i += n - 1;
                } else if (en->is_range[i]) {
                    if (key[i] < en->lo[i] || key[i] > en->hi[i]) break;
                } else if ((key[i] & en->mask[i]) != en->key[i]) {
                    break;
                }
            }
            if (i == nk) return en;
        }
    }
    return &t->default_entry;
}

/* -- random(): Python's random.Random (MT19937 seeded by init_by_array, randint through
 *    getrandbits with rejection), so both back ends draw the same numbers for a seed ------- */

static void mt_init_genrand(uint32_t *mt, uint32_t s) {
    mt[0] = s;
    for (uint32_t i = 1; i < 624; i++) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i;
}

static void mt_seed(p4n_mt *state, const uint32_t *key, uint32_t len) {
    uint32_t *mt = state->mt;
    mt_init_genrand(mt, 19650218u);
    uint32_t i = 1, j = 0;
    if (len == 0) len = 1;
    for (uint32_t k = 624 > len ? 624 : len; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + j;
        i++; j++;
        if (i >= 624) { mt[0] = mt[623]; i = 1; }
        if (j >= len) j = 0;
    }
    for (uint32_t k = 623; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - i;
        i++;
        if (i >= 624) { mt[0] = mt[623]; i = 1; }
    }
    mt[0] = 0x80000000u;
    state->index = 624;
}

/* Seed random() and every `random` hash alike (each draws from a stream of its own, as every
 * call site of the Python back end has its own random.Random(seed)). */
int p4n_random_seed(p4n_switch *sw, const uint32_t *key, uint32_t len, uint32_t nhashes) {
    pthread_mutex_lock(&sw->lock);
    mt_seed(&sw->rng_state, key, len);
    free(sw->random_hashes);
    sw->random_hashes = calloc(nhashes ? nhashes : 1, sizeof(p4n_mt));
    for (uint32_t h = 0; sw->random_hashes && h < nhashes; h++)
        sw->random_hashes[h] = sw->rng_state;
    pthread_mutex_unlock(&sw->lock);
    return sw->random_hashes ? 0 : -1;
}

static uint32_t mt_next(p4n_mt *state) {
    uint32_t *mt = state->mt, y;
    static const uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
    if (state->index >= 624) {
        int kk;
        for (kk = 0; kk < 624 - 397; kk++) {
            y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
            mt[kk] = mt[kk + 397] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; kk < 623; kk++) {
            y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
            mt[kk] = mt[kk + (397 - 624)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        y = (mt[623] & 0x80000000u) | (mt[0] & 0x7fffffffu);
        mt[623] = mt[396] ^ (y >> 1) ^ mag01[y & 1u];
        state->index = 0;
    }
    y = mt[state->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

static uint64_t mt_getrandbits(p4n_mt *state, uint32_t k) {   /* 1 <= k <= 64 */
    if (k <= 32) return mt_next(state) >> (32 - k);
    uint64_t low = mt_next(state);                   /* the first word is the low one */
    uint64_t high = mt_next(state) >> (64 - k);
    return low | (high << 32);
}

/* randint(lo, hi) of Python's Random; lo when hi < lo (PacketState.random). */
uint64_t p4n_random(p4n_switch *sw, uint64_t lo, uint64_t hi) {
    if (hi < lo) return lo;
    uint64_t n = hi - lo + 1;
    if (n == 0) return mt_getrandbits(&sw->rng_state, 64);        /* the full 64-bit range */
    uint32_t k = 64 - (uint32_t)__builtin_clzll(n);
    uint64_t r = mt_getrandbits(&sw->rng_state, k);
    while (r >= n) r = mt_getrandbits(&sw->rng_state, k);
    return lo + r;
}

/* randint(lo, hi) on values of `n` words (least significant first) into `out`: Python's
 * _randbelow -- getrandbits(k) fills 32-bit words low first, the top one shifted. */
void p4n_random_words(p4n_switch *sw, const uint64_t *lo, const uint64_t *hi, uint32_t n,
                      uint64_t *out) {
    uint64_t range[65] = {0}, r[65];
    if (n > 64) n = 64;
    int above = 0;                         /* hi < lo: lo */
    for (uint32_t i = n; i-- > 0;)
        if (hi[i] != lo[i]) { above = hi[i] > lo[i]; break; }
    memcpy(out, lo, n * sizeof(uint64_t));
    if (!above && memcmp(hi, lo, n * sizeof(uint64_t))) return;
    unsigned __int128 borrow = 0, carry = 1;  /* range = hi - lo + 1, over n + 1 words */
    for (uint32_t i = 0; i <= n; i++) {
        unsigned __int128 d = (unsigned __int128)(i < n ? hi[i] : 0) - (i < n ? lo[i] : 0) - borrow;
        borrow = (d >> 64) ? 1 : 0;
        unsigned __int128 v = (uint64_t)d + carry;
        range[i] = (uint64_t)v;
        carry = v >> 64;
    }
    uint32_t top = n + 1;
    while (top > 0 && !range[top - 1]) top--;
    uint32_t k = 64 * (top - 1) + (64 - (uint32_t)__builtin_clzll(range[top - 1]));
    for (;;) {
        memset(r, 0, sizeof r);
        uint32_t left = k;
        for (uint32_t w = 0; left > 0; w++) {
            uint32_t v = mt_next(&sw->rng_state);
            if (left < 32) { v >>= (32 - left); left = 0; } else left -= 32;
            r[w / 2] |= (uint64_t)v << (32 * (w % 2));
        }
        int below = 0;                     /* r < range? */
        for (uint32_t i = top; i-- > 0;)
            if (r[i] != range[i]) { below = r[i] < range[i]; break; }
        if (below) break;
    }
    unsigned __int128 sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        sum += (unsigned __int128)lo[i] + r[i];
        out[i] = (uint64_t)sum;
        sum >>= 64;
    }
}

/* The `random` hash algorithm of call site h: getrandbits(64), whatever the data. */
uint64_t p4n_random_hash(p4n_switch *sw, uint32_t h) {
    return mt_getrandbits(&sw->random_hashes[h], 64);
}

/* -- packet traces: lines gathered per packet, taken by Python (binding.py) ------------- */

void p4n_tracef(p4n_switch *sw, const char *fmt, ...) {
    va_list args;
    for (int attempt = 0; attempt < 2; attempt++) {
        uint32_t room = sw->trace_cap - sw->trace_len;
        va_start(args, fmt);
        int n = sw->trace ? vsnprintf(sw->trace + sw->trace_len, room, fmt, args) : -1;
        va_end(args);
        if (n >= 0 && (uint32_t)n + 1 < room) {
            sw->trace_len += (uint32_t)n;
            sw->trace[sw->trace_len++] = '\n';
            return;
        }
        uint32_t want = sw->trace_cap * 2 + (n > 0 ? (uint32_t)n : 0) + 4096;
        char *bigger = realloc(sw->trace, want);
        if (!bigger) return;
        sw->trace = bigger;
        sw->trace_cap = want;
    }
}

/* -- clock, messages ------------------------------------------------------------ */

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t p4n_now_us(p4n_switch *sw) {
    if (sw->fixed_clock_us >= 0) return (uint64_t)sw->fixed_clock_us;
    return (monotonic_ns() - sw->clock_origin_ns) / 1000;
}

void p4n_queue_msg(p4n_switch *sw, uint32_t kind, uint32_t id, const uint8_t *data, uint32_t len) {
    if (sw->msg_count >= 65536) {
        sw->msg_dropped++;
        return;
    }
    p4n_msg *m = malloc(sizeof(p4n_msg) + len);
    if (!m) {
        sw->msg_dropped++;
        return;
    }
    m->next = NULL;
    m->kind = kind;
    m->id = id;
    m->len = len;
    memcpy(m->data, data, len);
    if (sw->msg_tail) sw->msg_tail->next = m;
    else sw->msg_head = m;
    sw->msg_tail = m;
    sw->msg_count++;
}

/* -- allocation ----------------------------------------------------------------------- */

p4n_switch *p4n_switch_alloc(uint32_t nregisters, const uint32_t *reg_sizes,
                             const uint32_t *reg_widths, const int *reg_signed,
                             const uint32_t *reg_bases, const uint32_t *reg_strides,
                             uint64_t reg_cell_words, uint32_t ncounters, const uint32_t *counter_sizes,
                             uint32_t ntables, const uint32_t *table_keys) {
    p4n_switch *sw = calloc(1, sizeof(p4n_switch));
    if (!sw) return NULL;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&sw->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    sw->cpu_port = -1;
    sw->assertion = -1;
    sw->fixed_clock_us = -1;
    sw->clock_origin_ns = monotonic_ns();
    sw->rng = 0x853c49e6748fea9bull;
    sw->nregisters = nregisters;
    sw->registers = calloc(nregisters ? nregisters : 1, sizeof(p4n_register));
    sw->register_cells = calloc(reg_cell_words ? reg_cell_words : 1, sizeof(p4n_cell));
    if (!sw->registers || !sw->register_cells) {
        free(sw->registers);
        free(sw->register_cells);
        free(sw);
        return NULL;
    }
    for (uint32_t i = 0; i < nregisters; i++) {
        sw->registers[i].size = reg_sizes[i];
        sw->registers[i].width = reg_widths[i];
        sw->registers[i].is_signed = reg_signed[i];
        sw->registers[i].words = reg_widths[i] > 64 ? (reg_widths[i] + 63) / 64 : 1;
        sw->registers[i].cells = &sw->register_cells[reg_bases[i]].v;
        sw->registers[i].stride = reg_strides[i];
    }
    sw->ncounters = ncounters;
    sw->counters = calloc(ncounters ? ncounters : 1, sizeof(p4n_counter));
    for (uint32_t i = 0; i < ncounters; i++) {
        sw->counters[i].size = counter_sizes[i];
        sw->counters[i].packets = calloc(counter_sizes[i] ? counter_sizes[i] : 1, sizeof(uint64_t));
        sw->counters[i].bytes = calloc(counter_sizes[i] ? counter_sizes[i] : 1, sizeof(uint64_t));
    }
    sw->ntables = ntables;
    sw->tables = calloc(ntables ? ntables : 1, sizeof(p4n_table));
    for (uint32_t i = 0; i < ntables; i++) {
        sw->tables[i].nkeys = table_keys[i];
        sw->tables[i].default_entry.args = sw->tables[i].default_args;
    }
    return sw;
}
