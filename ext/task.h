/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Task (asyncio's C Task hashed by creation number) and the
 * C Future type that create_future returns. Binding files only. */
#ifndef ASKEW_TASK_H
#define ASKEW_TASK_H

#include "core.h"

/* Module init: Task into the module, and the asyncio objects it calls into
 * the module state. */
int askew__task_types_init(PyObject *module);
/* Future.done(fut): 1, 0, or -1 with an exception. fut is an exact Future. */
int askew__future_done(PyObject *fut);
/* Future.set_result(fut, value): 0, or -1 with an exception. */
int askew__future_set_result(PyObject *fut, PyObject *value);
/* asyncio.futures._set_result_unless_cancelled, which asyncio.sleep's timer
 * calls: run in C when its future is an exact Future (no Python frame). */
int askew__future_set_result_unless_cancelled(const struct askew_state *st,
                                              PyObject *fut, PyObject *value);
/* askew._core.Task(*args, **kwds) carrying creation number `seq` (its
 * hash) and owner token `owner` (-1: the world's). New reference, or NULL
 * with an exception. */
PyObject *askew__task_make(const struct askew_state *st, PyObject *args, PyObject *kwds,
                           uint64_t seq, int64_t owner);

#endif
