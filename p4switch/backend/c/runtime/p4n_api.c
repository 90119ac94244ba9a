/*
 * p4n_api.c -- the control-plane entry points Python calls through ctypes (binding.py):
 * registers, counters, table contents, multicast groups, clone sessions, the clock and the
 * message queue.  Each takes the switch's mutex, so the packet thread never sees half an
 * update.  Tables are loaded whole: Python's Table stays the reference for validation and
 * ordering, and hands over its entries already in lookup order.
 */
#include "p4n.h"

#include <stdlib.h>

#define LOCK(sw) pthread_mutex_lock(&(sw)->lock)
#define UNLOCK(sw) pthread_mutex_unlock(&(sw)->lock)

void p4n_set_cpu_port(p4n_switch *sw, int32_t port) { LOCK(sw); sw->cpu_port = port; UNLOCK(sw); }
void p4n_set_fixed_clock(p4n_switch *sw, int64_t us) { LOCK(sw); sw->fixed_clock_us = us; UNLOCK(sw); }
void p4n_lock(p4n_switch *sw) { LOCK(sw); }
void p4n_unlock(p4n_switch *sw) { UNLOCK(sw); }

/* -- registers and counters: indices are checked by Python ---------------------------------- */

uint64_t p4n_register_read(p4n_switch *sw, uint32_t r, uint32_t i) {
    LOCK(sw);
    p4n_register *reg = &sw->registers[r];
    uint64_t v = reg->cells[(size_t)i * reg->stride] & p4n_mask(reg->width);
    UNLOCK(sw);
    return v;
}

void p4n_register_write(p4n_switch *sw, uint32_t r, uint32_t i, uint64_t v) {
    LOCK(sw);
    p4n_register *reg = &sw->registers[r];
    reg->cells[(size_t)i * reg->stride] = reg->is_signed ? (uint64_t)p4n_sext(v, reg->width) : (v & p4n_mask(reg->width));
    UNLOCK(sw);
}

/* Cells of more than 64 bits: `words` words, least significant first, the unsigned pattern. */
void p4n_register_read_words(p4n_switch *sw, uint32_t r, uint32_t i, uint64_t *out) {
    LOCK(sw);
    p4n_register *reg = &sw->registers[r];
    memcpy(out, reg->cells + (size_t)i * reg->stride, reg->words * sizeof(uint64_t));
    UNLOCK(sw);
}

void p4n_register_write_words(p4n_switch *sw, uint32_t r, uint32_t i, const uint64_t *in) {
    LOCK(sw);
    p4n_register *reg = &sw->registers[r];
    uint64_t *cell = reg->cells + (size_t)i * reg->stride;
    memcpy(cell, in, reg->words * sizeof(uint64_t));
    uint32_t top = reg->width - 64 * (reg->words - 1);
    cell[reg->words - 1] &= p4n_mask(top);
    UNLOCK(sw);
}

void p4n_register_reset(p4n_switch *sw, uint32_t r) {
    LOCK(sw);
    p4n_register *reg = &sw->registers[r];
    for (uint32_t i = 0; i < reg->size; i++)
        memset(reg->cells + (size_t)i * reg->stride, 0, reg->words * sizeof(uint64_t));
    UNLOCK(sw);
}

void p4n_counter_read(p4n_switch *sw, uint32_t c, uint32_t i, uint64_t *packets, uint64_t *bytes) {
    LOCK(sw);
    *packets = sw->counters[c].packets[i];
    *bytes = sw->counters[c].bytes[i];
    UNLOCK(sw);
}

void p4n_counter_write(p4n_switch *sw, uint32_t c, uint32_t i, uint64_t packets, uint64_t bytes) {
    LOCK(sw);
    sw->counters[c].packets[i] = packets;
    sw->counters[c].bytes[i] = bytes;
    UNLOCK(sw);
}

void p4n_counter_reset(p4n_switch *sw, uint32_t c) {
    LOCK(sw);
    memset(sw->counters[c].packets, 0, sizeof(uint64_t) * sw->counters[c].size);
    memset(sw->counters[c].bytes, 0, sizeof(uint64_t) * sw->counters[c].size);
    UNLOCK(sw);
}

/* -- meters ---------------------------------------------------------------------------- */

int p4n_meters_alloc(p4n_switch *sw, uint32_t n, const uint32_t *sizes, const int *bytes,
                     uint32_t ndirect) {
    LOCK(sw);
    sw->meters = calloc(n ? n : 1, sizeof(p4n_meter));
    sw->direct_colors = calloc(ndirect ? ndirect : 1, sizeof(uint64_t));
    int failed = !sw->meters || !sw->direct_colors;
    for (uint32_t i = 0; i < n && !failed; i++) {
        sw->meters[i].size = sizes[i];
        sw->meters[i].bytes = bytes[i];
        sw->meters[i].cells = calloc(sizes[i] ? sizes[i] : 1, sizeof(p4n_meter_cell));
        failed = !sw->meters[i].cells;
        sw->nmeters = i + 1;
    }
    sw->ndirect_meters = ndirect;
    UNLOCK(sw);
    return failed ? -1 : 0;
}

/* Configure cell i of meter m afresh (buckets full, as a new configuration), or unconfigure
 * it (configured == 0: every packet GREEN). */
void p4n_meter_set(p4n_switch *sw, uint32_t m, uint32_t i, int configured, uint64_t cir,
                   uint64_t cburst, uint64_t pir, uint64_t pburst) {
    LOCK(sw);
    p4n_meter_cell *cell = &sw->meters[m].cells[i];
    memset(cell, 0, sizeof *cell);
    if (configured) {
        cell->configured = 1;
        cell->rate[0] = pir; cell->burst[0] = pburst; cell->tokens[0] = (int64_t)pburst;
        cell->rate[1] = cir; cell->burst[1] = cburst; cell->tokens[1] = (int64_t)cburst;
    }
    UNLOCK(sw);
}

/* -- packet traces ----------------------------------------------------------------------- */

void p4n_set_tracing(p4n_switch *sw, int on) { LOCK(sw); sw->tracing = on; UNLOCK(sw); }

/* The trace lines gathered so far ("\n"-terminated), taken: their length, or minus the
 * length needed when `cap` is too small (nothing is taken then). */
int64_t p4n_trace_take(p4n_switch *sw, char *buf, uint32_t cap) {
    LOCK(sw);
    uint32_t n = sw->trace_len;
    if (n > cap) {
        UNLOCK(sw);
        return -(int64_t)n;
    }
    if (n) memcpy(buf, sw->trace, n);
    sw->trace_len = 0;
    UNLOCK(sw);
    return n;
}

/* -- parser value sets ------------------------------------------------------------------ */

int p4n_value_sets_alloc(p4n_switch *sw, uint32_t n) {
    LOCK(sw);
    sw->value_sets = calloc(n ? n : 1, sizeof(p4n_value_set));
    sw->nvalue_sets = sw->value_sets ? n : 0;
    UNLOCK(sw);
    return sw->value_sets ? 0 : -1;
}

/* Replace the members of value set k: `words` holds per member nfields values then nfields
 * masks. */
int p4n_value_set_load(p4n_switch *sw, uint32_t k, uint32_t n, uint32_t nfields,
                       const uint64_t *words) {
    uint64_t *copy = calloc((size_t)n * 2 * nfields + 1, sizeof(uint64_t));
    if (!copy) return -1;
    memcpy(copy, words, (size_t)n * 2 * nfields * sizeof(uint64_t));
    LOCK(sw);
    free(sw->value_sets[k].words);
    sw->value_sets[k].words = copy;
    sw->value_sets[k].n = n;
    sw->value_sets[k].nfields = nfields;
    UNLOCK(sw);
    return 0;
}

/* The index of the assert/assume that failed on the latest packet, or -1 (and clear it). */
int32_t p4n_take_assertion(p4n_switch *sw) {
    LOCK(sw);
    int32_t a = sw->assertion;
    sw->assertion = -1;
    UNLOCK(sw);
    return a;
}

/* -- tables ------------------------------------------------------------------------------ */

static void table_free_contents(p4n_table *t) {
    free(t->entries);
    free(t->pool);
    free(t->pool_flags);
    t->pool_flags = NULL;
    for (uint32_t l = 0; l < t->nlevels; l++) free(t->levels[l].slots);
    free(t->levels);
    t->entries = NULL;
    t->pool = NULL;
    t->levels = NULL;
    t->nentries = t->nlevels = 0;
}

static uint64_t hash_key(const uint64_t *k, uint32_t n) {   /* as p4n_runtime.c */
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < n; i++) {
        h ^= k[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 29);
}

/*
 * Replace a table's entries.  kind 1 (levels): entries come grouped by mask, the groups in
 * lookup order (longest prefix first); kind 2 (scan): entries in lookup order.  `flat`
 * holds per entry: action, nargs, args[nargs], its direct meter (configured, then per
 * bucket, peak first: rate, burst, tokens, last), then per key field: value, mask,
 * is_range, lo, hi.  `stats` (3 per entry: packets, bytes, last hit) restores hit counts.
 * Returns 0, or -1 when memory runs out (the table is then empty).
 */
int p4n_table_load(p4n_switch *sw, uint32_t ti, int kind, uint32_t n, const uint64_t *flat,
                   uint64_t flat_len, const uint64_t *stats) {
    LOCK(sw);
    p4n_table *t = &sw->tables[ti];
    table_free_contents(t);
    t->kind = kind;
    uint32_t nk = t->nkeys;
    t->entries = calloc(n ? n : 1, sizeof(p4n_entry));
    t->pool = calloc(flat_len + (uint64_t)n * nk * 2 + 1, sizeof(uint64_t));
    uint8_t *flags = calloc((size_t)n * nk + 1, 1);
    if (!t->entries || !t->pool || !flags) {
        free(flags);
        table_free_contents(t);
        UNLOCK(sw);
        return -1;
    }
    uint64_t *pool = t->pool;
    const uint64_t *p = flat;
    for (uint32_t e = 0; e < n; e++) {
        p4n_entry *en = &t->entries[e];
        en->hit = 1;
        en->action = (uint32_t)*p++;
        uint32_t nargs = (uint32_t)*p++;
        en->args = pool;
        memcpy(pool, p, nargs * sizeof(uint64_t));
        pool += nargs;
        p += nargs;
        en->meter.configured = (uint8_t)*p++;
        for (int b = 0; b < 2; b++) {
            en->meter.rate[b] = *p++;
            en->meter.burst[b] = *p++;
            en->meter.tokens[b] = (int64_t)*p++;
            en->meter.last[b] = *p++;
        }
        en->key = pool; pool += nk;
        en->mask = pool; pool += nk;
        en->lo = pool; pool += nk;
        en->hi = pool; pool += nk;
        en->is_range = flags + (size_t)e * nk;
        for (uint32_t k = 0; k < nk; k++) {
            en->mask[k] = p[1];
            en->key[k] = p[0] & p[1];
            en->is_range[k] = (uint8_t)p[2];
            en->lo[k] = p[3];
            en->hi[k] = p[4];
            p += 5;
        }
        if (stats) {
            en->packets = stats[3 * e];
            en->bytes = stats[3 * e + 1];
            en->last_hit_ns = stats[3 * e + 2];
        }
    }
    t->nentries = n;
    if (kind == 1 && n) {
        /* one level per run of entries with equal masks */
        t->levels = calloc(n, sizeof(p4n_level));
        uint32_t start = 0;
        while (start < n && t->levels) {
            uint32_t end = start + 1;
            while (end < n && !memcmp(t->entries[end].mask, t->entries[start].mask, nk * sizeof(uint64_t)))
                end++;
            p4n_level *lv = &t->levels[t->nlevels++];
            lv->mask = t->entries[start].mask;
            uint32_t slots = 4;
            while (slots < 2 * (end - start)) slots <<= 1;
            lv->nslots = slots;
            lv->slots = calloc(slots, sizeof(uint32_t));
            if (!lv->slots) break;
            for (uint32_t e = start; e < end; e++) {
                uint32_t s = (uint32_t)hash_key(t->entries[e].key, nk) & (slots - 1);
                while (lv->slots[s]) s = (s + 1) & (slots - 1);
                lv->slots[s] = e + 1;
            }
            start = end;
        }
    }
    t->pool_flags = flags;
    UNLOCK(sw);
    return 0;
}

void p4n_table_set_default(p4n_switch *sw, uint32_t ti, uint32_t action, uint32_t nargs,
                           const uint64_t *args) {
    LOCK(sw);
    p4n_table *t = &sw->tables[ti];
    t->default_entry.action = action;
    t->default_entry.hit = 0;
    t->default_entry.args = t->default_args;
    memcpy(t->default_args, args, (nargs < 64 ? nargs : 64) * sizeof(uint64_t));
    UNLOCK(sw);
}

/* Hit statistics of every entry (3 per entry: packets, bytes, last hit in ns), then the
 * default entry's packets and bytes. */
void p4n_table_stats(p4n_switch *sw, uint32_t ti, uint64_t *out) {
    LOCK(sw);
    p4n_table *t = &sw->tables[ti];
    for (uint32_t e = 0; e < t->nentries; e++) {
        out[3 * e] = t->entries[e].packets;
        out[3 * e + 1] = t->entries[e].bytes;
        out[3 * e + 2] = t->entries[e].last_hit_ns;
    }
    out[3 * t->nentries] = t->default_entry.packets;
    out[3 * t->nentries + 1] = t->default_entry.bytes;
    UNLOCK(sw);
}

/* The direct meter state of every entry (4 per entry: tokens and last of each bucket). */
void p4n_table_meters(p4n_switch *sw, uint32_t ti, uint64_t *out) {
    LOCK(sw);
    p4n_table *t = &sw->tables[ti];
    for (uint32_t e = 0; e < t->nentries; e++) {
        for (int b = 0; b < 2; b++) {
            out[4 * e + 2 * b] = (uint64_t)t->entries[e].meter.tokens[b];
            out[4 * e + 2 * b + 1] = t->entries[e].meter.last[b];
        }
    }
    UNLOCK(sw);
}

/* -- replication ------------------------------------------------------------------------ */

static p4n_replicas *make_replicas(uint32_t n, const uint32_t *ports, const uint32_t *rids,
                                   uint32_t truncate) {
    p4n_replicas *r = calloc(1, sizeof(p4n_replicas));
    if (!r) return NULL;
    r->n = n;
    r->truncate = truncate;
    r->ports = calloc(n ? n : 1, sizeof(uint32_t));
    r->rids = calloc(n ? n : 1, sizeof(uint32_t));
    if (!r->ports || !r->rids) {
        free(r->ports);
        free(r->rids);
        free(r);
        return NULL;
    }
    memcpy(r->ports, ports, n * sizeof(uint32_t));
    memcpy(r->rids, rids, n * sizeof(uint32_t));
    return r;
}

static void free_replicas(p4n_replicas *r) {
    if (!r) return;
    free(r->ports);
    free(r->rids);
    free(r);
}

/* Replaces the replicas in *slot (a multicast group's or a clone session's); n < 0 deletes. */
static int set_replicas(p4n_switch *sw, p4n_replicas **slot, int32_t n, const uint32_t *ports,
                        const uint32_t *rids, uint32_t truncate) {
    p4n_replicas *r = n >= 0 ? make_replicas((uint32_t)n, ports, rids, truncate) : NULL;
    if (n >= 0 && !r) return -1;
    LOCK(sw);
    free_replicas(*slot);
    *slot = r;
    UNLOCK(sw);
    return 0;
}

int p4n_group_set(p4n_switch *sw, uint32_t id, int32_t n, const uint32_t *ports, const uint32_t *rids) {
    return set_replicas(sw, &sw->groups[id & 0xFFFF], n, ports, rids, 0);
}

int p4n_session_set(p4n_switch *sw, uint32_t id, int32_t n, const uint32_t *ports,
                    const uint32_t *rids, uint32_t truncate) {
    return set_replicas(sw, &sw->sessions[id & 0xFFFF], n, ports, rids, truncate);
}

/* -- messages (digests) --------------------------------------------------------------------- */

/* 1 and the oldest message (kind, id, bytes) if there is one and it fits, else 0;
 * -1 with *len set when `cap` is too small. */
int p4n_msg_pop(p4n_switch *sw, uint8_t *buf, uint32_t cap, uint32_t *kind, uint32_t *id,
                uint32_t *len) {
    LOCK(sw);
    p4n_msg *m = sw->msg_head;
    if (!m) {
        UNLOCK(sw);
        return 0;
    }
    if (m->len > cap) {
        *len = m->len;
        UNLOCK(sw);
        return -1;
    }
    sw->msg_head = m->next;
    if (!sw->msg_head) sw->msg_tail = NULL;
    sw->msg_count--;
    UNLOCK(sw);
    *kind = m->kind;
    *id = m->id;
    *len = m->len;
    memcpy(buf, m->data, m->len);
    free(m);
    return 1;
}

void p4n_free(p4n_switch *sw) {
    if (!sw) return;
    free(sw->register_cells);
    free(sw->registers);
    for (uint32_t i = 0; i < sw->ncounters; i++) {
        free(sw->counters[i].packets);
        free(sw->counters[i].bytes);
    }
    free(sw->counters);
    for (uint32_t i = 0; i < sw->nmeters; i++) free(sw->meters[i].cells);
    free(sw->meters);
    free(sw->direct_colors);
    free(sw->random_hashes);
    free(sw->trace);
    for (uint32_t i = 0; i < sw->nvalue_sets; i++) free(sw->value_sets[i].words);
    free(sw->value_sets);
    for (uint32_t i = 0; i < sw->ntables; i++) {
        table_free_contents(&sw->tables[i]);
    }
    free(sw->tables);
    for (uint32_t i = 0; i < 65536; i++) {
        free_replicas(sw->groups[i]);
        free_replicas(sw->sessions[i]);
    }
    while (sw->msg_head) {
        p4n_msg *m = sw->msg_head;
        sw->msg_head = m->next;
        free(m);
    }
    if (sw->tm_free) sw->tm_free(sw->tm);
    pthread_mutex_destroy(&sw->lock);
    free(sw);
}
