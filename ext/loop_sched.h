/* SPDX-License-Identifier: Apache-2.0 */
/* Scheduling on a loop (loop_sched.c): the Python methods that make
 * handles, futures and tasks (the Loop type's table refers to them), the C
 * entry points the loop's other units and its network's host use, and what
 * the loop hands its handles. Binding files only. */
#ifndef ASKEW_LOOP_SCHED_H
#define ASKEW_LOOP_SCHED_H

#include "handle.h"
#include "loop.h"

/* What every handle of a loop asks of it; the Loop type's init puts it in
 * the module state (askew_state.handle_loop). */
extern const struct askew_handle_loop askew__loop_handle_ops;

/* A handle running callback(*args) in a later tick, in `context` (NULL: a
 * copy of the current one), as call_soon. New reference. */
PyObject *askew__loop_call_soon_impl(struct askew_loop_state *self, PyObject *callback,
                                     PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *context);
/* A timer handle for deadline_ns on the world clock. New reference. */
PyObject *askew__loop_call_at_ns(struct askew_loop_state *self, int64_t deadline_ns,
                                 PyObject *callback, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *context);
/* loop.create_future(). New reference. */
PyObject *askew__loop_new_future(struct askew_loop_state *self);

/* The Loop type's methods of the same names (METH_FASTCALL | METH_KEYWORDS,
 * METH_NOARGS, METH_FASTCALL, METH_O). */
PyObject *askew__loop_call_soon(struct askew_loop_state *self, PyObject *const *args,
                                Py_ssize_t nargsf, PyObject *kwnames);
PyObject *askew__loop_call_later(struct askew_loop_state *self, PyObject *const *args,
                                 Py_ssize_t nargsf, PyObject *kwnames);
PyObject *askew__loop_call_at(struct askew_loop_state *self, PyObject *const *args,
                              Py_ssize_t nargsf, PyObject *kwnames);
PyObject *askew__loop_create_future(struct askew_loop_state *self, PyObject *ignored);
PyObject *askew__loop_create_task(struct askew_loop_state *self, PyObject *const *args,
                                  Py_ssize_t nargsf, PyObject *kwnames);
PyObject *askew__loop_make_task(struct askew_loop_state *self, PyObject *const *args,
                                Py_ssize_t nargs);
PyObject *askew__loop_next_task_seq(struct askew_loop_state *self, PyObject *ignored);
PyObject *askew__loop_set_task_factory_raw(struct askew_loop_state *self,
                                           PyObject *factory);

#endif
