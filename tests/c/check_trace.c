/* SPDX-License-Identifier: Apache-2.0 */
/* The trace hash must tell two different runs apart and two equal runs
 * alike; the ring keeps the newest events in order. */
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

START_TEST(test_trace_ring_keeps_the_newest_events_newest_first)
{
    struct askew_trace t;
    askew_trace_reset(&t);
    ck_assert_ptr_null(askew_trace_recent(&t, 0));
    for (uint64_t i = 0; i < ASKEW_TRACE_RING + 10; i++)
        askew_trace_record(&t, (int64_t)i, ASKEW_EV_USER, 0, i, 0);
    ck_assert_uint_eq(askew_trace_recent(&t, 0)->a, ASKEW_TRACE_RING + 9);
    ck_assert_uint_eq(askew_trace_recent(&t, ASKEW_TRACE_RING - 1)->a, 10);
    ck_assert_ptr_null(askew_trace_recent(&t, ASKEW_TRACE_RING));
}
END_TEST

Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_trace_equal_events_give_equal_hashes);
    tcase_add_test(tc, test_trace_swapped_events_change_the_hash);
    tcase_add_test(tc, test_trace_ring_keeps_the_newest_events_newest_first);
    suite_add_tcase(s, tc);
    return s;
}
