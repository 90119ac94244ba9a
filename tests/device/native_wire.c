/* Test support for the native packet loop (p4switch/backend/c/runtime/io.h): a "wire"
 * pipeline that forwards port a <-> port b and sends frames whose first byte is 0xff to the
 * CPU port; a frame whose first byte is 0xfe goes out 16 * (second byte) times (a fan-out,
 * e.g. to fill transmit batches); frames from any other port are dropped as an internal
 * error (-1). */
#include <stdint.h>
#include <stdlib.h>

#include "io.h"

struct wire {
    uint32_t a, b, cpu;
    uint64_t frames;      /* frames processed (atomic: several workers may call it) */
};

void *wire_new(uint32_t a, uint32_t b, uint32_t cpu)
{
    struct wire *w = calloc(1, sizeof(*w));
    if (w) {
        w->a = a;
        w->b = b;
        w->cpu = cpu;
    }
    return w;
}

void wire_free(void *w)
{
    free(w);
}

uint64_t wire_frames(void *w)
{
    return __atomic_load_n(&((struct wire *)w)->frames, __ATOMIC_RELAXED);
}

int wire_process(void *pipeline, uint32_t port, const uint8_t *data, uint32_t len,
                 p4io_emit_fn emit, void *emit_ctx)
{
    struct wire *w = pipeline;
    __atomic_fetch_add(&w->frames, 1, __ATOMIC_RELAXED);
    if (len > 0 && data[0] == 0xff) {
        emit(emit_ctx, w->cpu, data, len);
        return 0;
    }
    uint32_t out = port == w->a ? w->b : port == w->b ? w->a : UINT32_MAX;
    if (out == UINT32_MAX)
        return -1;
    uint32_t copies = len > 1 && data[0] == 0xfe ? 16u * data[1] : 1;
    for (uint32_t i = 0; i < copies; i++)
        emit(emit_ctx, out, data, len);
    return 0;
}
