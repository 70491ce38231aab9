/* SPDX-License-Identifier: Apache-2.0 */
/* The trace: a running 64-bit hash of every decision and event of a run,
 * and a count of the events. Two runs of one seed must end with the same
 * hash; a test or a replay compares hashes. It keeps no events: what a
 * failure report shows is the binding's world log. Never allocates. */
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
}

void askew_trace_mix(struct askew_trace *trace, uint64_t value)
{
    trace->hash = mix(trace->hash, value);
}

void askew_trace_record(struct askew_trace *trace, int64_t t_ns, uint32_t kind,
                        int32_t node, uint64_t a, uint64_t b)
{
    trace->count++;
    uint64_t h = mix(trace->hash, (uint64_t)t_ns);
    h = mix(h, ((uint64_t)kind << 32) | (uint32_t)node);
    h = mix(h, a);
    trace->hash = mix(h, b);
}
