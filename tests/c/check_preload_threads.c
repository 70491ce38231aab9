/* SPDX-License-Identifier: Apache-2.0 */
/* Check suite for what ABI 1.5 of libaskew-preload.so adds: C threads of a
 * run. Plays the extension with a thread hook of its own, a baton reduced
 * to what a sequential test needs (a created thread waits for the baton
 * until it is joined, and hands it back when it exits), and logs every
 * switch point the preload hands it. Run under LD_PRELOAD in fork mode,
 * as check_preload.c; nothing here asserts on how long anything took. The
 * real baton and its seeded order are tests/loop/test_preload_threads.py's. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "preload_fixture.h"

#define LOG_MAX 64

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t holder;
    uint32_t next_id;
    int done[8];
    int kill_at; /* the op at which a C thread is told it was killed, or 0 */
    int refuse_create;
    int n;
    uint32_t op[LOG_MAX];
    uint32_t actor[LOG_MAX];
    int64_t timeout_ns[LOG_MAX];
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The hook runs with the switch off: these are libc's own calls. */
static int fake_thread(void *ctx, struct askew_thread_call *c)
{
    (void)ctx;
    pthread_mutex_lock(&fake.mu);
    if (fake.n < LOG_MAX) {
        fake.op[fake.n] = c->op;
        fake.actor[fake.n] = c->actor;
        fake.timeout_ns[fake.n] = c->timeout_ns;
        fake.n++;
    }
    int rc = 0;
    switch (c->op) {
    case ASKEW_THREAD_CREATE:
        if (fake.refuse_create)
            rc = -EAGAIN;
        else
            c->target = ++fake.next_id;
        break;
    case ASKEW_THREAD_BEGIN:
        while (fake.holder != c->actor)
            pthread_cond_wait(&fake.cv, &fake.mu);
        break;
    case ASKEW_THREAD_BLOCK:
        rc = -ETIMEDOUT; /* only sleeps wait here: their time passes at once */
        break;
    case ASKEW_THREAD_JOIN:
        if (!fake.done[c->target]) {
            fake.holder = c->target;
            pthread_cond_broadcast(&fake.cv);
            while (!fake.done[c->target])
                pthread_cond_wait(&fake.cv, &fake.mu);
            fake.holder = c->actor;
        }
        break;
    case ASKEW_THREAD_EXIT:
        fake.done[c->actor] = 1;
        pthread_cond_broadcast(&fake.cv);
        break;
    default:
        break;
    }
    if (c->actor != ASKEW_THREAD_LOOP && (int)c->op == fake.kill_at &&
        c->op != ASKEW_THREAD_EXIT)
        rc = ASKEW_THREAD_KILLED;
    pthread_mutex_unlock(&fake.mu);
    return rc;
}

static struct askew_preload_hooks thread_hooks(void)
{
    struct askew_preload_hooks h = sleep_hooks;
    h.thread = fake_thread;
    return h;
}

/* The ops the hook saw from `actor`, in order, as a string of digits;
 * without SWITCH and WAKE when `all` is 0 (Check's own mutexes, in this
 * program, are code under test too: each assertion is a lock and unlock). */
static const char *ops_of_some(uint32_t actor, int all)
{
    static char out[LOG_MAX + 1];
    int k = 0;
    pthread_mutex_lock(&fake.mu);
    for (int i = 0; i < fake.n; i++)
        if (fake.actor[i] == actor && (all || (fake.op[i] != ASKEW_THREAD_SWITCH &&
                                               fake.op[i] != ASKEW_THREAD_WAKE)))
            out[k++] = (char)('0' + fake.op[i]);
    pthread_mutex_unlock(&fake.mu);
    out[k] = '\0';
    return out;
}

static const char *ops_of(uint32_t actor)
{
    return ops_of_some(actor, /* all */ 1);
}

static pthread_mutex_t body_mu = PTHREAD_MUTEX_INITIALIZER;
static struct timespec body_clock;
static int body_cleaned;

static void body_cleanup(void *arg)
{
    (void)arg;
    body_cleaned = 1;
}

/* A C thread's body: the run's clock, a lock, a sleep, a result. */
static void *body(void *arg)
{
    pthread_cleanup_push(body_cleanup, NULL);
    clock_gettime(CLOCK_MONOTONIC, &body_clock);
    pthread_mutex_lock(&body_mu);
    pthread_mutex_unlock(&body_mu);
    usleep(5000);
    pthread_cleanup_pop(0);
    return arg;
}

START_TEST(test_the_abi_is_1_5)
{
    ck_assert_uint_ge(api->abi_minor, 5);
}
END_TEST

START_TEST(test_without_a_thread_hook_pthread_create_is_refused_as_before)
{
    ck_assert_int_eq(api->enter(&sleep_hooks), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), EAGAIN);
    ck_assert_str_eq(last_call(), "pthread_create");
    api->leave();
}
END_TEST

START_TEST(test_a_run_that_takes_no_thread_refuses_pthread_create)
{
    struct askew_preload_hooks h = thread_hooks();
    fake.refuse_create = 1;
    ck_assert_int_eq(api->enter(&h), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), EAGAIN);
    ck_assert_str_eq(last_call(), "pthread_create");
    ck_assert_str_eq(ops_of(ASKEW_THREAD_LOOP), "1");
    api->leave();
}
END_TEST

START_TEST(test_a_c_thread_waits_for_the_baton_and_its_switch_points_reach_the_hook)
{
    struct askew_preload_hooks h = thread_hooks();
    ck_assert_int_eq(api->enter(&h), 0);
    pthread_t t;
    static int answer = 42;
    ck_assert_int_eq(pthread_create(&t, NULL, body, &answer), 0);
    ck_assert_int_eq(api->violations(), 0);
    void *result = NULL;
    ck_assert_int_eq(pthread_join(t, &result), 0);
    ck_assert_ptr_eq(result, &answer);
    /* The loop: CREATE, START, JOIN; the thread: BEGIN, the lock's SWITCH,
     * the unlock's WAKE, the sleep's BLOCK (of its length), EXIT. */
    ck_assert_str_eq(ops_of_some(ASKEW_THREAD_LOOP, /* all */ 0), "127");
    ck_assert_str_eq(ops_of(1), "34658");
    for (int i = 0; i < fake.n; i++)
        if (fake.op[i] == ASKEW_THREAD_BLOCK)
            ck_assert_int_eq(fake.timeout_ns[i], 5000000);
    /* It read the run's clock, not the host's. */
    ck_assert_int_eq(body_clock.tv_sec, MONO_S);
    ck_assert_int_eq(body_clock.tv_nsec, FAKE_NS);
    api->leave();
}
END_TEST

START_TEST(test_the_simulation_threads_locks_are_libcs_while_no_c_thread_lives)
{
    struct askew_preload_hooks h = thread_hooks();
    ck_assert_int_eq(api->enter(&h), 0);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    ck_assert_int_eq(pthread_mutex_lock(&m), 0);
    ck_assert_int_eq(pthread_cond_signal(&c), 0);
    ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
    ck_assert_int_eq(fake.n, 0);
    api->leave();
}
END_TEST

START_TEST(test_the_extensions_own_locks_are_never_switch_points)
{
    struct askew_preload_hooks h = thread_hooks();
    ck_assert_int_eq(api->enter(&h), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), 0);
    /* A C thread lives (it waits for the baton): the loop's lock is a
     * switch point ... */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    const int before = fake.n;
    const int locked = pthread_mutex_lock(&m);
    const int unlocked = pthread_mutex_unlock(&m);
    const int after = fake.n;
    ck_assert_int_eq(locked, 0);
    ck_assert_int_eq(unlocked, 0);
    ck_assert_int_eq(after - before, 2);
    ck_assert_uint_eq(fake.op[before], ASKEW_THREAD_SWITCH);
    ck_assert_uint_eq(fake.op[before + 1], ASKEW_THREAD_WAKE);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    api->leave();
    /* ... but not when the extension's own code takes it (here: this
     * program's text stands for the extension's). */
    fake.n = 0;
    fake.holder = 0;
    h.own.lo = (uintptr_t)&thread_hooks - (1u << 20);
    h.own.hi = (uintptr_t)&thread_hooks + (1u << 20);
    ck_assert_int_eq(api->enter(&h), 0);
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), 0);
    ck_assert_int_eq(pthread_mutex_lock(&m), 0);
    ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_str_eq(ops_of(ASKEW_THREAD_LOOP), "127");
    api->leave();
}
END_TEST

START_TEST(test_rwlock_waits_barriers_and_cancels_are_refused_while_c_threads_live)
{
    struct askew_preload_hooks h = thread_hooks();
    ck_assert_int_eq(api->enter(&h), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, nothing, NULL), 0);
    pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    ck_assert_int_eq(pthread_rwlock_wrlock(&l), 0); /* free: taken */
    ck_assert_int_eq(api->violations(), 0);
    ck_assert_int_eq(pthread_rwlock_rdlock(&l), EDEADLK); /* it would wait */
    ck_assert_str_eq(last_call(),
                     "pthread_rwlock_rdlock (a wait on another thread of the run)");
    pthread_barrier_t b;
    ck_assert_int_eq(pthread_barrier_init(&b, NULL, 2), 0);
    ck_assert_int_eq(pthread_barrier_wait(&b), EINVAL);
    ck_assert_str_eq(last_call(), "pthread_barrier_wait");
    ck_assert_int_eq(pthread_cancel(t), ESRCH);
    ck_assert_str_eq(last_call(), "pthread_cancel");
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    api->leave();
}
END_TEST

/* Run `body` on a C thread the hook says is killed at op `kill_at`: the
 * ops the thread made; *ran says whether the body began. */
static const char *killed_at(uint32_t kill_at, int *ran)
{
    struct askew_preload_hooks h = thread_hooks();
    fake.kill_at = (int)kill_at;
    body_cleaned = 0;
    body_clock.tv_sec = -1;
    ck_assert_int_eq(api->enter(&h), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, body, NULL), 0);
    void *result = &body_cleaned;
    ck_assert_int_eq(pthread_join(t, &result), 0);
    ck_assert_ptr_eq(result, NULL); /* no body's result: it never returned */
    api->leave();
    *ran = body_clock.tv_sec != -1;
    return ops_of(1);
}

START_TEST(test_a_thread_killed_before_it_ran_never_runs_its_body)
{
    int ran;
    ck_assert_str_eq(killed_at(ASKEW_THREAD_BEGIN, &ran), "38"); /* BEGIN, EXIT */
    ck_assert(!ran);
    ck_assert_int_eq(body_cleaned, 0);
}
END_TEST

START_TEST(test_a_thread_killed_at_a_switch_point_unwinds_through_its_cleanup)
{
    int ran;
    /* BEGIN, the lock's SWITCH, EXIT: pthread_exit ran the body's handler. */
    ck_assert_str_eq(killed_at(ASKEW_THREAD_SWITCH, &ran), "348");
    ck_assert(ran);
    ck_assert_int_eq(body_cleaned, 1);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("preload-threads");
    TCase *tc = tcase_create("threads");
    tcase_add_checked_fixture(tc, find_api, NULL);
    tcase_add_test(tc, test_the_abi_is_1_5);
    tcase_add_test(tc, test_without_a_thread_hook_pthread_create_is_refused_as_before);
    tcase_add_test(tc, test_a_run_that_takes_no_thread_refuses_pthread_create);
    tcase_add_test(
        tc, test_a_c_thread_waits_for_the_baton_and_its_switch_points_reach_the_hook);
    tcase_add_test(tc,
                   test_the_simulation_threads_locks_are_libcs_while_no_c_thread_lives);
    tcase_add_test(tc, test_the_extensions_own_locks_are_never_switch_points);
    tcase_add_test(
        tc, test_rwlock_waits_barriers_and_cancels_are_refused_while_c_threads_live);
    tcase_add_test(tc, test_a_thread_killed_before_it_ran_never_runs_its_body);
    tcase_add_test(tc,
                   test_a_thread_killed_at_a_switch_point_unwinds_through_its_cleanup);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(threads_suite);
}
