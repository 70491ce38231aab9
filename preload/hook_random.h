/* SPDX-License-Identifier: Apache-2.0 */
/* getrandom's simulation side (hook_random.c), as syscall(), the reads of
 * the random devices and the temporary names reach it: the libc contract
 * (-1 and errno). Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_RANDOM_H
#define ASKEW_PRELOAD_HOOK_RANDOM_H

#include "internal.h"

long askew__sim_getrandom(const struct askew_preload_hooks *h, void *buf, size_t len,
                          unsigned int flags) ASKEW_HIDDEN;
/* A new run: its AT_RANDOM bytes are drawn afresh. */
void askew__auxv_run_begins(void) ASKEW_HIDDEN;

#endif
