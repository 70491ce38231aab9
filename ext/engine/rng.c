/* SPDX-License-Identifier: Apache-2.0 */
/* The one PRNG of askew: xoshiro256** seeded by splitmix64, and the rules that
 * derive a stream per purpose and a seed per iteration from one run seed.
 * Specified here, not borrowed from a library, so that a seed means the same
 * run on every platform; reference vectors live in tests/c/check_rng.c.
 * Never reads the host clock or any system entropy. */
#include <string.h>

#include "engine.h"

/* Odd constants that give the derivation its domains: streams and
 * iterations can never land on the same seed by construction of a sum. */
#define STREAM_GAMMA    0x9E3779B97F4A7C15ULL
#define ITERATION_GAMMA 0xD1B54A32D192ED03ULL

uint64_t askew_splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += STREAM_GAMMA);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void askew_rng_seed(struct askew_rng *rng, uint64_t seed)
{
    uint64_t sm = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = askew_splitmix64_next(&sm);
    /* splitmix64 output is a bijection of its counter, so four outputs are
     * never all zero; the all-zero state would be a fixed point. */
    ASKEW_ASSERT(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t askew_rng_next(struct askew_rng *rng)
{
    uint64_t *s = rng->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t askew_rng_below(struct askew_rng *rng, uint64_t bound)
{
    ASKEW_ASSERT(bound > 0);
    /* Lemire's multiply-and-reject: unbiased, one draw in the common case. */
    unsigned __int128 m = (unsigned __int128)askew_rng_next(rng) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        const uint64_t threshold = -bound % bound;
        while (low < threshold) {
            m = (unsigned __int128)askew_rng_next(rng) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

int64_t askew_rng_range(struct askew_rng *rng, int64_t lo, int64_t hi)
{
    ASKEW_ASSERT(lo <= hi);
    const uint64_t span = (uint64_t)hi - (uint64_t)lo;
    if (span == UINT64_MAX)
        return (int64_t)askew_rng_next(rng);
    return (int64_t)((uint64_t)lo + askew_rng_below(rng, span + 1));
}

int askew_rng_chance_ppm(struct askew_rng *rng, uint32_t ppm)
{
    if (ppm == 0)
        return 0;
    if (ppm >= 1000000u)
        return 1;
    return askew_rng_below(rng, 1000000u) < ppm;
}

void askew_rng_fill(struct askew_rng *rng, void *buf, size_t len)
{
    unsigned char *out = buf;
    while (len >= 8) {
        const uint64_t v = askew_rng_next(rng);
        memcpy(out, &v, 8); /* little-endian hosts only: see docs/design.md */
        out += 8;
        len -= 8;
    }
    if (len) {
        const uint64_t v = askew_rng_next(rng);
        memcpy(out, &v, len);
    }
}

uint64_t askew_seed_stream(uint64_t seed, uint64_t purpose)
{
    uint64_t state = seed ^ (purpose * ITERATION_GAMMA);
    /* Two rounds, so nearby seeds and nearby purposes decorrelate. */
    (void)askew_splitmix64_next(&state);
    return askew_splitmix64_next(&state);
}

uint64_t askew_seed_iteration(uint64_t base, uint64_t i)
{
    if (i == 0)
        return base;
    uint64_t state = base + i * ITERATION_GAMMA;
    return askew_splitmix64_next(&state);
}
