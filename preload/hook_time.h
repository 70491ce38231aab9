/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated clocks (hook_time.c), as syscall() and the sleeps reach
 * them. Each keeps the libc contract of the call it is named after (-1 and
 * errno). Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_TIME_H
#define ASKEW_PRELOAD_HOOK_TIME_H

#include "internal.h"

int askew__sim_clock_gettime(const struct askew_preload_hooks *h, clockid_t id,
                             struct timespec *ts) ASKEW_HIDDEN;
int askew__sim_clock_getres(clockid_t id, struct timespec *res) ASKEW_HIDDEN;
/* 1 when the simulation answers clock `id`, 0 when the real clock must. */
int askew__sim_clock_known(clockid_t id) ASKEW_HIDDEN;

#endif
