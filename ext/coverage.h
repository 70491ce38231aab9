/* SPDX-License-Identifier: Apache-2.0 */
/* Interleaving coverage (askew/_explore/coverage.py): when a loop has it on, each
 * step's (node, site) and the previous step's are hashed into one bit of
 * a 64 Ki-bit map, AFL's edge coverage over steps. A site is where the
 * step's task suspended (its coroutine's qualified name and line), or the
 * plain callback's function. Off, it costs the step path two pointer
 * tests. Binding files only. */
#ifndef ASKEW_COVERAGE_H
#define ASKEW_COVERAGE_H

#include "core.h"

#define ASKEW_COVERAGE_BITS 65536u

struct askew_coverage {
    uint8_t map[ASKEW_COVERAGE_BITS / 8];
    uint64_t prev; /* the previous step's site, shifted (AFL's prev >> 1) */
};

/* After a step of `node` ran `callback` (a new reference, consumed): set
 * the step's edge. Never raises; does nothing while an exception is set,
 * so a failing step's error stays as it was. */
void askew__coverage_note(struct askew_coverage *cov, const struct askew_state *st,
                          int64_t node, PyObject *callback);

/* loop._coverage(on): turn `*cov` on (cleared) or off; 0 or -1. */
int askew__coverage_set(struct askew_coverage **cov, PyObject *on);
/* loop._coverage_take(): the map as bytes, then cleared (None when off). */
PyObject *askew__coverage_take(struct askew_coverage *cov);

#endif
