/* SPDX-License-Identifier: Apache-2.0 */
/* Objects that carry their own OpenSSL generator (hook_ownrng.c), as the
 * clock and entropy interposers ask. Preload files only. */
#ifndef ASKEW_PRELOAD_HOOK_OWNRNG_H
#define ASKEW_PRELOAD_HOOK_OWNRNG_H

#include "internal.h"

/* 1 when `ret` (an interposer's return address) lies in an object that
 * carries its own OpenSSL random generator (hook_ownrng.c) and no caller is
 * one of its quiet draws; simulation thread only. ASKEW_OWN_RNG records the
 * refusal for a clock or entropy interposer's caller and lets the call be
 * answered as usual. */
int askew__sim_own_rng(const struct askew_preload_hooks *h,
                       const void *ret) ASKEW_HIDDEN;
#define ASKEW_OWN_RNG(h, call)                                                         \
    do {                                                                               \
        if (ASKEW_UNLIKELY(askew__sim_own_rng((h), __builtin_return_address(0))))      \
            ASKEW_RECORD((h), ASKEW_VIOLATION_OWN_RNG, (call), 0, 0);                  \
    } while (0)

#endif
