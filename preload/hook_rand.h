/* SPDX-License-Identifier: Apache-2.0 */
/* libc's global generators around a run (hook_rand.c), as enter and leave
 * swap them. Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_RAND_H
#define ASKEW_PRELOAD_HOOK_RAND_H

#include <stdint.h>

#include "internal.h"

/* At enter: the run's state for rand/random and drand48 in place of the
 * host's, seeded from `seed` when the enter starts a run (new_run), the
 * run's own from its last leave otherwise. */
void askew__libc_rng_enter(int new_run, uint64_t seed) ASKEW_HIDDEN;
/* At leave: the host's state back; the run's is kept for its next enter. */
void askew__libc_rng_leave(void) ASKEW_HIDDEN;

#endif
