/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Task and askew._core.Future (asyncio's C Task and Future,
 * hashed by creation number and marked with their run's epoch), and the
 * Future calls the hot paths make. Binding files only. */
#ifndef ASKEW_TASK_H
#define ASKEW_TASK_H

#include "core.h"

/* Module init: Task into the module, and the asyncio objects it calls into
 * the module state. */
int askew__task_types_init(PyObject *module);
/* Future.done(fut): 1, 0, or -1 with an exception. fut is an asyncio
 * Future: exact, or ours. */
int askew__future_done(PyObject *fut);
/* Future.set_result(fut, value): 0, or -1 with an exception. */
int askew__future_set_result(PyObject *fut, PyObject *value);
/* asyncio.futures._set_result_unless_cancelled, which asyncio.sleep's timer
 * calls: run in C when its future is ours or an exact Future (no Python
 * frame). */
int askew__future_set_result_unless_cancelled(const struct askew_state *st,
                                              PyObject *fut, PyObject *value);
/* askew._core.Task(*args, **kwds) carrying creation number `seq` (its
 * hash), the run's `epoch` and owner token `owner` (-1: the world's). New
 * reference, or NULL with an exception. */
PyObject *askew__task_make(const struct askew_state *st, PyObject *args, PyObject *kwds,
                           uint64_t seq, uint64_t epoch, int64_t owner);
/* askew._core.Future(**kwds) carrying creation number `seq` and `epoch`.
 * New reference, or NULL with an exception. */
PyObject *askew__future_make(const struct askew_state *st, PyObject *kwds, uint64_t seq,
                             uint64_t epoch);
/* The epoch of the run that made `obj` if it is one of our Tasks or
 * Futures made by a loop; 0 for anything else. Never fails. */
uint64_t askew__made_epoch(const struct askew_state *st, PyObject *obj);

#endif
