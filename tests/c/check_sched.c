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
    return askew_sched_push(s, ITEM(o->id), (uint64_t)o->id, 0);
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
        askew_sched_push(&s, ITEM(i), (uint64_t)i, 0);
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
    askew_sched_push(&s, ITEM(1), 1, 0);
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_READY);
    ck_assert_int_eq(NUM(askew_sched_next(&s)), 1);
    askew_sched_push(&s, ITEM(2), 2, 0);
    ck_assert_ptr_null(askew_sched_next(&s));
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_READY);
    ck_assert_int_eq(NUM(askew_sched_next(&s)), 2);
    askew_sched_free(&s);
}
END_TEST

/* Steps 1..k each push two children (10i, 10i+1); under "interleave" the
 * children of one step keep their order, and across seeds the steps'
 * children interleave in more than one way. */
START_TEST(test_sched_interleave_keeps_siblings_in_order_and_interleaves_steps)
{
    int orders_seen = 0;
    int first[16];
    for (uint64_t seed = 0; seed < 30; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        s.strategy = ASKEW_STRATEGY_INTERLEAVE;
        askew_sched_reset(&s, seed);
        for (int i = 1; i <= 4; i++)
            askew_sched_push(&s, ITEM(i), (uint64_t)i, 0);
        ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_READY);
        void *item;
        while ((item = askew_sched_next(&s)) != NULL) {
            askew_sched_push(&s, ITEM(10 * NUM(item)), 0, 0);
            askew_sched_push(&s, ITEM(10 * NUM(item) + 1), 0, 0);
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
        askew_sched_push(&s, ITEM(1), 1, 0);
        askew_sched_push(&s, ITEM(2), 2, 0); /* one key: faithful would keep order */
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
        s.cpu_ns_hi = 1000;
        askew_sched_reset(&s, 777);
        for (int i = 0; i < 64; i++) /* 64 loops, one item each */
            askew_sched_push(&s, ITEM(i + 1), (uint64_t)i, (uint64_t)i);
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

/* Four timers with one deadline, registered in order 1..4. */
static void four_tied_timers(struct askew_sched *s, struct owner *o)
{
    for (int i = 0; i < 4; i++) {
        o[i].timer = (struct askew_timer){1000, 0, ASKEW_TIMER_IDLE, 1};
        o[i].id = i + 1; /* items are never NULL */
        askew_sched_timer_add(s, &o[i].timer);
    }
}

START_TEST(test_sched_timers_with_equal_deadlines_fire_in_registration_order)
{
    const enum askew_strategy strategies[] = {ASKEW_STRATEGY_FAITHFUL,
                                              ASKEW_STRATEGY_FIFO};
    for (size_t k = 0; k < 2; k++) {
        for (uint64_t seed = 0; seed < 20; seed++) {
            struct askew_sched s;
            askew_sched_init(&s);
            s.strategy = strategies[k];
            askew_sched_reset(&s, seed);
            struct owner o[4];
            four_tied_timers(&s, o);
            int out[4];
            ck_assert_int_eq(run_tick(&s, out), 4);
            for (int i = 0; i < 4; i++)
                ck_assert_int_eq(out[i], i + 1);
            askew_sched_free(&s);
        }
    }
}
END_TEST

START_TEST(test_sched_interleave_fires_equal_deadlines_in_prng_order)
{
    int first_counts[4] = {0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        s.strategy = ASKEW_STRATEGY_INTERLEAVE;
        askew_sched_reset(&s, seed);
        struct owner o[4];
        four_tied_timers(&s, o);
        int out[4];
        ck_assert_int_eq(run_tick(&s, out), 4);
        first_counts[out[0] - 1]++;
        askew_sched_free(&s);
    }
    for (int i = 0; i < 4; i++)
        ck_assert_int_gt(first_counts[i], 0);
}
END_TEST

/* Keys 1..3 each queue a run of items (100k+1, 100k+2, ...) interleaved at
 * push time; faithful keeps each key's items in push order and, across
 * seeds, interleaves the keys in more than one way. */
START_TEST(test_sched_faithful_keeps_each_key_in_fifo_order_and_interleaves_keys)
{
    int orders_seen = 0;
    int first[12];
    for (uint64_t seed = 0; seed < 30; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        askew_sched_reset(&s, seed);
        for (int i = 1; i <= 4; i++)
            for (int key = 1; key <= 3; key++)
                askew_sched_push(&s, ITEM(100 * key + i), 0, (uint64_t)key);
        int out[12];
        ck_assert_int_eq(run_tick(&s, out), 12);
        int last[4] = {0};
        for (int i = 0; i < 12; i++) {
            ck_assert_int_gt(out[i] % 100, last[out[i] / 100]);
            last[out[i] / 100] = out[i] % 100;
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

/* One key (a bare loop, the test body): asyncio's order exactly, and no
 * scheduling draw at all, whatever the seed. */
START_TEST(test_sched_faithful_with_one_key_is_asyncio_order_and_draws_no_pick)
{
    for (uint64_t seed = 0; seed < 10; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        askew_sched_reset(&s, seed);
        const struct askew_rng before = s.rng;
        for (int i = 1; i <= 5; i++)
            askew_sched_push(&s, ITEM(i), (uint64_t)i, 7);
        int out[5];
        ck_assert_int_eq(run_tick(&s, out), 5);
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(out[i], i + 1);
        ck_assert_int_eq(memcmp(&before, &s.rng, sizeof before), 0);
        askew_sched_free(&s);
    }
}
END_TEST

START_TEST(test_sched_faithful_charges_each_step_cpu_time_within_its_bounds)
{
    struct askew_sched s;
    askew_sched_init(&s);
    s.cpu_ns_lo = 1000;
    s.cpu_ns_hi = 20000;
    askew_sched_reset(&s, 3);
    int64_t spent_min = INT64_MAX, spent_max = 0;
    for (int i = 1; i <= 200; i++)
        askew_sched_push(&s, ITEM(i), (uint64_t)i, 0);
    ck_assert_int_eq(askew_sched_tick(&s, fire_push, &s), ASKEW_TICK_READY);
    int64_t before = s.now_ns;
    while (askew_sched_next(&s) != NULL) {
        const int64_t spent = s.now_ns - before;
        spent_min = spent < spent_min ? spent : spent_min;
        spent_max = spent > spent_max ? spent : spent_max;
        before = s.now_ns;
    }
    ck_assert_int_ge(spent_min, 1000);
    ck_assert_int_le(spent_max, 20000);
    ck_assert_int_gt(spent_max, spent_min); /* drawn, not fixed */
    askew_sched_free(&s);
}
END_TEST

START_TEST(test_sched_fifo_charges_no_cpu_time_and_no_overshoot)
{
    struct askew_sched s;
    askew_sched_init(&s);
    s.strategy = ASKEW_STRATEGY_FIFO;
    s.cpu_ns_hi = 20000;
    s.overshoot_ns_hi = 100000;
    askew_sched_reset(&s, 3);
    struct owner a = {{5000, 0, ASKEW_TIMER_IDLE, 1}, 1};
    askew_sched_timer_add(&s, &a.timer);
    askew_sched_push(&s, ITEM(9), 9, 0);
    int out[2];
    ck_assert_int_eq(run_tick(&s, out), 1);
    ck_assert_int_eq(s.now_ns, 0);
    ck_assert_int_eq(run_tick(&s, out), 1);
    ck_assert_int_eq(s.now_ns, 5000);
    askew_sched_free(&s);
}
END_TEST

/* An idle loop wakes after its deadline by the overshoot, never before;
 * every timer due by then fires in the same tick, in deadline order. */
START_TEST(test_sched_faithful_wakes_after_a_deadline_never_before)
{
    int late = 0;
    for (uint64_t seed = 0; seed < 50; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        s.overshoot_ns_hi = 100;
        askew_sched_reset(&s, seed);
        struct owner a = {{5000, 0, ASKEW_TIMER_IDLE, 1}, 1};
        struct owner b = {{5050, 0, ASKEW_TIMER_IDLE, 1}, 2};
        askew_sched_timer_add(&s, &b.timer);
        askew_sched_timer_add(&s, &a.timer);
        int out[2];
        const int n = run_tick(&s, out);
        ck_assert_int_ge(s.now_ns, 5000);
        ck_assert_int_le(s.now_ns, 5100);
        ck_assert_int_eq(out[0], 1);
        ck_assert_int_eq(n, s.now_ns >= 5050 ? 2 : 1);
        late += s.now_ns > 5000;
        if (n == 1)
            askew_sched_timer_cancel(&s, &b.timer);
        askew_sched_free(&s);
    }
    ck_assert_int_gt(late, 40);
}
END_TEST

START_TEST(test_sched_a_view_ahead_of_the_clock_makes_timers_due)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    struct owner a = {{3000, 0, ASKEW_TIMER_IDLE, 1}, 1};
    askew_sched_timer_add(&s, &a.timer);
    askew_sched_push(&s, ITEM(9), 9, 0);
    s.view_ns = 3000; /* loop.time() replaced by a clock that reads 3 us */
    int out[2];
    ck_assert_int_eq(run_tick(&s, out), 2);
    ck_assert_int_eq(out[0], 9);
    ck_assert_int_eq(out[1], 1);
    ck_assert_int_eq(s.now_ns, 0); /* the world's clock did not move */
    askew_sched_free(&s);
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
    return askew_sched_push(s, ITEM(o->id), (uint64_t)o->id, 0);
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
        askew_sched_push(&s, ITEM(i), 0, (uint64_t)i % 2);
    askew_sched_tick(&s, fire_push, &s);
    (void)askew_sched_next(&s);
    askew_sched_push(&s, ITEM(9), 0, 0);
    dropped = 0;
    askew_sched_clear(&s, drop_item, drop_timer);
    ck_assert_int_eq(dropped, 103); /* two left in the batch, one queued, a timer */
    ck_assert_uint_eq(askew_sched_pending(&s), 0);
    askew_sched_reset(&s, 2);
    askew_sched_free(&s);
}
END_TEST

/* A drop may queue more (a finalizer that calls call_soon): that is dropped
 * too, and the queues end empty, so a reset after a clear always holds. */
static struct askew_sched *requeue_into;
static void drop_requeue(void *item)
{
    dropped++;
    if (NUM(item) < 100)
        askew_sched_push(requeue_into, ITEM(NUM(item) + 100), 0, 0);
}

START_TEST(test_sched_clear_drops_what_a_drop_queues)
{
    struct askew_sched s;
    askew_sched_init(&s);
    askew_sched_reset(&s, 1);
    requeue_into = &s;
    for (int i = 1; i <= 3; i++)
        askew_sched_push(&s, ITEM(i), 0, (uint64_t)i);
    askew_sched_tick(&s, fire_push, &s);
    askew_sched_push(&s, ITEM(4), 0, 0);
    dropped = 0;
    askew_sched_clear(&s, drop_requeue, drop_timer);
    ck_assert_int_eq(dropped, 8);
    ck_assert_uint_eq(askew_sched_pending(&s), 0);
    askew_sched_reset(&s, 2);
    askew_sched_free(&s);
}
END_TEST

/* Key k's item i is ITEM(k * 100 + i). */
static void push_keys(struct askew_sched *s, int keys, int per_key)
{
    for (int i = 0; i < per_key; i++)
        for (int k = 1; k <= keys; k++)
            askew_sched_push(s, ITEM(k * 100 + i), (uint64_t)(k * 100 + i),
                             (uint64_t)k);
}

START_TEST(test_sched_pct_without_change_points_runs_each_key_whole_in_fifo_order)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct askew_sched s;
        askew_sched_init(&s);
        s.strategy = ASKEW_STRATEGY_PCT;
        s.pct_depth = 1;
        askew_sched_reset(&s, seed);
        push_keys(&s, 3, 4);
        int out[16];
        ck_assert_int_eq(run_tick(&s, out), 12);
        for (int i = 0; i < 12; i++) {
            /* One key after another, each in its push order. */
            ck_assert_int_eq(out[i] / 100, out[i - i % 4] / 100);
            ck_assert_int_eq(out[i] % 100, i % 4);
        }
        askew_sched_free(&s);
    }
}
END_TEST

START_TEST(test_sched_pct_lowers_the_running_key_at_a_change_point)
{
    struct askew_sched s;
    askew_sched_init(&s);
    s.strategy = ASKEW_STRATEGY_PCT;
    s.pct_depth = 2;
    s.pct_steps = 1; /* the one change point falls on step 1 */
    askew_sched_reset(&s, 5);
    ck_assert_uint_eq(s.pct_change_at[0], 1);
    push_keys(&s, 2, 3);
    int out[8];
    ck_assert_int_eq(run_tick(&s, out), 6);
    const int first = out[0] / 100, other = 3 - first;
    const int want[6] = {first * 100,     other * 100,     other * 100 + 1,
                         other * 100 + 2, first * 100 + 1, first * 100 + 2};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(out[i], want[i]);
    askew_sched_free(&s);
}
END_TEST

START_TEST(test_sched_pct_draws_sorted_change_points_within_the_estimate)
{
    struct askew_sched s;
    askew_sched_init(&s);
    s.strategy = ASKEW_STRATEGY_PCT;
    s.pct_depth = 8;
    s.pct_steps = 50;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        askew_sched_reset(&s, seed);
        for (int i = 0; i < 7; i++) {
            ck_assert_uint_ge(s.pct_change_at[i], 1);
            ck_assert_uint_le(s.pct_change_at[i], 50);
            if (i > 0)
                ck_assert_uint_ge(s.pct_change_at[i], s.pct_change_at[i - 1]);
        }
    }
    askew_sched_free(&s);
}
END_TEST

/* Two loops of `rounds` steps each, one step per tick (a task that
 * yields). The bug needs the loop that runs first to alternate 2, 1, 2, ...
 * over `depth` equal phases of the rounds: an ordering bug of depth
 * `depth`, found by PCT with k = 2 * rounds, the steps of a run. */
static int phased_bug(enum askew_strategy strategy, uint64_t seed, int depth,
                      int rounds)
{
    struct askew_sched s;
    askew_sched_init(&s);
    s.strategy = strategy;
    s.pct_depth = (uint32_t)depth;
    s.pct_steps = 2 * (uint64_t)rounds;
    askew_sched_reset(&s, seed);
    int bug = 1;
    for (int r = 0; r < rounds; r++) {
        askew_sched_push(&s, ITEM(1), 1, 1);
        askew_sched_push(&s, ITEM(2), 2, 2);
        int out[2];
        ck_assert_int_eq(run_tick(&s, out), 2);
        bug &= out[0] == ((r * depth / rounds) % 2 == 0 ? 2 : 1);
    }
    askew_sched_free(&s);
    return bug;
}

/* Runs the phased bug under PCT and under faithful for seeds 1..seeds:
 * PCT must find it at least `at_least` times, faithful under a fifth as
 * often. */
static void check_found(int depth, int rounds, uint64_t seeds, int at_least)
{
    int pct = 0, faithful = 0;
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        pct += phased_bug(ASKEW_STRATEGY_PCT, seed, depth, rounds);
        faithful += phased_bug(ASKEW_STRATEGY_FAITHFUL, seed, depth, rounds);
    }
    ck_assert_int_ge(pct, at_least);
    ck_assert_int_lt(faithful * 5, pct);
}

START_TEST(test_sched_pct_finds_a_depth_2_bug_at_least_as_often_as_its_bound)
{
    /* Burckhardt et al.: at least 1 / (n k^(d-1)) per run, n = 2 loops,
     * k = 20 steps, d = 2: 1/40, 100 of 4000 runs. Allow three standard
     * deviations (sqrt(4000 p (1-p)) ~ 9.9) below it; random group picks
     * need 2^-10 and find a handful. */
    check_found(2, 10, 4000, 100 - 30);
}
END_TEST

START_TEST(test_sched_pct_finds_a_depth_3_bug_at_least_as_often_as_its_bound)
{
    /* d = 3, k = 30: at least 1 / (2 * 30^2) = 1/1800, 22 of 40000 runs
     * (three standard deviations: 14); random picks need 2^-15. */
    check_found(3, 15, 40000, 22 - 14);
}
END_TEST

START_TEST(test_sched_pct_same_seed_gives_the_same_order_and_hash)
{
    uint64_t hash[2];
    int out[2][16] = {{0}};
    for (int run = 0; run < 2; run++) {
        struct askew_sched s;
        askew_sched_init(&s);
        s.strategy = ASKEW_STRATEGY_PCT;
        s.pct_depth = 3;
        s.pct_steps = 6;
        askew_sched_reset(&s, 99);
        push_keys(&s, 4, 3);
        ck_assert_int_eq(run_tick(&s, out[run]), 12);
        hash[run] = s.trace.hash;
        askew_sched_free(&s);
    }
    ck_assert_uint_eq(hash[0], hash[1]);
    ck_assert_mem_eq(out[0], out[1], sizeof out[0]);
}
END_TEST

Suite *sched_suite(void)
{
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sched_fifo_runs_in_push_order);
    tcase_add_test(tc, test_sched_work_queued_during_a_tick_waits_for_the_next);
    tcase_add_test(tc,
                   test_sched_interleave_keeps_siblings_in_order_and_interleaves_steps);
    tcase_add_test(tc, test_sched_interleave_fires_equal_deadlines_in_prng_order);
    tcase_add_test(
        tc, test_sched_faithful_keeps_each_key_in_fifo_order_and_interleaves_keys);
    tcase_add_test(tc,
                   test_sched_faithful_with_one_key_is_asyncio_order_and_draws_no_pick);
    tcase_add_test(tc,
                   test_sched_faithful_charges_each_step_cpu_time_within_its_bounds);
    tcase_add_test(tc, test_sched_fifo_charges_no_cpu_time_and_no_overshoot);
    tcase_add_test(tc, test_sched_faithful_wakes_after_a_deadline_never_before);
    tcase_add_test(tc, test_sched_a_view_ahead_of_the_clock_makes_timers_due);
    tcase_add_test(tc, test_sched_clear_drops_what_a_drop_queues);
    tcase_add_test(tc, test_sched_shuffle_permutes_the_whole_batch);
    tcase_add_test(tc, test_sched_same_seed_gives_the_same_order_and_hash);
    tcase_add_test(tc, test_sched_clock_jumps_to_the_earliest_timer_when_idle);
    tcase_add_test(tc,
                   test_sched_timers_with_equal_deadlines_fire_in_registration_order);
    tcase_add_test(tc, test_sched_cancelled_timers_never_fire);
    tcase_add_test(tc, test_sched_time_budget_stops_before_a_timer_past_it);
    tcase_add_test(tc, test_sched_clear_hands_back_everything_queued);
    tcase_add_test(tc, test_sched_a_timer_that_queues_nothing_does_not_end_the_run);
    tcase_add_test(
        tc, test_sched_pct_without_change_points_runs_each_key_whole_in_fifo_order);
    tcase_add_test(tc, test_sched_pct_lowers_the_running_key_at_a_change_point);
    tcase_add_test(tc, test_sched_pct_draws_sorted_change_points_within_the_estimate);
    tcase_add_test(tc,
                   test_sched_pct_finds_a_depth_2_bug_at_least_as_often_as_its_bound);
    tcase_add_test(tc,
                   test_sched_pct_finds_a_depth_3_bug_at_least_as_often_as_its_bound);
    tcase_add_test(tc, test_sched_pct_same_seed_gives_the_same_order_and_hash);
    suite_add_tcase(s, tc);
    return s;
}
