/* SPDX-License-Identifier: Apache-2.0 */
/* The PRNG is part of the determinism contract: these reference vectors
 * pin splitmix64, xoshiro256**, the stream and the iteration derivations,
 * so that a seed means the same run on every platform and release. */
#include <check.h>
#include <string.h>

#include "engine.h"

START_TEST(test_rng_splitmix64_matches_the_reference_vector)
{
    uint64_t state = 0;
    ck_assert_uint_eq(askew_splitmix64_next(&state), 0xe220a8397b1dcdafULL);
    ck_assert_uint_eq(askew_splitmix64_next(&state), 0x6e789e6aa1b965f4ULL);
    ck_assert_uint_eq(askew_splitmix64_next(&state), 0x06c45d188009454fULL);
    ck_assert_uint_eq(askew_splitmix64_next(&state), 0xf88bb8a8724c81ecULL);
}
END_TEST

START_TEST(test_rng_xoshiro_seeded_by_splitmix_matches_the_reference_vectors)
{
    static const struct {
        uint64_t seed;
        uint64_t out[4];
    } vectors[] = {
        {0,
         {0x99ec5f36cb75f2b4ULL, 0xbf6e1f784956452aULL, 0x1a5f849d4933e6e0ULL,
          0x6aa594f1262d2d2cULL}},
        {1,
         {0xb3f2af6d0fc710c5ULL, 0x853b559647364ceaULL, 0x92f89756082a4514ULL,
          0x642e1c7bc266a3a7ULL}},
        {1337,
         {0xad0aa0a04f822edcULL, 0xd0815851ce885defULL, 0xc70b17471e263e43ULL,
          0xee4d7f13899de194ULL}},
        {UINT64_MAX,
         {0x8f5520d52a7ead08ULL, 0xc476a018caa1802dULL, 0x81de31c0d260469eULL,
          0xbf658d7e065f3c2fULL}},
    };
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        struct askew_rng rng;
        askew_rng_seed(&rng, vectors[v].seed);
        for (int i = 0; i < 4; i++)
            ck_assert_uint_eq(askew_rng_next(&rng), vectors[v].out[i]);
    }
}
END_TEST

START_TEST(test_rng_stream_and_iteration_seeds_match_the_reference_vectors)
{
    ck_assert_uint_eq(askew_seed_stream(1337, ASKEW_STREAM_SCHED),
                      0x256b7b108bd342cdULL);
    ck_assert_uint_eq(askew_seed_stream(1337, ASKEW_STREAM_NET), 0xdcd0b9cd9d239082ULL);
    ck_assert_uint_eq(askew_seed_iteration(1337, 0), 1337);
    ck_assert_uint_eq(askew_seed_iteration(1337, 1), 0x97401417ae930442ULL);
    ck_assert_uint_eq(askew_seed_iteration(1337, 2), 0x9a75dd6b1739788aULL);
}
END_TEST

START_TEST(test_rng_below_stays_in_bounds_and_covers_them)
{
    struct askew_rng rng;
    askew_rng_seed(&rng, 42);
    int seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        const uint64_t v = askew_rng_below(&rng, 7);
        ck_assert_uint_lt(v, 7);
        seen[v]++;
    }
    for (int i = 0; i < 7; i++)
        ck_assert_int_gt(seen[i], 800); /* ~1000 each; far from chance of failure */
    ck_assert_uint_eq(askew_rng_below(&rng, 1), 0);
}
END_TEST

START_TEST(test_rng_range_is_inclusive_and_handles_the_full_span)
{
    struct askew_rng rng;
    askew_rng_seed(&rng, 7);
    int lo = 0, hi = 0;
    for (int i = 0; i < 1000; i++) {
        const int64_t v = askew_rng_range(&rng, -2, 2);
        ck_assert(v >= -2 && v <= 2);
        lo |= v == -2;
        hi |= v == 2;
    }
    ck_assert(lo && hi);
    ck_assert_int_eq(askew_rng_range(&rng, 5, 5), 5);
    (void)askew_rng_range(&rng, INT64_MIN, INT64_MAX);
}
END_TEST

START_TEST(test_rng_chance_draws_nothing_at_zero_and_certainty)
{
    struct askew_rng a, b;
    askew_rng_seed(&a, 9);
    askew_rng_seed(&b, 9);
    ck_assert_int_eq(askew_rng_chance_ppm(&a, 0), 0);
    ck_assert_int_eq(askew_rng_chance_ppm(&a, 1000000), 1);
    ck_assert_uint_eq(askew_rng_next(&a), askew_rng_next(&b));
}
END_TEST

START_TEST(test_rng_fill_is_the_little_endian_stream_and_handles_tails)
{
    struct askew_rng a, b;
    askew_rng_seed(&a, 3);
    askew_rng_seed(&b, 3);
    unsigned char buf[11];
    askew_rng_fill(&a, buf, sizeof buf);
    uint64_t first = askew_rng_next(&b), second = askew_rng_next(&b);
    ck_assert_int_eq(memcmp(buf, &first, 8), 0);
    ck_assert_int_eq(memcmp(buf + 8, &second, 3), 0);
    askew_rng_fill(&a, buf, 0); /* draws nothing */
    ck_assert_uint_eq(askew_rng_next(&a), askew_rng_next(&b));
}
END_TEST

Suite *rng_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_rng_splitmix64_matches_the_reference_vector);
    tcase_add_test(tc,
                   test_rng_xoshiro_seeded_by_splitmix_matches_the_reference_vectors);
    tcase_add_test(tc, test_rng_stream_and_iteration_seeds_match_the_reference_vectors);
    tcase_add_test(tc, test_rng_below_stays_in_bounds_and_covers_them);
    tcase_add_test(tc, test_rng_range_is_inclusive_and_handles_the_full_span);
    tcase_add_test(tc, test_rng_chance_draws_nothing_at_zero_and_certainty);
    tcase_add_test(tc, test_rng_fill_is_the_little_endian_stream_and_handles_tails);
    suite_add_tcase(s, tc);
    return s;
}
