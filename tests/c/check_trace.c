/* SPDX-License-Identifier: Apache-2.0 */
/* The trace hash must tell two different runs apart and two equal runs
 * alike, and count the events recorded. */
#include <check.h>

#include "engine.h"

START_TEST(test_trace_equal_events_give_equal_hashes)
{
    struct askew_trace a, b;
    askew_trace_reset(&a);
    askew_trace_reset(&b);
    for (int i = 0; i < 100; i++) {
        askew_trace_record(&a, i, ASKEW_EV_USER, 1, (uint64_t)i, 2);
        askew_trace_record(&b, i, ASKEW_EV_USER, 1, (uint64_t)i, 2);
    }
    ck_assert_uint_eq(a.hash, b.hash);
    ck_assert_uint_eq(a.count, 100);
}
END_TEST

START_TEST(test_trace_swapped_events_change_the_hash)
{
    struct askew_trace a, b;
    askew_trace_reset(&a);
    askew_trace_reset(&b);
    askew_trace_record(&a, 0, ASKEW_EV_USER, 0, 1, 0);
    askew_trace_record(&a, 0, ASKEW_EV_USER, 0, 2, 0);
    askew_trace_record(&b, 0, ASKEW_EV_USER, 0, 2, 0);
    askew_trace_record(&b, 0, ASKEW_EV_USER, 0, 1, 0);
    ck_assert_uint_ne(a.hash, b.hash);
    askew_trace_mix(&a, 5);
    askew_trace_mix(&b, 5);
    ck_assert_uint_ne(a.hash, b.hash);
}
END_TEST

START_TEST(test_trace_counts_recorded_events_and_not_mixes)
{
    struct askew_trace t;
    askew_trace_reset(&t);
    const uint64_t empty = t.hash;
    askew_trace_mix(&t, 7);
    ck_assert_uint_eq(t.count, 0);
    ck_assert_uint_ne(t.hash, empty);
    askew_trace_record(&t, 1, ASKEW_EV_USER, 0, 1, 0);
    askew_trace_record(&t, 2, ASKEW_EV_USER, 0, 1, 0);
    ck_assert_uint_eq(t.count, 2);
    askew_trace_reset(&t);
    ck_assert_uint_eq(t.hash, empty);
    ck_assert_uint_eq(t.count, 0);
}
END_TEST

START_TEST(test_trace_every_field_of_an_event_reaches_the_hash)
{
    struct askew_trace base;
    askew_trace_reset(&base);
    askew_trace_record(&base, 1, ASKEW_EV_NET, 2, 3, 4);
    const int64_t fields[5][5] = {
        {9, ASKEW_EV_NET, 2, 3, 4}, {1, ASKEW_EV_USER, 2, 3, 4},
        {1, ASKEW_EV_NET, 9, 3, 4}, {1, ASKEW_EV_NET, 2, 9, 4},
        {1, ASKEW_EV_NET, 2, 3, 9},
    };
    for (int i = 0; i < 5; i++) {
        struct askew_trace t;
        askew_trace_reset(&t);
        askew_trace_record(&t, fields[i][0], (uint32_t)fields[i][1],
                           (int32_t)fields[i][2], (uint64_t)fields[i][3],
                           (uint64_t)fields[i][4]);
        ck_assert_uint_ne(t.hash, base.hash);
    }
}
END_TEST

Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_trace_equal_events_give_equal_hashes);
    tcase_add_test(tc, test_trace_swapped_events_change_the_hash);
    tcase_add_test(tc, test_trace_counts_recorded_events_and_not_mixes);
    tcase_add_test(tc, test_trace_every_field_of_an_event_reaches_the_hash);
    suite_add_tcase(s, tc);
    return s;
}
