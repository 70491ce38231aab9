/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler: what a tick runs, in which order, under each strategy;
 * how the clock moves; budgets; and that a seed fixes the order. Items are
 * small integers cast to pointers; "steps" push children to model tasks. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"

#define ITEM(n) ((void *)(uintptr_t)(n))
#define NUM(p)  ((int)(uintptr_t)(p))

struct owner {
    struct askew_timer timer;
    int id;
};

static int fire_push(void *ctx, struct askew_timer *timer)
{
    struct askew_sched *s = ctx;
    const struct owner *o = (const struct owner *)timer;
    return askew_sched_push(s, ITEM(o->id), (uint64_t)o->id);
}

/* Run one tick, writing the order into out; returns how many ran. */
static int run_tick(struct askew_sched *s, int *out)
{
    if (askew_sched_tick(s, fire_push, s) != ASKEW_TICK_READY)
        return 0;
    int n = 0;
    void *item;
    while ((item = askew_sched_next(s)) != NULL)
        out[n++] = NUM(item);
    return n;
}

START_TEST(test_sched_fifo_runs_in_push_order)
{
    struct askew_sched s;
    askew_sched_init(&s);
    s.strategy = ASKEW_STRATEGY_FIFO;
    askew_sched_reset(&s, 1);
    for (int i = 1; i <= 5; i++)
        askew_sched_push(&s, ITEM(i), (uint64_t)i);
    int out[8];
    ck_assert_int_eq(run_tick(&s, out), 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(out[i], i + 1);
    ck_assert_uint_eq(s.steps, 5);
    askew_sched_free(&s);
}
END_TEST

START_TEST(test_sched_work_queued_during_a_tick_waits_for_the_next)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    askew_sched_push(&s, ITEM(1), 1);
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_READY);
    ck_assert_int_eq(NUM(askew_sched_next(&s)), 1);
    askew_sched_push(&s, ITEM(2), 2);
    ck_assert_ptr_null(askew_sched_next(&s));
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_READY);
    ck_assert_int_eq(NUM(askew_sched_next(&s)), 2);
    askew_sched_free(&s);
}
END_TEST

/* Steps 1..k each push two children (10i, 10i+1); under "random" the
 * children of one step keep their order, and across seeds the steps'
 * children interleave in more than one way. */
START_TEST(test_sched_random_keeps_siblings_in_order_and_interleaves_steps)
{
    int orders_seen = 0;
    int first[16];
    for (uint64_t seed = 0; seed < 30; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        askew_sched_reset(&s, seed);
        for (int i = 1; i <= 4; i++)
            askew_sched_push(&s, ITEM(i), (uint64_t)i);
        ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_READY);
        void *item;
        while ((item = askew_sched_next(&s)) != NULL) {
            askew_sched_push(&s, ITEM(10 * NUM(item)), 0);
            askew_sched_push(&s, ITEM(10 * NUM(item) + 1), 0);
        }
        int out[16];
        const int n = run_tick(&s, out);
        ck_assert_int_eq(n, 8);
        for (int i = 0; i < n; i++) {
            if (out[i] % 10 == 1) {
                int j = 0;
                while (out[j] != out[i] - 1)
                    j++;
                ck_assert_int_lt(j, i); /* 10i before 10i+1 */
            }
        }
        if (seed == 0)
            memcpy(first, out, sizeof out);
        else if (memcmp(first, out, sizeof out) != 0)
            orders_seen++;
        askew_sched_free(&s);
    }
    ck_assert_int_gt(orders_seen, 10);
}
END_TEST

START_TEST(test_sched_shuffle_permutes_the_whole_batch)
{
    int reversed_pairs = 0;
    for (uint64_t seed = 0; seed < 30; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        s.strategy = ASKEW_STRATEGY_SHUFFLE;
        askew_sched_reset(&s, seed);
        askew_sched_push(&s, ITEM(1), 1);
        askew_sched_push(&s, ITEM(2), 2); /* same group: random would keep order */
        int out[2];
        ck_assert_int_eq(run_tick(&s, out), 2);
        reversed_pairs += out[0] == 2;
        askew_sched_free(&s);
    }
    ck_assert_int_gt(reversed_pairs, 3);
    ck_assert_int_lt(reversed_pairs, 27);
}
END_TEST

START_TEST(test_sched_same_seed_gives_the_same_order_and_hash)
{
    uint64_t hashes[2];
    int orders[2][64];
    for (int run = 0; run < 2; run++) {
        struct askew_sched s;
        askew_sched_init(&s);
        askew_sched_reset(&s, 777);
        for (int i = 0; i < 64; i++) {
            s.group_now = (uint64_t)i; /* 64 independent parents */
            askew_sched_push(&s, ITEM(i + 1), (uint64_t)i);
        }
        ck_assert_int_eq(run_tick(&s, orders[run]), 64);
        hashes[run] = s.trace.hash;
        askew_sched_free(&s);
    }
    ck_assert_int_eq(memcmp(orders[0], orders[1], sizeof orders[0]), 0);
    ck_assert_uint_eq(hashes[0], hashes[1]);
}
END_TEST

START_TEST(test_sched_clock_jumps_to_the_earliest_timer_when_idle)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    struct owner a = {{5000, 0, ASKEW_TIMER_IDLE, 1}, 1};
    struct owner b = {{2000, 0, ASKEW_TIMER_IDLE, 1}, 2};
    askew_sched_timer_add(&s, &a.timer);
    askew_sched_timer_add(&s, &b.timer);
    int out[4];
    ck_assert_int_eq(run_tick(&s, out), 1);
    ck_assert_int_eq(out[0], 2);
    ck_assert_int_eq(s.now_ns, 2000);
    ck_assert_int_eq(run_tick(&s, out), 1);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(s.now_ns, 5000);
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_IDLE);
    askew_sched_free(&s);
}
END_TEST

START_TEST(test_sched_timers_due_together_fire_in_prng_order)
{
    int first_counts[4] = {0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        s.strategy = ASKEW_STRATEGY_FIFO; /* order then comes from firing alone */
        askew_sched_reset(&s, seed);
        struct owner o[4];
        for (int i = 0; i < 4; i++) {
            o[i].timer = (struct askew_timer){1000, 0, ASKEW_TIMER_IDLE, 1};
            o[i].id = i + 1; /* items are never NULL */
            askew_sched_timer_add(&s, &o[i].timer);
        }
        int out[4];
        ck_assert_int_eq(run_tick(&s, out), 4);
        first_counts[out[0] - 1]++;
        askew_sched_free(&s);
    }
    for (int i = 0; i < 4; i++)
        ck_assert_int_gt(first_counts[i], 0);
}
END_TEST

START_TEST(test_sched_cancelled_timers_never_fire)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    struct owner a = {{10, 0, ASKEW_TIMER_IDLE, 1}, 1};
    askew_sched_timer_add(&s, &a.timer);
    askew_sched_timer_cancel(&s, &a.timer);
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_IDLE);
    ck_assert_int_eq(s.now_ns, 0);
    askew_sched_free(&s);
}
END_TEST

START_TEST(test_sched_time_budget_stops_before_a_timer_past_it)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    s.time_max_ns = 100;
    struct owner a = {{50, 0, ASKEW_TIMER_IDLE, 1}, 1};
    struct owner b = {{150, 0, ASKEW_TIMER_IDLE, 1}, 2};
    askew_sched_timer_add(&s, &a.timer);
    askew_sched_timer_add(&s, &b.timer);
    int out[2];
    ck_assert_int_eq(run_tick(&s, out), 1);
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_TIME_MAX);
    ck_assert_int_eq(s.now_ns, 50);
    askew_sched_timer_cancel(&s, &b.timer);
    askew_sched_free(&s);
}
END_TEST

static int fire_nothing_first(void *ctx, struct askew_timer *timer)
{
    struct askew_sched *s = ctx;
    const struct owner *o = (const struct owner *)timer;
    if (o->id == 1)
        return 0; /* a timer whose firing queues nothing */
    return askew_sched_push(s, ITEM(o->id), (uint64_t)o->id);
}

START_TEST(test_sched_a_timer_that_queues_nothing_does_not_end_the_run)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    struct owner a = {{10, 0, ASKEW_TIMER_IDLE, 1}, 1};
    struct owner b = {{20, 0, ASKEW_TIMER_IDLE, 1}, 2};
    askew_sched_timer_add(&s, &a.timer);
    askew_sched_timer_add(&s, &b.timer);
    ck_assert_int_eq(askew_sched_tick(&s, fire_nothing_first, &s), ASKEW_TICK_READY);
    ck_assert_int_eq(NUM(askew_sched_next(&s)), 2);
    ck_assert_int_eq(s.now_ns, 20);
    askew_sched_free(&s);
}
END_TEST

static int dropped;
static void drop_item(void *item)
{
    (void)item;
    dropped++;
}
static void drop_timer(struct askew_timer *t)
{
    (void)t;
    dropped += 100;
}

START_TEST(test_sched_clear_hands_back_everything_queued)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    struct owner a = {{10, 0, ASKEW_TIMER_IDLE, 1}, 1};
    askew_sched_timer_add(&s, &a.timer);
    for (int i = 1; i <= 3; i++)
        askew_sched_push(&s, ITEM(i), 0);
    askew_sched_tick(&s, fire_push, &s);
    (void)askew_sched_next(&s);
    askew_sched_push(&s, ITEM(9), 0);
    dropped = 0;
    askew_sched_clear(&s, drop_item, drop_timer);
    ck_assert_int_eq(dropped, 103); /* two left in the batch, one queued, a timer */
    ck_assert_uint_eq(askew_sched_pending(&s), 0);
    askew_sched_reset(&s, 2);
    askew_sched_free(&s);
}
END_TEST

Suite *sched_suite(void)
{
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sched_fifo_runs_in_push_order);
    tcase_add_test(tc, test_sched_work_queued_during_a_tick_waits_for_the_next);
    tcase_add_test(tc, test_sched_random_keeps_siblings_in_order_and_interleaves_steps);
    tcase_add_test(tc, test_sched_shuffle_permutes_the_whole_batch);
    tcase_add_test(tc, test_sched_same_seed_gives_the_same_order_and_hash);
    tcase_add_test(tc, test_sched_clock_jumps_to_the_earliest_timer_when_idle);
    tcase_add_test(tc, test_sched_timers_due_together_fire_in_prng_order);
    tcase_add_test(tc, test_sched_cancelled_timers_never_fire);
    tcase_add_test(tc, test_sched_time_budget_stops_before_a_timer_past_it);
    tcase_add_test(tc, test_sched_clear_hands_back_everything_queued);
    tcase_add_test(tc, test_sched_a_timer_that_queues_nothing_does_not_end_the_run);
    suite_add_tcase(s, tc);
    return s;
}
