/* SPDX-License-Identifier: Apache-2.0 */
/* The report of a death after a refusal (hook_death.c), as the refusal
 * recorder and leave reach it. Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_DEATH_H
#define ASKEW_PRELOAD_HOOK_DEATH_H

#include "internal.h"

/* After a refusal inside a run: a fatal signal from now until leave
 * reports the run (its seed, the refused call, the replay command) before
 * the process dies. Installed once per run, only with an ABI 1.4 table
 * (which carries the seed). */
void askew__death_arm(const struct askew_preload_hooks *h) ASKEW_HIDDEN;
/* At leave: the handlers that were there before come back (unless someone
 * replaced ours meanwhile). */
void askew__death_disarm(void) ASKEW_HIDDEN;

#endif
