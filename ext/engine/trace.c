/* SPDX-License-Identifier: Apache-2.0 */
/* The trace: a ring of the most recent events and a running 64-bit hash of
 * every decision and event of a run. Two runs of one seed must end with the
 * same hash; the ring is what a failure report shows. Never allocates. */
#include <string.h>

#include "engine.h"

/* A 64-bit mixer (the splitmix64 finaliser): cheap, and every input bit
 * reaches every output bit, so a reordered pair of events changes the hash. */
static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

void askew_trace_reset(struct askew_trace *trace)
{
    trace->hash = 0x6A09E667F3BCC908ULL;
    trace->count = 0;
    memset(trace->ring, 0, sizeof trace->ring);
}

void askew_trace_mix(struct askew_trace *trace, uint64_t value)
{
    trace->hash = mix(trace->hash, value);
}

void askew_trace_record(struct askew_trace *trace, int64_t t_ns, uint32_t kind,
                        int32_t node, uint64_t a, uint64_t b)
{
    struct askew_event *ev = &trace->ring[trace->count % ASKEW_TRACE_RING];
    ev->t_ns = t_ns;
    ev->kind = kind;
    ev->node = node;
    ev->a = a;
    ev->b = b;
    trace->count++;
    uint64_t h = mix(trace->hash, (uint64_t)t_ns);
    h = mix(h, ((uint64_t)kind << 32) | (uint32_t)node);
    h = mix(h, a);
    trace->hash = mix(h, b);
}

const struct askew_event *askew_trace_recent(const struct askew_trace *trace, size_t i)
{
    if (i >= trace->count || i >= ASKEW_TRACE_RING)
        return NULL;
    return &trace->ring[(trace->count - 1 - i) % ASKEW_TRACE_RING];
}
