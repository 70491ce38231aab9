/* SPDX-License-Identifier: Apache-2.0 */
/* What the preload's Check suites share (check_preload.c,
 * check_preload_hermetic.c): the test hooks that play the extension (a
 * frozen clock, counter bytes, a counting sleep), finding the API, and a
 * raw system call that bypasses the preload. Test code only; each suite is
 * its own program, so these are static. */
#ifndef ASKEW_TEST_PRELOAD_FIXTURE_H
#define ASKEW_TEST_PRELOAD_FIXTURE_H

#include <check.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "askew_preload.h"
#include "hang_guard.h"

extern char **environ;
uint32_t arc4random(void);
void arc4random_buf(void *buf, size_t n);
uint32_t arc4random_uniform(uint32_t upper_bound);

#define WALL_S  (ASKEW_WALL_EPOCH_S + 5)
#define MONO_S  1000
#define CPU_S   77 /* what the CPU-time clocks read */
#define FAKE_NS 250

static const struct askew_preload_api *api __attribute__((unused));

static inline void *nothing(void *arg)
{
    return arg;
}

static struct {
    uint64_t draws;
    uint8_t next_byte;
    int callbacks;
    int reentered_real;
    int64_t slept_ns; /* what the sleep hook was asked for, in total */
    int sleeps;
    int sleep_rc; /* what the sleep hook answers */
} st __attribute__((unused));

static inline int test_now(void *ctx, int realtime, struct timespec *out)
{
    (void)ctx;
    out->tv_sec = realtime == ASKEW_CLOCK_REALTIME  ? WALL_S
                  : realtime == ASKEW_CLOCK_CPUTIME ? CPU_S
                                                    : MONO_S;
    out->tv_nsec = FAKE_NS;
    return 0;
}

static inline int test_random(void *ctx, void *buf, size_t len)
{
    (void)ctx;
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = st.next_byte++;
    st.draws++;
    return 0;
}

static inline void test_on_violation(void *ctx)
{
    (void)ctx;
    st.callbacks++;
}

/* The extension's sleep hook: count, and answer st.sleep_rc. */
static inline int test_sleep(void *ctx, int64_t ns)
{
    (void)ctx;
    if (st.sleep_rc == 0)
        st.slept_ns += ns;
    st.sleeps++;
    return st.sleep_rc;
}

/* As the extension has hooked since ABI 1.1: sleeps cost virtual time. */
__attribute__((unused)) static const struct askew_preload_hooks sleep_hooks = {
    .size = sizeof(struct askew_preload_hooks),
    .ctx = NULL,
    .now = test_now,
    .random = test_random,
    .on_violation = test_on_violation,
    .sleep = test_sleep,
};

__attribute__((unused)) static const struct askew_preload_hooks hooks = {
    .size = sizeof(struct askew_preload_hooks),
    .ctx = NULL,
    .now = test_now,
    .random = test_random,
    .on_violation = test_on_violation,
};

static inline void find_api(void)
{
    askew_preload_get_api_fn get =
        (askew_preload_get_api_fn)dlsym(RTLD_DEFAULT, ASKEW_PRELOAD_GET_API);
    ck_assert_msg(get != NULL, "run me with LD_PRELOAD=libaskew-preload.so");
    api = get(ASKEW_PRELOAD_ABI_MAJOR);
    ck_assert_ptr_nonnull(api);
    memset(&st, 0, sizeof(st));
}

static inline void enter(void)
{
    ck_assert_int_eq(api->enter(&hooks), 0);
}

/* libc's own syscall(), found in libc itself, so it bypasses the preload. */
static inline long raw(long nr, long a0, long a1, long a2)
{
    static long (*libc_syscall)(long, ...);
    if (libc_syscall == NULL) {
        void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        ck_assert_ptr_nonnull(libc);
        libc_syscall = (long (*)(long, ...))dlsym(libc, "syscall");
        ck_assert_ptr_nonnull(libc_syscall);
    }
    return libc_syscall(nr, a0, a1, a2);
}

static inline int64_t ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* The interpreter's code, as the extension marks it (hooks->interp): here
 * the test program's own text stands for it. */
static inline void mark_self_as_interp(struct askew_preload_hooks *h)
{
    h->interp[0].lo = (uintptr_t)&mark_self_as_interp - (1u << 20);
    h->interp[0].hi = (uintptr_t)&mark_self_as_interp + (1u << 20);
}

static inline const char *last_call(void)
{
    static struct askew_violation v;
    uint64_t n = api->violations();
    if (n == 0)
        return "";
    ck_assert_int_eq(api->violation_get(n - 1, &v), 0);
    return v.call;
}

/* Run the suite `make` makes in fork mode (each test in its own child, so
 * a test that enters a simulation cannot leak it into the next), each case
 * under the suite's hang guard; the exit status. */
static inline int run_suite(Suite *(*make)(void))
{
    set_hang_guards(); /* before make() creates the cases */
    SRunner *sr = srunner_create(make());
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
