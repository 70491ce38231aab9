/* SPDX-License-Identifier: Apache-2.0 */
/* A sleep's and a sigtimedwait's simulation side (hook_sleep.c), as
 * syscall() reaches them, and what hook_sync.c and hook_sleep.c share of
 * the timed waits.
 * Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_SLEEP_H
#define ASKEW_PRELOAD_HOOK_SLEEP_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>

#include "internal.h"

/* A sleep on the simulation thread, for clock_nanosleep's arguments: 0 or
 * an errno (returned, not set), as clock_nanosleep has it. `call` names the
 * interposer for the record, `ret` is its return address. */
int askew__sim_sleep(const struct askew_preload_hooks *h, clockid_t clock, int flags,
                     const struct timespec *req, const char *call,
                     void *ret) ASKEW_HIDDEN;
/* sigtimedwait with a timeout on the simulation thread (libc's contract). */
int askew__sim_sigtimedwait(const struct askew_preload_hooks *h, const sigset_t *set,
                            siginfo_t *info, const struct timespec *tmo,
                            void *ret) ASKEW_HIDDEN;

/* The interval from the virtual reading of `clock` (-1: the nearer of the
 * wall and monotonic clocks) to the deadline `abs`, in ns: 0 when past, -1
 * when it does not fit or the clock cannot be read, -EINVAL for a bad
 * deadline. */
int64_t askew__virtual_wait_ns(const struct askew_preload_hooks *h, clockid_t clock,
                               const struct timespec *abs) ASKEW_HIDDEN;

/* The timed condvar and semaphore waits of a run with C threads
 * (hook_sync.c): the deadline on the node's clock, waited for on the
 * baton. Each call's own contract. */
int askew__sync_cond_timedwait(const struct askew_preload_hooks *h, pthread_cond_t *c,
                               pthread_mutex_t *m, clockid_t clock,
                               const struct timespec *abs, const char *call,
                               const void *ret) ASKEW_HIDDEN;
int askew__sync_sem_timedwait(const struct askew_preload_hooks *h, sem_t *sem,
                              clockid_t clock, const struct timespec *abs,
                              const char *call, const void *ret) ASKEW_HIDDEN;

#endif
