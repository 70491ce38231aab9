/* SPDX-License-Identifier: Apache-2.0 */
/* The run loop and a run's setup and teardown (loop_run.c): the Python
 * methods the Loop type's table refers to, and the clearing of the queues
 * the type's GC support shares. Binding files only. */
#ifndef ASKEW_LOOP_RUN_H
#define ASKEW_LOOP_RUN_H

#include "loop.h"

/* What Loop._run returns (exported as _core.RUN_*): stopped, idle (nothing
 * ready, no timer), past the time budget, past the step budget. */
enum askew_run_status {
    ASKEW_RUN_STOPPED = 0,
    ASKEW_RUN_IDLE = 1,
    ASKEW_RUN_TIME_BUDGET = 2,
    ASKEW_RUN_STEP_BUDGET = 3
};

/* Drop everything queued (ready, timers, messages, held callbacks), round
 * and round until a drop's finalizer queues nothing more. */
void askew__loop_clear_queues(struct askew_loop_state *self);
/* What a queue drops: a handle, whose queue reference goes. */
void askew__loop_drop_item(void *item);

/* The Loop type's methods _run, _set_step_hook, _reset, _clear,
 * _mark_closed, _enter and _leave. */
PyObject *askew__loop_run(struct askew_loop_state *self, PyObject *ignored);
PyObject *askew__loop_set_step_hook(struct askew_loop_state *self, PyObject *fn);
PyObject *askew__loop_reset(struct askew_loop_state *self, PyObject *seed_obj);
PyObject *askew__loop_clear(struct askew_loop_state *self, PyObject *ignored);
PyObject *askew__loop_mark_closed(struct askew_loop_state *self, PyObject *ignored);
PyObject *askew__loop_enter(struct askew_loop_state *self, PyObject *ignored);
PyObject *askew__loop_leave(struct askew_loop_state *self, PyObject *ignored);

#endif
