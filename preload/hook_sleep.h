/* SPDX-License-Identifier: Apache-2.0 */
/* A sleep's and a sigtimedwait's simulation side (hook_sleep.c), as
 * syscall() reaches them.
 * Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_SLEEP_H
#define ASKEW_PRELOAD_HOOK_SLEEP_H

#include <signal.h>

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

#endif
