/* SPDX-License-Identifier: Apache-2.0 */
/* The timer heap: (deadline, seq) order, O(log n) removal from anywhere,
 * and its invariants under a long random workload. */
#include <check.h>
#include <stdlib.h>

#include "engine.h"

static struct askew_timer timer_at(int64_t deadline_ns, uint64_t seq)
{
    struct askew_timer t = {deadline_ns, seq, ASKEW_TIMER_IDLE, 0};
    return t;
}

START_TEST(test_clock_heap_pops_by_deadline_then_seq)
{
    struct askew_heap h;
    askew_heap_init(&h);
    struct askew_timer t[5] = {timer_at(30, 0), timer_at(10, 1), timer_at(20, 2),
                               timer_at(10, 3), timer_at(5, 4)};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(askew_heap_push(&h, &t[i]), 0);
    const uint64_t want[5] = {4, 1, 3, 2, 0};
    for (int i = 0; i < 5; i++) {
        struct askew_timer *p = askew_heap_pop(&h);
        ck_assert_uint_eq(p->seq, want[i]);
        ck_assert_uint_eq(p->index, ASKEW_TIMER_IDLE);
    }
    ck_assert_ptr_null(askew_heap_pop(&h));
    askew_heap_free(&h);
}
END_TEST

START_TEST(test_clock_heap_removes_any_timer_and_ignores_idle_ones)
{
    struct askew_heap h;
    askew_heap_init(&h);
    struct askew_timer t[6];
    for (int i = 0; i < 6; i++) {
        t[i] = timer_at(100 - i, (uint64_t)i);
        askew_heap_push(&h, &t[i]);
    }
    askew_heap_remove(&h, &t[2]);
    askew_heap_remove(&h, &t[2]); /* already gone: a no-op */
    askew_heap_remove(&h, &t[5]); /* the top */
    ck_assert_uint_eq(h.len, 4);
    const uint64_t want[4] = {4, 3, 1, 0};
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(askew_heap_pop(&h)->seq, want[i]);
    askew_heap_free(&h);
}
END_TEST

START_TEST(test_clock_heap_keeps_order_under_random_pushes_and_removals)
{
    enum { N = 2000 };
    struct askew_heap h;
    askew_heap_init(&h);
    struct askew_timer *t = calloc(N, sizeof *t);
    ck_assert_ptr_nonnull(t);
    struct askew_rng rng;
    askew_rng_seed(&rng, 11);
    for (int i = 0; i < N; i++) {
        t[i] = timer_at(askew_rng_range(&rng, 0, 500), (uint64_t)i);
        askew_heap_push(&h, &t[i]);
        if (i % 3 == 0)
            askew_heap_remove(&h, &t[askew_rng_below(&rng, (uint64_t)i + 1)]);
    }
    int64_t last_deadline = -1;
    uint64_t last_seq = 0;
    struct askew_timer *p;
    while ((p = askew_heap_pop(&h)) != NULL) {
        ck_assert(p->deadline_ns > last_deadline ||
                  (p->deadline_ns == last_deadline && p->seq > last_seq));
        last_deadline = p->deadline_ns;
        last_seq = p->seq;
    }
    free(t);
    askew_heap_free(&h);
}
END_TEST

Suite *clock_suite(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = tcase_create("heap");
    tcase_add_test(tc, test_clock_heap_pops_by_deadline_then_seq);
    tcase_add_test(tc, test_clock_heap_removes_any_timer_and_ignores_idle_ones);
    tcase_add_test(tc, test_clock_heap_keeps_order_under_random_pushes_and_removals);
    suite_add_tcase(s, tc);
    return s;
}
