/* SPDX-License-Identifier: Apache-2.0 */
/* The run loop (see loop_run.h): Loop._run ticks the engine's scheduler
 * and runs what it hands out, one step at a time (a paused node's
 * callbacks held, a crashed incarnation's skipped, each step's CPU charged,
 * the step hook and the refusal check after every step), until a stop or
 * a budget ends it; _reset, _clear and _mark_closed drop what is queued;
 * _enter and _leave make a loop the active simulation around a run. Never
 * reads the host clock, never sleeps. Called through the Loop type's
 * methods (loop_type.c). */
#include "active.h"
#include "coverage.h" /* shrink3 */
#include "errors.h"
#include "handle.h"
#include "loop_run.h"
#include "preload.h"

#define HANDLE_OF(timer) askew__handle_of(timer)

/* Before a tick: where the user's clock says timers fall due. */
static int update_view(struct askew_loop_state *self)
{
    double now;
    if (self->time_view == NULL || askew__loop_now(self, &now) < 0)
        return self->time_view == NULL ? 0 : -1;
    return askew__loop_seconds_to_ns(now, &self->sched.view_ns);
}

static int fire_timer(void *ctx, struct askew_timer *timer)
{
    struct askew_loop_state *self = ctx;
    switch (timer->kind) {
    case ASKEW_TIMER_KIND_HANDLE: {
        askew_handle *h = HANDLE_OF(timer);
        /* The heap's reference moves to the ready queue. */
        const int rc =
            askew_sched_push(&self->sched, h, h->seq, askew__handle_loop_key(h));
        if (rc < 0)
            Py_DECREF(h);
        return rc;
    }
    default:
        return askew__network_fire(self->net, timer);
    }
}

void askew__loop_drop_item(void *item)
{
    askew_handle *h = item;
    h->queued = 0;
    Py_DECREF(h);
}

static void drop_timer(struct askew_timer *timer)
{
    if (timer->kind == ASKEW_TIMER_KIND_HANDLE)
        askew__loop_drop_item(HANDLE_OF(timer));
    else
        askew__network_drop_timer(timer);
}

/* An exception escaped a callback: asyncio hands it to the exception
 * handler, except SystemExit and KeyboardInterrupt, which stop the run. */
static int callback_failed(struct askew_loop_state *self, askew_handle *h)
{
    if (PyErr_ExceptionMatches(PyExc_SystemExit) ||
        PyErr_ExceptionMatches(PyExc_KeyboardInterrupt))
        return -1;
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    if (tb != NULL)
        PyException_SetTraceback(exc, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyObject *res = PyObject_CallMethod((PyObject *)self, "_callback_error", "OO",
                                        (PyObject *)h, exc);
    Py_DECREF(exc);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

static int collect_garbage(struct askew_loop_state *self)
{
    if (self->gc_collect == NULL)
        return 0;
    PyObject *res = PyObject_CallFunction(self->gc_collect, "i", 0);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* The step hook, as the world: an exception it raises ends _run with it,
 * the rest of the batch left queued as a stop leaves it. */
static int call_step_hook(struct askew_loop_state *self)
{
    self->node_stepped = self->node_current;
    self->node_current = -1;
    PyObject *res = PyObject_CallNoArgs(self->step_hook);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* _set_step_hook(fn or None): fn() is called after every step of this run;
 * a reset drops it. */
PyObject *askew__loop_set_step_hook(struct askew_loop_state *self, PyObject *fn)
{
    if (askew__set_hook(&self->step_hook, fn, "the step hook") < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Run until stop() or until the run cannot go on. Returns a status for
 * _loop.py to turn into an outcome (enum askew_run_status, exported as
 * _core.RUN_*). The step budget counts the steps of this call, so that the
 * cleanup after a run that used it up (a Runner closing, tasks cancelled)
 * gets a budget of its own. */
PyObject *askew__loop_run(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    struct askew_sched *sched = &self->sched;
    const uint64_t steps_end = sched->steps_max ? sched->steps + sched->steps_max : 0;
    for (;;) {
        if (update_view(self) < 0)
            return NULL;
        const int rc = askew_sched_tick(sched, fire_timer, self);
        if (rc < 0) {
            if (!PyErr_Occurred())
                askew__raise_engine(rc, "firing timers");
            return NULL;
        }
        if (rc != ASKEW_TICK_READY) {
            self->node_current = -1;
            if (self->stopping)
                break;
            return PyLong_FromLong(rc == ASKEW_TICK_IDLE ? ASKEW_RUN_IDLE
                                                         : ASKEW_RUN_TIME_BUDGET);
        }
        void *item;
        while ((item = askew_sched_next(sched)) != NULL) {
            askew_handle *h = item;
            h->queued = 0;
            /* A paused node runs nothing: its callbacks wait, in order, for
             * the resume; the queue's reference moves with them. */
            if (h->callback != NULL && askew__skew_paused(&self->skews, h->node)) {
                if (askew__skew_hold(&self->skews, h) < 0) {
                    Py_DECREF(h);
                    self->node_current = -1;
                    return NULL;
                }
                continue;
            }
            /* A crashed incarnation's work is skipped: a power cut runs
             * nothing. */
            if (h->callback != NULL &&
                (self->gate.var == NULL ||
                 askew__node_alive(&self->net->net, h->node, h->incarnation))) {
                self->node_current = h->node;
                /* shrink3: interleaving coverage, one pointer test when off. */
                PyObject *ran = self->coverage ? Py_NewRef(h->callback) : NULL;
                const int failed =
                    (askew__handle_run(h) < 0 && callback_failed(self, h) < 0) ||
                    askew__loop_charge_cpu(self, h) < 0;
                if (ran != NULL)
                    askew__coverage_note(self->coverage, self->state, h->node, ran);
                if (failed) {
                    Py_DECREF(h);
                    self->node_current = -1;
                    return NULL;
                }
            }
            Py_DECREF(h);
            /* world.always: one pointer test per step when unset. */
            if (self->step_hook != NULL && call_step_hook(self) < 0) {
                self->node_current = -1;
                return NULL;
            }
            if (askew__preload_check() < 0) {
                self->node_current = -1;
                return NULL;
            }
            if (steps_end && sched->steps >= steps_end) {
                self->node_current = -1;
                return PyLong_FromLong(ASKEW_RUN_STEP_BUDGET);
            }
            if (self->gc_every && sched->steps % self->gc_every == 0 &&
                collect_garbage(self) < 0)
                return NULL;
        }
        self->node_current = -1;
        if (self->stopping)
            break;
    }
    self->stopping = 0;
    return PyLong_FromLong(ASKEW_RUN_STOPPED);
}

/* ---- run setup and teardown ------------------------------------------ */

void askew__loop_clear_queues(struct askew_loop_state *self)
{
    /* A drop can run user code (a finalizer, a __del__) that sends a
     * message or queues a callback after its queue was emptied: go round
     * until both are quiet, so that reset never finds work left over. */
    do {
        askew__network_clear(self->net); /* messages leave the heap first */
        askew_sched_clear(&self->sched, askew__loop_drop_item, drop_timer);
        askew__skew_drop_held(&self->skews);
    } while (askew__network_busy(self->net) || askew_sched_pending(&self->sched) > 0 ||
             self->sched.timers.len > 0);
}

PyObject *askew__loop_reset(struct askew_loop_state *self, PyObject *seed_obj)
{
    const uint64_t seed = PyLong_AsUnsignedLongLong(seed_obj);
    if (seed == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "cannot reset a running loop");
        return NULL;
    }
    /* The old run's world's hook first: dropping it may run a finalizer
     * that queues work, which the clearing below then drops. */
    Py_CLEAR(self->step_hook);
    askew__loop_clear_queues(self);
    askew_sched_reset(&self->sched, seed);
    askew__network_reset(self->net, seed);
    askew__log_clear(&self->log);
    askew__node_gate_clear(&self->gate); /* the next world sets its own */
    askew_rng_seed(&self->entropy, askew_seed_stream(seed, ASKEW_STREAM_ENTROPY));
    self->handle_seq = 0;
    self->task_seq = 0;
    self->future_seq = 0;
    self->epoch++;
    self->stale = 0;
    self->dead = 0;
    self->node_current = -1;
    self->stopping = 0;
    askew__skew_reset(&self->skews);
    if (self->cpu_len > 0)
        memset(self->cpu, 0, self->cpu_len * sizeof *self->cpu);
    /* Clearing the old run's log drops payloads, which may run a
     * __del__ that queues a callback: it must not leak into the new run. */
    askew__loop_clear_queues(self);
    Py_RETURN_NONE;
}

PyObject *askew__loop_clear(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    askew__loop_clear_queues(self);
    Py_RETURN_NONE;
}

PyObject *askew__loop_mark_closed(struct askew_loop_state *self,
                                  PyObject *Py_UNUSED(ignored))
{
    self->closed = 1;
    askew__loop_clear_queues(self);
    Py_RETURN_NONE;
}

/* _enter() / _leave(): around a run, on the thread that runs it. */
PyObject *askew__loop_enter(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    if (askew__active != NULL && askew__active != self) {
        PyErr_SetString(askew__nondeterminism_error(self->state),
                        "a simulation is already running in this process: simulations "
                        "cannot be nested");
        return NULL;
    }
    self->thread_id = PyThread_get_thread_ident();
    if (askew__preload_enter(self) < 0)
        return NULL;
    self->running = 1;
    askew__active_enter(self, self->state, self->thread_id);
    Py_RETURN_NONE;
}

PyObject *askew__loop_leave(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    if (self->running)
        askew__preload_leave();
    self->running = 0;
    self->stopping = 0; /* as asyncio: a stop never outlives the run it ended */
    self->node_current = -1;
    askew__active_leave(self);
    Py_RETURN_NONE;
}
