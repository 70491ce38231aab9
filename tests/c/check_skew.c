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

/* The rekey tests' claim: timers of kind 1 are the node's. */
static int kind_one(const struct askew_timer *t, void *ctx)
{
    (void)ctx;
    return t->kind == 1;
}

static struct askew_timer timer_at(int64_t deadline_ns, uint32_t kind)
{
    return (struct askew_timer){deadline_ns, 0, ASKEW_TIMER_IDLE, kind};
}

START_TEST(test_skew_rekey_moves_only_the_claimed_timers_to_the_new_clock)
{
    struct askew_sched sched;
    ck_assert_int_eq(askew_sched_init(&sched), 0);
    sched.now_ns = 10 * S;
    struct askew_timer mine = timer_at(20 * S, 1), other = timer_at(20 * S, 2),
                       never = timer_at(INT64_MAX, 1);
    ck_assert_int_eq(askew_sched_timer_add(&sched, &other), 0);
    ck_assert_int_eq(askew_sched_timer_add(&sched, &mine), 0);
    ck_assert_int_eq(askew_sched_timer_add(&sched, &never), 0);
    const uint64_t other_seq = other.seq, never_seq = never.seq;
    struct askew_node_clock old, next;
    askew_node_clock_init(&old);
    next = old;
    ck_assert_int_eq(askew_node_clock_set(&next, 10 * S, 0, 100000000), 0); /* +10% */
    ck_assert_int_eq(askew_sched_rekey(&sched, &old, &next, kind_one, NULL), 0);
    /* The node's clock reads 20 s 10/11 of 10 s after now, rounded up. */
    ck_assert_int_eq(mine.deadline_ns, 10 * S + (10 * S * 10 + 10) / 11);
    ck_assert_int_eq(mine.deadline_ns, askew_node_clock_due(&next, 20 * S, 10 * S));
    ck_assert_uint_gt(mine.seq, never_seq);
    ck_assert_int_eq(other.deadline_ns, 20 * S);
    ck_assert_uint_eq(other.seq, other_seq);
    ck_assert_int_eq(never.deadline_ns, INT64_MAX);
    ck_assert_uint_eq(never.seq, never_seq);
    /* The heap is still ordered: the moved timer comes out first. */
    ck_assert_ptr_eq(askew_heap_pop(&sched.timers), &mine);
    ck_assert_ptr_eq(askew_heap_pop(&sched.timers), &other);
    ck_assert_ptr_eq(askew_heap_pop(&sched.timers), &never);
    askew_sched_free(&sched);
}
END_TEST

START_TEST(test_skew_rekey_makes_an_overdue_timer_due_now_and_keeps_an_unmoved_seq)
{
    struct askew_sched sched;
    ck_assert_int_eq(askew_sched_init(&sched), 0);
    sched.now_ns = 10 * S;
    struct askew_timer late = timer_at(5 * S, 1), later = timer_at(30 * S, 1);
    ck_assert_int_eq(askew_sched_timer_add(&sched, &late), 0);
    ck_assert_int_eq(askew_sched_timer_add(&sched, &later), 0);
    const uint64_t later_seq = later.seq;
    struct askew_node_clock old, next;
    askew_node_clock_init(&old);
    next = old;
    /* A wall step alone: the monotonic clock, and so every deadline, stays. */
    ck_assert_int_eq(askew_node_clock_set(&next, 10 * S, -3 * S, 0), 0);
    ck_assert_int_eq(askew_sched_rekey(&sched, &old, &next, kind_one, NULL), 0);
    ck_assert_int_eq(late.deadline_ns, 10 * S); /* was overdue: due now */
    ck_assert_int_eq(later.deadline_ns, 30 * S);
    ck_assert_uint_eq(later.seq, later_seq);
    askew_sched_free(&sched);
}
END_TEST

START_TEST(test_skew_saturated_readings_stop_at_the_int64_edges)
{
    struct askew_node_clock c;
    askew_node_clock_init(&c);
    ck_assert_int_eq(askew_node_clock_mono_sat(&c, 5 * S), 5 * S);
    ck_assert_int_eq(askew_node_clock_due(&c, INT64_MAX, 0), INT64_MAX);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, INT64_MAX / 2, 0), 0);
    ck_assert_int_eq(askew_node_clock_wall_sat(&c, INT64_MAX / 2 + S), INT64_MAX);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, INT64_MIN / 2, 900000000), 0);
    ck_assert_int_eq(askew_node_clock_wall_sat(&c, INT64_MIN + 1), INT64_MIN);
    ck_assert_int_eq(askew_node_clock_mono_sat(&c, INT64_MAX), INT64_MAX);
    ck_assert_int_eq(askew_node_clock_mono_sat(&c, INT64_MIN), INT64_MIN);
    /* On a slow clock, a reading it reaches only past int64 never fires;
     * one before its range is due now. */
    askew_node_clock_init(&c);
    ck_assert_int_eq(askew_node_clock_set(&c, 0, 0, -900000000), 0);
    ck_assert_int_eq(askew_node_clock_due(&c, INT64_MAX - 1, 7), INT64_MAX);
    ck_assert_int_eq(askew_node_clock_due(&c, INT64_MIN, 7), 7);
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
    tcase_add_test(tc, test_skew_rekey_moves_only_the_claimed_timers_to_the_new_clock);
    tcase_add_test(
        tc, test_skew_rekey_makes_an_overdue_timer_due_now_and_keeps_an_unmoved_seq);
    tcase_add_test(tc, test_skew_saturated_readings_stop_at_the_int64_edges);
    suite_add_tcase(s, tc);
    return s;
}
