/* SPDX-License-Identifier: Apache-2.0 */
/* The baton (ext/engine/baton.h): one holder at a time, hand-offs that
 * wake exactly the actor named, a draw of the next holder that is the
 * seed's and only among runnable actors, and a reset that refuses while a
 * thread of the last run is alive. Real pthreads play the actors. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "baton.h"

START_TEST(test_baton_starts_with_the_home_actor_holding_it)
{
    struct askew_baton b;
    ck_assert_int_eq(askew_baton_init(&b), 0);
    ck_assert_int_eq(askew_baton_reset(&b, 7), 0);
    uint32_t next = 99, runnable = 0;
    ck_assert_int_eq(askew_baton_pick(&b, ASKEW_BATON_NOBODY, &next, &runnable), 0);
    ck_assert_uint_eq(next, ASKEW_BATON_HOME);
    ck_assert_uint_eq(runnable, 1);
    ck_assert_int_eq(askew_baton_give(&b, ASKEW_BATON_HOME, ASKEW_BATON_HOME), 0);
    ck_assert_int_eq(askew_baton_give(&b, 1, ASKEW_BATON_HOME), -EINVAL);
    askew_baton_free(&b);
}
END_TEST

START_TEST(test_baton_picks_only_runnable_actors_and_none_is_a_deadlock)
{
    struct askew_baton b;
    ck_assert_int_eq(askew_baton_init(&b), 0);
    askew_baton_reset(&b, 1);
    uint32_t a1, a2, next, runnable;
    ck_assert_int_eq(askew_baton_add(&b, &a1), 0);
    ck_assert_int_eq(askew_baton_add(&b, &a2), 0);
    ck_assert_uint_eq(a1, 1);
    ck_assert_uint_eq(a2, 2);
    ck_assert_int_eq(askew_baton_set(&b, ASKEW_BATON_HOME, ASKEW_BATON_BLOCKED), 0);
    ck_assert_int_eq(askew_baton_set(&b, a2, ASKEW_BATON_RUNNABLE), 0);
    for (int i = 0; i < 50; i++) {
        ck_assert_int_eq(askew_baton_pick(&b, ASKEW_BATON_NOBODY, &next, &runnable), 0);
        ck_assert_uint_eq(next, a2);
    }
    ck_assert_int_eq(askew_baton_set(&b, a2, ASKEW_BATON_DONE), 0);
    ck_assert_int_eq(askew_baton_set(&b, a2, ASKEW_BATON_RUNNABLE), -EINVAL);
    ck_assert_int_eq(askew_baton_pick(&b, ASKEW_BATON_NOBODY, &next, &runnable),
                     -EDEADLK);
    ck_assert_uint_eq(runnable, 0);
    ck_assert_int_eq(askew_baton_set(&b, 9, ASKEW_BATON_RUNNABLE), -EINVAL);
    ck_assert_int_eq(askew_baton_set(&b, a1, (enum askew_baton_state)7), -EINVAL);
    askew_baton_free(&b);
}
END_TEST

/* The sequence of picks among n runnable actors for a seed. */
static void picks(uint64_t seed, uint32_t *out, int n)
{
    struct askew_baton b;
    ck_assert_int_eq(askew_baton_init(&b), 0);
    askew_baton_reset(&b, seed);
    uint32_t id, runnable;
    for (int i = 0; i < 3; i++) {
        askew_baton_add(&b, &id);
        askew_baton_set(&b, id, ASKEW_BATON_RUNNABLE);
    }
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(askew_baton_pick(&b, ASKEW_BATON_NOBODY, &out[i], &runnable),
                         0);
    askew_baton_free(&b);
}

START_TEST(test_baton_picks_are_the_seeds_and_reach_every_runnable_actor)
{
    uint32_t first[64], again[64], other[64];
    picks(42, first, 64);
    picks(42, again, 64);
    picks(43, other, 64);
    int seen[4] = {0}, differs = 0;
    for (int i = 0; i < 64; i++) {
        ck_assert_uint_eq(first[i], again[i]);
        ck_assert_uint_lt(first[i], 4);
        seen[first[i]] = 1;
        differs |= first[i] != other[i];
    }
    ck_assert(seen[0] && seen[1] && seen[2] && seen[3]);
    ck_assert(differs);
}
END_TEST

/* Two threads and the home actor pass the baton round; each records its id
 * in `order` while it holds the baton, so an overlap would show as a
 * missing or doubled entry. */
#define ROUNDS 10000
struct ring {
    struct askew_baton b;
    uint32_t order[3 * ROUNDS];
    int len;
};

struct player {
    struct ring *r;
    uint32_t self;
    uint32_t next;
};

static void *play(void *arg)
{
    struct player *p = arg;
    ck_assert_int_eq(askew_baton_wait(&p->r->b, p->self), 0);
    for (int i = 0; i < ROUNDS; i++) {
        p->r->order[p->r->len++] = p->self;
        if (i + 1 < ROUNDS)
            ck_assert_int_eq(askew_baton_give(&p->r->b, p->self, p->next), 0);
    }
    ck_assert_int_eq(askew_baton_set(&p->r->b, p->self, ASKEW_BATON_DONE), 0);
    ck_assert_int_eq(askew_baton_pass(&p->r->b, p->self, p->next), 0);
    return NULL;
}

START_TEST(test_baton_hands_off_ten_thousand_times_one_holder_at_a_time)
{
    static struct ring r;
    ck_assert_int_eq(askew_baton_init(&r.b), 0);
    askew_baton_reset(&r.b, 5);
    uint32_t t1, t2;
    askew_baton_add(&r.b, &t1);
    askew_baton_add(&r.b, &t2);
    struct player p1 = {&r, t1, t2}, p2 = {&r, t2, ASKEW_BATON_HOME};
    pthread_t h1, h2;
    pthread_create(&h1, NULL, play, &p1);
    pthread_create(&h2, NULL, play, &p2);
    for (int i = 0; i < ROUNDS; i++) {
        r.order[r.len++] = ASKEW_BATON_HOME;
        ck_assert_int_eq(askew_baton_give(&r.b, ASKEW_BATON_HOME, t1), 0);
    }
    pthread_join(h1, NULL);
    pthread_join(h2, NULL);
    ck_assert_int_eq(r.len, 3 * ROUNDS);
    for (int i = 0; i < 3 * ROUNDS; i++)
        ck_assert_uint_eq(r.order[i], (uint32_t)(i % 3));
    ck_assert_uint_eq(r.b.handoffs, 3 * ROUNDS);
    askew_baton_free(&r.b);
}
END_TEST

START_TEST(test_baton_reset_refuses_while_a_thread_of_the_run_lives)
{
    struct askew_baton b;
    ck_assert_int_eq(askew_baton_init(&b), 0);
    askew_baton_reset(&b, 3);
    uint32_t id;
    askew_baton_add(&b, &id);
    ck_assert_int_eq(askew_baton_reset(&b, 4), -EBUSY);
    askew_baton_set(&b, id, ASKEW_BATON_DONE);
    ck_assert_int_eq(askew_baton_reset(&b, 4), 0);
    askew_baton_add(&b, &id);
    ck_assert_uint_eq(id, 1); /* ids are per run */
    ck_assert_int_eq(askew_baton_give(&b, id, ASKEW_BATON_HOME), -EPERM);
    askew_baton_free(&b);
}
END_TEST

START_TEST(test_baton_a_runnable_holder_mostly_keeps_it_and_sometimes_hands_over)
{
    struct askew_baton b;
    ck_assert_int_eq(askew_baton_init(&b), 0);
    askew_baton_reset(&b, 11);
    uint32_t id, next, runnable;
    for (int i = 0; i < 2; i++) {
        askew_baton_add(&b, &id);
        askew_baton_set(&b, id, ASKEW_BATON_RUNNABLE);
    }
    int kept = 0, to[3] = {0};
    for (int i = 0; i < 4000; i++) {
        ck_assert_int_eq(askew_baton_pick(&b, 1, &next, &runnable), 0);
        ck_assert_uint_eq(runnable, 3);
        kept += next == 1;
        to[next]++;
    }
    /* About 3/4 kept; the rest split between actors 0 and 2. */
    ck_assert_int_gt(kept, 2800);
    ck_assert_int_lt(kept, 3200);
    ck_assert_int_gt(to[0], 350);
    ck_assert_int_gt(to[2], 350);
    /* A blocked holder is never drawn. */
    askew_baton_set(&b, 1, ASKEW_BATON_BLOCKED);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(askew_baton_pick(&b, 1, &next, &runnable), 0);
        ck_assert_uint_ne(next, 1);
    }
    askew_baton_free(&b);
}
END_TEST

Suite *baton_suite(void)
{
    Suite *s = suite_create("baton");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_baton_starts_with_the_home_actor_holding_it);
    tcase_add_test(tc, test_baton_picks_only_runnable_actors_and_none_is_a_deadlock);
    tcase_add_test(tc, test_baton_picks_are_the_seeds_and_reach_every_runnable_actor);
    tcase_add_test(tc, test_baton_hands_off_ten_thousand_times_one_holder_at_a_time);
    tcase_add_test(tc, test_baton_reset_refuses_while_a_thread_of_the_run_lives);
    tcase_add_test(
        tc, test_baton_a_runnable_holder_mostly_keeps_it_and_sometimes_hands_over);
    suite_add_tcase(s, tc);
    return s;
}
