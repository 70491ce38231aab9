/* SPDX-License-Identifier: Apache-2.0 */
/* A node's clocks: the wall clock steps with the offset, the monotonic one
 * never jumps or stops and runs at 1 + drift, deadlines invert it exactly,
 * and the edges (drift near +-1, offsets near the int64 range) give errors,
 * never a wrap or a division by zero. */
#include <check.h>
#include <errno.h>
#include <stdint.h>

#include "engine.h"

#define S 1000000000LL

START_TEST(test_skew_identity_clock_reads_world_time)
{
    struct askew_node_clock c;
    askew_node_clock_init(&c);
    int64_t mono, wall;
    ck_assert_int_eq(askew_node_clock_mono(&c, 5 * S, &mono), 0);
    ck_assert_int_eq(askew_node_clock_wall(&c, 5 * S, &wall), 0);
    ck_assert_int_eq(mono, 5 * S);
    ck_assert_int_eq(wall, 5 * S);
}
END_TEST

START_TEST(test_skew_negative_offset_steps_wall_back_and_leaves_monotonic_running)
{
    struct askew_node_clock c;
    askew_node_clock_init(&c);
    ck_assert_int_eq(askew_node_clock_set(&c, 10 * S, -3 * S, 0), 0);
    int64_t mono, wall;
    ck_assert_int_eq(askew_node_clock_wall(&c, 10 * S, &wall), 0);
    ck_assert_int_eq(wall, 7 * S);
    for (int64_t t = 10 * S; t < 14 * S; t += S / 2) {
        ck_assert_int_eq(askew_node_clock_mono(&c, t, &mono), 0);
        ck_assert_int_eq(mono, t); /* no freeze, no jump */
    }
}
END_TEST

START_TEST(test_skew_monotonic_runs_at_one_plus_drift_and_is_continuous_across_sets)
{
    struct askew_node_clock c;
    askew_node_clock_init(&c);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, 100 * S, 500000000), 0);
    int64_t m1, m2;
    ck_assert_int_eq(askew_node_clock_mono(&c, 10 * S, &m1), 0);
    ck_assert_int_eq(m1, 15 * S);
    ck_assert_int_eq(askew_node_clock_set(&c, 10 * S, -50 * S, -500000000), 0);
    ck_assert_int_eq(askew_node_clock_mono(&c, 10 * S, &m2), 0);
    ck_assert_int_eq(m2, m1);
    ck_assert_int_eq(askew_node_clock_mono(&c, 20 * S, &m2), 0);
    ck_assert_int_eq(m2, 20 * S);
    int64_t wall;
    ck_assert_int_eq(askew_node_clock_wall(&c, 20 * S, &wall), 0);
    ck_assert_int_eq(wall, 20 * S - 50 * S - 5 * S);
}
END_TEST

START_TEST(test_skew_deadline_is_the_first_world_time_the_node_clock_reaches)
{
    const int64_t drifts[] = {0, 1, -1, 333333333, -333333333, 999999999, -999999999};
    for (size_t d = 0; d < sizeof drifts / sizeof drifts[0]; d++) {
        struct askew_node_clock c;
        askew_node_clock_init(&c);
        ck_assert_int_eq(askew_node_clock_set(&c, 7 * S + 3, 0, drifts[d]), 0);
        for (int64_t m = 7 * S - 5; m < 7 * S + 50; m += 7) {
            int64_t t, at, before;
            ck_assert_int_eq(askew_node_clock_deadline(&c, m, &t), 0);
            ck_assert_int_eq(askew_node_clock_mono(&c, t, &at), 0);
            ck_assert_int_eq(askew_node_clock_mono(&c, t - 1, &before), 0);
            ck_assert_int_ge(at, m);
            ck_assert_int_lt(before, m);
        }
    }
}
END_TEST

START_TEST(test_skew_monotonic_never_decreases_near_drift_minus_one)
{
    struct askew_node_clock c;
    askew_node_clock_init(&c);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, 0, -999999999), 0);
    int64_t prev = INT64_MIN;
    for (int64_t t = -3 * S; t < 3 * S; t += 12345677) {
        int64_t m;
        ck_assert_int_eq(askew_node_clock_mono(&c, t, &m), 0);
        ck_assert_int_ge(m, prev);
        prev = m;
    }
}
END_TEST

START_TEST(test_skew_drift_of_one_or_more_is_refused_and_leaves_the_clock)
{
    struct askew_node_clock c;
    askew_node_clock_init(&c);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, 0, 1000000000), -EINVAL);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, 0, -1000000000), -EINVAL);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, 0, INT64_MIN), -EINVAL);
    ck_assert_int_eq(c.drift_ppb, 0);
}
END_TEST

START_TEST(test_skew_offsets_near_the_int64_range_are_errors_not_wraps)
{
    struct askew_node_clock c;
    askew_node_clock_init(&c);
    ck_assert_int_eq(askew_node_clock_set(&c, S, INT64_MAX, 0), -ERANGE);
    ck_assert_int_eq(askew_node_clock_set(&c, -S, INT64_MIN, 0), -ERANGE);
    ck_assert_int_eq(c.offset_ns, 0);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, INT64_MAX, 999999999), 0);
    int64_t wall;
    ck_assert_int_eq(askew_node_clock_wall(&c, 0, &wall), 0);
    ck_assert_int_eq(wall, INT64_MAX);
    ck_assert_int_eq(askew_node_clock_wall(&c, 1, &wall), -ERANGE);
    int64_t mono, t;
    ck_assert_int_eq(askew_node_clock_mono(&c, INT64_MAX, &mono), -ERANGE);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, 0, -999999999), 0);
    ck_assert_int_eq(askew_node_clock_deadline(&c, INT64_MAX, &t), -ERANGE);
    ck_assert_int_eq(askew_node_clock_deadline(&c, INT64_MIN, &t), -ERANGE);
}
END_TEST

Suite *skew_suite(void)
{
    Suite *s = suite_create("skew");
    TCase *tc = tcase_create("skew");
    tcase_add_test(tc, test_skew_identity_clock_reads_world_time);
    tcase_add_test(
        tc, test_skew_negative_offset_steps_wall_back_and_leaves_monotonic_running);
    tcase_add_test(
        tc, test_skew_monotonic_runs_at_one_plus_drift_and_is_continuous_across_sets);
    tcase_add_test(tc,
                   test_skew_deadline_is_the_first_world_time_the_node_clock_reaches);
    tcase_add_test(tc, test_skew_monotonic_never_decreases_near_drift_minus_one);
    tcase_add_test(tc, test_skew_drift_of_one_or_more_is_refused_and_leaves_the_clock);
    tcase_add_test(tc, test_skew_offsets_near_the_int64_range_are_errors_not_wraps);
    suite_add_tcase(s, tc);
    return s;
}
