/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Loop: the hot half of SimLoop (askew/_loop.py adds the asyncio
 * surface in Python). It owns the engine's scheduler for one loop: call_soon,
 * call_later, call_at, time, create_future, create_task and the run loop are
 * here, in C. Virtual time only; never reads the host clock, never sleeps,
 * never blocks. One loop is reset and reused across the iterations of a run. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "coverage.h" /* shrink3 */
#include "handle.h"
#include "log.h"
#include "loop.h"
#include "network.h"
#include "node.h"
#include "task.h"

/* Process-wide, not module state: the preload reads them without the GIL,
 * and a process has one simulation thread (core.h). */
struct askew_loop_state *askew__active;
unsigned long askew__active_thread;

#define HANDLE_OF(timer) askew__handle_of(timer)

/* ---- time ------------------------------------------------------------- */

int64_t askew__loop_local_ns(struct askew_loop_state *self)
{
    return askew__skew_local(self, self->node_current, self->sched.now_ns);
}

int64_t askew__loop_wall_ns(struct askew_loop_state *self)
{
    return askew__skew_wall(self, self->node_current, self->sched.now_ns);
}

int64_t askew__loop_unix_ns(struct askew_loop_state *self, int64_t wall_ns)
{
    const int64_t epoch_ns = self->wall_epoch_ns;
    if (wall_ns < -epoch_ns)
        return 0;
    return wall_ns > INT64_MAX - epoch_ns ? INT64_MAX : wall_ns + epoch_ns;
}

static inline double ns_to_s(int64_t ns)
{
    return (double)ns / 1e9;
}

static int seconds_to_ns(double when, int64_t *out);

/* loop.time() as the loop's own code must see it: the user's replacement
 * when there is one. */
static int loop_now(struct askew_loop_state *self, double *out)
{
    if (self->time_view == NULL) {
        *out = ns_to_s(askew__loop_local_ns(self));
        return 0;
    }
    PyObject *res = PyObject_CallNoArgs(self->time_view);
    if (res == NULL)
        return -1;
    *out = PyFloat_AsDouble(res);
    Py_DECREF(res);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* Before a tick: where the user's clock says timers fall due. */
static int update_view(struct askew_loop_state *self)
{
    double now;
    if (self->time_view == NULL || loop_now(self, &now) < 0)
        return self->time_view == NULL ? 0 : -1;
    return seconds_to_ns(now, &self->sched.view_ns);
}

/* Loop seconds to a deadline in ns, rounded up so that when the timer fires
 * loop.time() >= when holds in float (asyncio.timeout relies on it). */
static int seconds_to_ns(double when, int64_t *out)
{
    if (isnan(when)) {
        PyErr_SetString(PyExc_ValueError, "a time must be a number, not NaN");
        return -1;
    }
    if (when >= 9.2e9) {
        *out = INT64_MAX;
        return 0;
    }
    if (when <= -9.2e9) {
        *out = INT64_MIN / 2;
        return 0;
    }
    int64_t ns = (int64_t)llround(when * 1e9);
    while (ns_to_s(ns) < when)
        ns++;
    *out = ns;
    return 0;
}

int64_t askew__loop_cpu_ns(struct askew_loop_state *self)
{
    const size_t i = (size_t)(self->node_current + 1);
    return i < self->cpu_len ? self->cpu[i].ns : 0;
}

/* Add the step just run to its node's CPU time. A restarted node is a new
 * process: its CPU time starts again from zero. */
static int charge_cpu(struct askew_loop_state *self, const askew_handle *h)
{
    const size_t i = (size_t)(h->node + 1);
    const int grown =
        askew__grow((void **)&self->cpu, &self->cpu_len, i + 1, sizeof *self->cpu);
    if (grown < 0) {
        askew__raise_engine(grown, "growing the per-node CPU clocks");
        return -1;
    }
    struct askew_cpu *c = &self->cpu[i];
    if (c->incarnation != h->incarnation) {
        c->incarnation = h->incarnation;
        c->ns = 0;
    }
    c->ns += self->sched.step_cpu_ns;
    return 0;
}

int askew__clock_read(void *ctx, int realtime, struct timespec *out)
{
    struct askew_loop_state *self = ctx;
    if (realtime == ASKEW_CLOCK_CPUTIME) {
        const int64_t cpu_ns = askew__loop_cpu_ns(self);
        out->tv_sec = (time_t)(cpu_ns / 1000000000);
        out->tv_nsec = (long)(cpu_ns % 1000000000);
        return 0;
    }
    /* A monotonic clock never reads below 0 (the boot of the simulation);
     * the wall clock as askew__loop_unix_ns holds it. */
    int64_t ns = realtime ? askew__loop_unix_ns(self, askew__loop_wall_ns(self))
                          : askew__loop_local_ns(self);
    if (ns < 0)
        ns = 0;
    out->tv_sec = (time_t)(ns / 1000000000);
    out->tv_nsec = (long)(ns % 1000000000);
    return 0;
}

int askew__entropy_fill(void *ctx, void *buf, size_t len)
{
    struct askew_loop_state *self = ctx;
    if (len == 0)
        return 0;
    askew_rng_fill(&self->entropy, buf, len);
    askew_trace_record(&self->sched.trace, self->sched.now_ns, ASKEW_EV_ENTROPY,
                       (int32_t)self->node_current, (uint64_t)len, 0);
    return 0;
}

/* ---- scheduling ----------------------------------------------------- */

static int check_callback(struct askew_loop_state *self, PyObject *callback,
                          const char *method)
{
    if (PyCoro_CheckExact(callback)) {
        PyErr_Format(PyExc_TypeError, "coroutines cannot be used with %s()", method);
        return -1;
    }
    if (!PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError, "a callable object was expected by %s(), got %R",
                     method, callback);
        return -1;
    }
    if (self->debug) {
        /* As asyncio in debug mode: coroutine functions are refused too. */
        PyObject *res = PyObject_CallMethod((PyObject *)self, "_check_callback_debug",
                                            "Os", callback, method);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    return 0;
}

static int check_open(struct askew_loop_state *self)
{
    if (self->closed) {
        PyErr_SetString(PyExc_RuntimeError, "Event loop is closed");
        return -1;
    }
    return 0;
}

/* Scheduling from a thread other than the one running the loop would race
 * the run and break the seed's promise. */
__attribute__((cold, noinline)) static int refuse_thread(struct askew_loop_state *self,
                                                         const char *method)
{
    PyErr_Format(askew__nondeterminism_error(self->state),
                 "%s() called from another thread while the simulation runs; "
                 "threads are outside the simulation: do the work in a task",
                 method);
    (void)askew__refusal_note(NULL); /* caught or not, it fails the run */
    return -1;
}

static inline int check_thread(struct askew_loop_state *self, const char *method)
{
    if (self->running && PyThread_get_thread_ident() != self->thread_id)
        return refuse_thread(self, method);
    return 0;
}

/* "context" as callers spell it: our interned string, and the first other
 * string object found equal to it (asyncio's C Task passes its own static
 * one on every step), kept alive so that its address stays its own. */
static int is_context_kw(struct askew_state *st, PyObject *key)
{
    if (key == st->str_context || key == st->str_context_seen)
        return 1;
    if (!PyUnicode_Check(key) || PyUnicode_Compare(key, st->str_context) != 0)
        return 0;
    if (st->str_context_seen == NULL)
        st->str_context_seen = Py_NewRef(key);
    return 1;
}

/* The keyword part of call_soon and friends: only context= is accepted. */
static int parse_context(struct askew_state *st, PyObject *kwnames,
                         PyObject *const *kwargs, const char *method,
                         PyObject **context)
{
    *context = NULL;
    if (kwnames == NULL)
        return 0;
    const Py_ssize_t n = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i); // borrowed
        if (is_context_kw(st, key)) {
            *context = kwargs[i];
            continue;
        }
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                     method, key);
        return -1;
    }
    if (*context == Py_None)
        *context = NULL;
    return 0;
}

static askew_handle *make_handle(struct askew_loop_state *self, int timer,
                                 PyObject *callback, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *context)
{
    askew_handle *h;
    if (context == NULL) {
        PyObject *copy = PyContext_CopyCurrent(); // new reference
        if (copy == NULL)
            return NULL;
        h = (timer ? askew__timer_handle_new : askew__handle_new)(
            self->state, (PyObject *)self, callback, args, nargs, copy);
        Py_DECREF(copy);
    } else {
        if (!PyContext_CheckExact(context)) {
            PyErr_Format(PyExc_TypeError,
                         "context must be a contextvars.Context, not %.100s",
                         Py_TYPE(context)->tp_name);
            return NULL;
        }
        h = (timer ? askew__timer_handle_new : askew__handle_new)(
            self->state, (PyObject *)self, callback, args, nargs, context);
    }
    if (h == NULL)
        return NULL;
    h->seq = ++self->handle_seq;
    /* The loop a callback belongs to is the node its context runs as: a
     * future one node resolves wakes the waiting task in the waiter's loop. */
    if (self->gate.var != NULL &&
        askew__node_context(&self->gate, context, &h->node, &h->incarnation) < 0) {
        Py_DECREF(h);
        return NULL;
    }
    return h;
}

/* The scheduler's key for a handle's loop: 0 for the world, node + 1. */
static inline uint64_t loop_key(const askew_handle *h)
{
    return (uint64_t)(h->node + 1);
}

/* Queue a handle to run in a later tick; the queue holds a reference. */
static int push_ready(struct askew_loop_state *self, askew_handle *h)
{
    const int rc = askew_sched_push(&self->sched, h, h->seq, loop_key(h));
    if (rc < 0) {
        askew__raise_engine(rc, "queueing a callback");
        return -1;
    }
    Py_INCREF(h);
    h->queued = 1;
    return 0;
}

static PyObject *call_soon_impl(struct askew_loop_state *self, PyObject *callback,
                                PyObject *const *args, Py_ssize_t nargs,
                                PyObject *context)
{
    askew_handle *h = make_handle(self, /* timer */ 0, callback, args, nargs, context);
    if (h == NULL)
        return NULL;
    if (push_ready(self, h) < 0) {
        Py_DECREF(h);
        return NULL;
    }
    return (PyObject *)h;
}

static PyObject *loop_call_soon(struct askew_loop_state *self, PyObject *const *args,
                                Py_ssize_t nargsf, PyObject *kwnames)
{
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *context;
    if (nargs < 1) {
        PyErr_SetString(
            PyExc_TypeError,
            "call_soon() missing 1 required positional argument: 'callback'");
        return NULL;
    }
    if (parse_context(self->state, kwnames, args + nargs, "call_soon", &context) < 0 ||
        check_open(self) < 0 || check_thread(self, "call_soon") < 0 ||
        check_callback(self, args[0], "call_soon") < 0)
        return NULL;
    return call_soon_impl(self, args[0], args + 1, nargs - 1, context);
}

PyObject *askew__loop_call_at_ns(struct askew_loop_state *self, int64_t deadline_ns,
                                 PyObject *callback, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *context)
{
    askew_handle *h = make_handle(self, /* timer */ 1, callback, args, nargs, context);
    if (h == NULL)
        return NULL;
    h->timer.deadline_ns = deadline_ns;
    const int rc = askew_sched_timer_add(&self->sched, &h->timer);
    if (rc < 0) {
        Py_DECREF(h);
        return askew__raise_engine(rc, "scheduling a timer");
    }
    Py_INCREF(h); /* the heap's reference */
    h->queued = 1;
    return (PyObject *)h;
}

/* A time in the running node's clock to a deadline on the world's clock. */
int askew__loop_local_when_to_ns(struct askew_loop_state *self, double when,
                                 int64_t *out)
{
    int64_t local_ns;
    if (seconds_to_ns(when, &local_ns) < 0)
        return -1;
    *out = askew__skew_global(self, self->node_current, local_ns);
    return 0;
}

static PyObject *loop_call_at(struct askew_loop_state *self, PyObject *const *args,
                              Py_ssize_t nargsf, PyObject *kwnames)
{
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *context;
    if (nargs < 2) {
        PyErr_SetString(
            PyExc_TypeError,
            "call_at() missing required positional arguments: 'when', 'callback'");
        return NULL;
    }
    if (args[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "when cannot be None");
        return NULL;
    }
    if (parse_context(self->state, kwnames, args + nargs, "call_at", &context) < 0 ||
        check_open(self) < 0 || check_thread(self, "call_at") < 0 ||
        check_callback(self, args[1], "call_at") < 0)
        return NULL;
    const double when = PyFloat_AsDouble(args[0]);
    int64_t deadline_ns;
    if ((when == -1.0 && PyErr_Occurred()) ||
        askew__loop_local_when_to_ns(self, when, &deadline_ns) < 0)
        return NULL;
    return askew__loop_call_at_ns(self, deadline_ns, args[1], args + 2, nargs - 2,
                                  context);
}

static PyObject *loop_call_later(struct askew_loop_state *self, PyObject *const *args,
                                 Py_ssize_t nargsf, PyObject *kwnames)
{
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *context;
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError,
                        "call_later() missing required positional arguments: 'delay', "
                        "'callback'");
        return NULL;
    }
    if (args[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "delay must not be None");
        return NULL;
    }
    if (parse_context(self->state, kwnames, args + nargs, "call_later", &context) < 0 ||
        check_open(self) < 0 || check_thread(self, "call_later") < 0 ||
        check_callback(self, args[1], "call_later") < 0)
        return NULL;
    const double delay = PyFloat_AsDouble(args[0]);
    if (delay == -1.0 && PyErr_Occurred())
        return NULL;
    /* As asyncio: call_at(time() + delay), in float, in the node's clock. */
    double now;
    if (loop_now(self, &now) < 0)
        return NULL;
    const double when = now + delay;
    int64_t deadline_ns;
    if (askew__loop_local_when_to_ns(self, when, &deadline_ns) < 0)
        return NULL;
    return askew__loop_call_at_ns(self, deadline_ns, args[1], args + 2, nargs - 2,
                                  context);
}

void askew__loop_timer_cancelled(PyObject *loop, askew_handle *h)
{
    struct askew_loop_state *self = (struct askew_loop_state *)loop;
    if (h->timer.index == ASKEW_TIMER_IDLE)
        return;
    askew_sched_timer_cancel(&self->sched, &h->timer);
    h->queued = 0;
    Py_DECREF(h); /* the heap's reference; the caller still holds one */
}

static PyObject *loop_time(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(ns_to_s(askew__loop_local_ns(self)));
}

/* _set_time_view(fn or None): the user replaced loop.time on this loop (a
 * test's mock clock). As on asyncio's loop, call_later then counts from it
 * and timers fall due when it reaches them; the world's clock moves on as
 * before. */
static PyObject *loop_set_time_view(struct askew_loop_state *self, PyObject *fn)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "loop.time must be callable, not %R", fn);
        return NULL;
    }
    Py_XSETREF(self->time_view, fn == Py_None ? NULL : Py_NewRef(fn));
    self->sched.view_ns = INT64_MIN;
    Py_RETURN_NONE;
}

static PyObject *loop_get_debug(struct askew_loop_state *self,
                                PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->debug);
}

static PyObject *loop_set_debug(struct askew_loop_state *self, PyObject *flag)
{
    const int v = PyObject_IsTrue(flag);
    if (v < 0)
        return NULL;
    self->debug = (char)v;
    Py_RETURN_NONE;
}

static PyObject *loop_is_running(struct askew_loop_state *self,
                                 PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->running);
}

static PyObject *loop_is_closed(struct askew_loop_state *self,
                                PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->closed);
}

static PyObject *loop_stop(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    self->stopping = 1;
    Py_RETURN_NONE;
}

PyObject *askew__loop_new_future(struct askew_loop_state *self)
{
    /* Future(loop=self) through a keyword dict made once per loop: a
     * vectorcall with kwnames builds a dict every time, and Future() with no
     * loop asks for the running one, which costs a getpid() system call in
     * asyncio's C code. */
    if (self->future_kwargs == NULL) {
        self->future_kwargs = Py_BuildValue("{sO}", "loop", (PyObject *)self);
        if (self->future_kwargs == NULL)
            return NULL;
    }
    return PyObject_Call(self->state->future_type, self->state->empty_tuple,
                         self->future_kwargs);
}

static PyObject *loop_create_future(struct askew_loop_state *self,
                                    PyObject *Py_UNUSED(ignored))
{
    return askew__loop_new_future(self);
}

/* The owner token of a Task made in `context` (NULL: the running one): the
 * node it runs as, so that a crash takes exactly that incarnation's tasks.
 * 0, or -1 with an exception. */
static int task_owner(struct askew_loop_state *self, PyObject *context, int64_t *owner)
{
    int64_t node = -1;
    uint32_t incarnation = 0;
    if (self->gate.var != NULL &&
        askew__node_context(&self->gate, context, &node, &incarnation) < 0)
        return -1;
    *owner = node < 0 ? -1 : askew__node_token(node, incarnation);
    return 0;
}

/* The loop's next Task: creation number and owner, a default name
 * "Task-<n>" when kwds["name"] is None, then the Task itself. */
static PyObject *make_task(struct askew_loop_state *self, PyObject *coro,
                           PyObject *kwds, PyObject *context)
{
    int64_t owner;
    if (task_owner(self, context == Py_None ? NULL : context, &owner) < 0)
        return NULL;
    const uint64_t seq = ++self->task_seq;
    PyObject *name = PyDict_GetItemWithError(kwds, self->state->str_name); // borrowed
    if (name == NULL && PyErr_Occurred())
        return NULL;
    if (name == NULL || name == Py_None) {
        PyObject *made = PyUnicode_FromFormat("Task-%llu", (unsigned long long)seq);
        if (made == NULL || PyDict_SetItem(kwds, self->state->str_name, made) < 0) {
            Py_XDECREF(made);
            return NULL;
        }
        Py_DECREF(made);
    }
    PyObject *args = PyTuple_Pack(1, coro); // new reference
    if (args == NULL)
        return NULL;
    PyObject *task = askew__task_make(self->state, args, kwds, seq, owner);
    Py_DECREF(args);
    return task;
}

/* create_task(coro, *, name=None, context=None): asyncio's Task with a
 * per-run name and hash. Anything else (a task factory, eager_start, other
 * keywords) takes the Python path in _loop.py. */
static PyObject *loop_create_task(struct askew_loop_state *self, PyObject *const *args,
                                  Py_ssize_t nargsf, PyObject *kwnames)
{
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *name = Py_None, *context = Py_None;
    int fast = nargs == 1 && self->task_factory == NULL;
    if (kwnames != NULL && fast) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, i); // borrowed
            if (PyUnicode_Compare(key, self->state->str_name) == 0)
                name = args[nargs + i];
            else if (is_context_kw(self->state, key))
                context = args[nargs + i];
            else
                fast = 0;
        }
    }
    if (!fast) {
        PyObject *slow = PyObject_GetAttrString((PyObject *)self, "_create_task_slow");
        if (slow == NULL)
            return NULL;
        PyObject *res = PyObject_Vectorcall(slow, args, nargsf, kwnames);
        Py_DECREF(slow);
        return res;
    }
    if (check_open(self) < 0)
        return NULL;
    PyObject *kwds = PyDict_New(); // new reference
    if (kwds == NULL)
        return NULL;
    PyObject *task = NULL;
    const struct askew_state *st = self->state;
    if (PyDict_SetItem(kwds, st->str_loop, (PyObject *)self) == 0 &&
        PyDict_SetItem(kwds, st->str_name, name) == 0 &&
        (context == Py_None || PyDict_SetItem(kwds, st->str_context, context) == 0))
        task = make_task(self, args[0], kwds, context);
    Py_DECREF(kwds);
    return task;
}

/* _make_task(coro, context, kwds): the Python path's Task (other keywords,
 * eager_start), numbered and owned as create_task's; kwds holds loop= and
 * name= (None for the default name), and whatever else Task() takes. */
static PyObject *loop_make_task(struct askew_loop_state *self, PyObject *const *args,
                                Py_ssize_t nargs)
{
    if (nargs != 3 || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "_make_task(coro, context, kwds: dict)");
        return NULL;
    }
    return make_task(self, args[0], args[2], args[1]);
}

/* _next_task_seq(): count a Task a user's factory makes, for its default
 * name; the factory's task carries no number (it hashes by identity). */
static PyObject *loop_next_task_seq(struct askew_loop_state *self,
                                    PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(++self->task_seq);
}

static PyObject *loop_set_task_factory_raw(struct askew_loop_state *self,
                                           PyObject *factory)
{
    Py_XSETREF(self->task_factory, factory == Py_None ? NULL : Py_NewRef(factory));
    Py_RETURN_NONE;
}

/* ---- the run loop ---------------------------------------------------- */

static int fire_timer(void *ctx, struct askew_timer *timer)
{
    struct askew_loop_state *self = ctx;
    switch (timer->kind) {
    case ASKEW_TIMER_KIND_HANDLE: {
        askew_handle *h = HANDLE_OF(timer);
        /* The heap's reference moves to the ready queue. */
        const int rc = askew_sched_push(&self->sched, h, h->seq, loop_key(h));
        if (rc < 0)
            Py_DECREF(h);
        return rc;
    }
    default:
        return askew__network_fire(self->net, timer);
    }
}

static void drop_item(void *item)
{
    askew_handle *h = item;
    h->queued = 0;
    Py_DECREF(h);
}

static void drop_timer(struct askew_timer *timer)
{
    if (timer->kind == ASKEW_TIMER_KIND_HANDLE)
        drop_item(HANDLE_OF(timer));
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
    self->node_current = -1;
    PyObject *res = PyObject_CallNoArgs(self->step_hook);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* _set_step_hook(fn or None): fn() is called after every step of this run;
 * a reset drops it. */
static PyObject *loop_set_step_hook(struct askew_loop_state *self, PyObject *fn)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "the step hook must be callable or None, got %R",
                     fn);
        return NULL;
    }
    Py_XSETREF(self->step_hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

/* Run until stop() or until the run cannot go on. Returns a status for
 * _loop.py to turn into an outcome (enum askew_run_status, exported as
 * _core.RUN_*). The step budget counts the steps of this call, so that the
 * cleanup after a run that used it up (a Runner closing, tasks cancelled)
 * gets a budget of its own. */
static PyObject *loop_run(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
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
            if (h->callback != NULL && askew__skew_paused(self, h->node)) {
                if (askew__skew_hold(self, h) < 0) {
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
                    charge_cpu(self, h) < 0;
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

static void clear_queues(struct askew_loop_state *self)
{
    /* A drop can run user code (a finalizer, a __del__) that sends a
     * message or queues a callback after its queue was emptied: go round
     * until both are quiet, so that reset never finds work left over. */
    do {
        askew__network_clear(self->net); /* messages leave the heap first */
        askew_sched_clear(&self->sched, drop_item, drop_timer);
        askew__skew_drop_held(self);
    } while (askew__network_busy(self->net) || askew_sched_pending(&self->sched) > 0 ||
             self->sched.timers.len > 0);
}

static PyObject *loop_reset(struct askew_loop_state *self, PyObject *seed_obj)
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
    clear_queues(self);
    askew_sched_reset(&self->sched, seed);
    askew__network_reset(self->net, seed);
    askew__log_clear(&self->log);
    Py_CLEAR(self->gate.var); /* the next world sets its own */
    askew_rng_seed(&self->entropy, askew_seed_stream(seed, ASKEW_STREAM_ENTROPY));
    self->handle_seq = 0;
    self->task_seq = 0;
    self->node_current = -1;
    self->stopping = 0;
    askew__skew_reset(self);
    if (self->cpu_len > 0)
        memset(self->cpu, 0, self->cpu_len * sizeof *self->cpu);
    /* Clearing the old run's log drops payloads, which may run a
     * __del__ that queues a callback: it must not leak into the new run. */
    clear_queues(self);
    Py_RETURN_NONE;
}

static PyObject *loop_clear(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    clear_queues(self);
    Py_RETURN_NONE;
}

static PyObject *loop_mark_closed(struct askew_loop_state *self,
                                  PyObject *Py_UNUSED(ignored))
{
    self->closed = 1;
    clear_queues(self);
    Py_RETURN_NONE;
}

/* Indexed by enum askew_strategy; exported as _core.STRATEGIES. */
static const char *const strategy_names[] = {"faithful", "fifo", "interleave",
                                             "shuffle", "pct"};
#define STRATEGIES_LEN (sizeof strategy_names / sizeof strategy_names[0])

static int strategy_from_name(PyObject *name, enum askew_strategy *out)
{
    if (PyUnicode_Check(name)) {
        for (size_t i = 0; i < STRATEGIES_LEN; i++) {
            if (PyUnicode_CompareWithASCIIString(name, strategy_names[i]) == 0) {
                *out = (enum askew_strategy)i;
                return 0;
            }
        }
    }
    PyErr_Format(
        PyExc_ValueError,
        "strategy must be 'faithful', 'fifo', 'interleave', 'shuffle' or 'pct', not %R",
        name);
    return -1;
}

/* _configure(strategy, steps_max, time_max_ns, gc_every, cpu_ns, overshoot_ns,
 * [pct_depth, pct_steps, wall_epoch_ns]), cpu_ns and overshoot_ns (lo, hi)
 * pairs: validated in _config.py; the strategy name, PCT's bounds and the
 * epoch's range are checked again here. PCT's change points are drawn at the
 * next reset; the epoch applies to the next clock read. */
static PyObject *loop_configure(struct askew_loop_state *self, PyObject *args)
{
    PyObject *strategy, *steps_obj;
    unsigned long long gc_every;
    long long time_max_ns, cpu_lo, cpu_hi, os_lo, os_hi, pct_depth = 1, pct_steps = 1;
    long long wall_epoch_ns = ASKEW_WALL_EPOCH_NS;
    if (!PyArg_ParseTuple(args, "OO!LK(LL)(LL)|LLL", &strategy, &PyLong_Type,
                          &steps_obj, &time_max_ns, &gc_every, &cpu_lo, &cpu_hi, &os_lo,
                          &os_hi, &pct_depth, &pct_steps, &wall_epoch_ns))
        return NULL;
    if (wall_epoch_ns < 0 || wall_epoch_ns > ASKEW_WALL_EPOCH_MAX_NS) {
        PyErr_Format(PyExc_ValueError,
                     "wall_epoch must be in [0, %lld] Unix ns (the epoch plus 2**62 ns "
                     "of virtual time must fit int64 ns), got %lld",
                     (long long)ASKEW_WALL_EPOCH_MAX_NS, wall_epoch_ns);
        return NULL;
    }
    if (pct_depth < 1 || pct_depth > ASKEW_PCT_DEPTH_MAX) {
        PyErr_Format(PyExc_ValueError, "pct_depth must be in [1, %d], got %lld",
                     ASKEW_PCT_DEPTH_MAX, pct_depth);
        return NULL;
    }
    if (pct_steps < 1) {
        PyErr_Format(PyExc_ValueError, "pct_steps must be >= 1, got %lld", pct_steps);
        return NULL;
    }
    /* Not the "K" unit: it keeps the low 64 bits, so 2**64 + 3 would become a
     * 3-step budget. Out of range is an error here, whatever Python checked. */
    const unsigned long long steps_max = PyLong_AsUnsignedLongLong(steps_obj);
    if (steps_max == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "max_steps must be in [0, 2**64), got %R",
                     steps_obj);
        return NULL;
    }
    if (time_max_ns < 0) {
        PyErr_Format(PyExc_ValueError, "max_time must be >= 0 ns, got %lld",
                     time_max_ns);
        return NULL;
    }
    enum askew_strategy s;
    if (strategy_from_name(strategy, &s) < 0)
        return NULL;
    if (self->running && s != self->sched.strategy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cannot change the strategy of a running loop");
        return NULL;
    }
    self->sched.strategy = s;
    self->sched.cpu_ns_lo = cpu_lo;
    self->sched.cpu_ns_hi = cpu_hi;
    self->sched.overshoot_ns_lo = os_lo;
    self->sched.overshoot_ns_hi = os_hi;
    self->sched.pct_depth = (uint32_t)pct_depth;
    self->sched.pct_steps = (uint64_t)pct_steps;
    self->sched.steps_max = steps_max;
    self->sched.time_max_ns = time_max_ns;
    self->gc_every = gc_every;
    self->wall_epoch_ns = wall_epoch_ns;
    Py_RETURN_NONE;
}

/* _enter() / _leave(): around a run, on the thread that runs it. */
static PyObject *loop_enter(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
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
    askew__active = self;
    askew__active_thread = self->thread_id;
    Py_RETURN_NONE;
}

static PyObject *loop_leave(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    if (self->running)
        askew__preload_leave();
    self->running = 0;
    self->stopping = 0; /* as asyncio: a stop never outlives the run it ended */
    self->node_current = -1;
    if (askew__active == self) {
        askew__active = NULL;
        askew__active_thread = 0;
    }
    Py_RETURN_NONE;
}

/* ---- the type ---------------------------------------------------------- */

/* What the network borrows of its loop (struct askew_net_host). */
static PyObject *host_new_future(void *ctx)
{
    return askew__loop_new_future(ctx);
}

static PyObject *host_call_later(void *ctx, double delay, PyObject *callback,
                                 PyObject *arg)
{
    struct askew_loop_state *self = ctx;
    int64_t deadline;
    const double when = ns_to_s(askew__loop_local_ns(self)) + delay;
    if (askew__loop_local_when_to_ns(self, when, &deadline) < 0)
        return NULL;
    return askew__loop_call_at_ns(self, deadline, callback, &arg, 1, NULL);
}

static PyObject *host_call_soon(void *ctx, PyObject *callback, PyObject *arg,
                                PyObject *context)
{
    return call_soon_impl(ctx, callback, &arg, 1, context);
}

static int64_t host_local_ns(void *ctx, int64_t node)
{
    struct askew_loop_state *self = ctx;
    return askew__skew_local(self, node, self->sched.now_ns);
}

/* _local_ns(node): that node's monotonic clock now, in ns (what its
 * timers count in; the TCP keep-alive reads it). */
static PyObject *loop_local_ns(struct askew_loop_state *self, PyObject *arg)
{
    const long long node = PyLong_AsLongLong(arg);
    if (node == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLongLong(host_local_ns(self, node));
}

static PyObject *loop_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    struct askew_loop_state *self = (struct askew_loop_state *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->state = askew__state_of_type(type);
    if (askew_sched_init(&self->sched) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->sched.steps_max = 0;
    self->node_current = -1;
    self->wall_epoch_ns = ASKEW_WALL_EPOCH_NS;
    self->gc_every = 0;
    const struct askew_net_host host = {
        .ctx = self,
        .sched = &self->sched,
        .gate = &self->gate,
        .log = &self->log,
        .new_future = host_new_future,
        .call_later = host_call_later,
        .call_soon = host_call_soon,
        .local_ns = host_local_ns,
    };
    self->net = askew__network_new(self->state, &host);
    if (self->net == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    if (askew__skew_init(self) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    PyObject *gc = PyImport_ImportModule("gc"); // new reference
    if (gc == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->gc_collect = PyObject_GetAttrString(gc, "collect");
    Py_DECREF(gc);
    if (self->gc_collect == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    askew_rng_seed(&self->entropy, askew_seed_stream(0, ASKEW_STREAM_ENTROPY));
    return (PyObject *)self;
}

struct gc_visit {
    visitproc visit;
    void *arg;
};

/* Every queued handle holds a reference (dropped by drop_item). */
static int visit_queued(void *item, void *ctx)
{
    const struct gc_visit *v = ctx;
    return v->visit((PyObject *)item, v->arg);
}

static int visit_timer(struct askew_timer *timer, void *ctx)
{
    /* A message's payload is the network's to visit (loop._net). */
    if (timer->kind != ASKEW_TIMER_KIND_HANDLE)
        return 0;
    return visit_queued(HANDLE_OF(timer), ctx);
}

static int loop_traverse(struct askew_loop_state *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->task_factory);
    Py_VISIT(self->gc_collect);
    Py_VISIT(self->future_kwargs);
    Py_VISIT(self->time_view);
    Py_VISIT(self->step_hook);
    /* The queues too: a loop dropped with a timer pending whose callback
     * refers back to it is a cycle the collector must be able to see. */
    struct gc_visit v = {visit, arg};
    int rc = askew_sched_visit(&self->sched, visit_queued, visit_timer, &v);
    if (rc == 0)
        rc = askew__skew_traverse(self, visit, arg);
    if (rc == 0)
        rc = askew__log_traverse(&self->log, visit, arg);
    if (rc == 0) {
        Py_VISIT(self->gate.var);
        Py_VISIT(self->net);
    }
    return rc;
}

static int loop_clear_refs(struct askew_loop_state *self)
{
    clear_queues(self);
    askew__log_clear(&self->log);
    Py_CLEAR(self->gate.var);
    Py_CLEAR(self->task_factory);
    Py_CLEAR(self->gc_collect);
    Py_CLEAR(self->future_kwargs);
    Py_CLEAR(self->time_view);
    Py_CLEAR(self->step_hook);
    return 0;
}

static void loop_dealloc(struct askew_loop_state *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (askew__active == self) {
        askew__active = NULL;
        askew__active_thread = 0;
    }
    (void)loop_clear_refs(self);
    if (self->net != NULL) {
        askew__network_detach(self->net);
        Py_CLEAR(self->net);
    }
    askew__log_free(&self->log);
    askew__skew_free(self);
    askew_sched_free(&self->sched);
    free(self->cpu);
    PyMem_Free(self->coverage); /* shrink3 */
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *loop_get_steps(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->sched.steps);
}

static PyObject *loop_get_now_ns(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromLongLong(self->sched.now_ns);
}

static PyObject *loop_get_seed(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->sched.seed);
}

static PyObject *loop_get_hash(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->sched.trace.hash);
}

static PyObject *loop_get_events(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->sched.trace.count);
}

static PyObject *loop_get_tasks_made(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->task_seq);
}

static PyObject *loop_get_pending(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(askew_sched_pending(&self->sched) +
                             self->sched.timers.len + self->held_len);
}

static PyObject *loop_get_node(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromLongLong(self->node_current);
}

static int loop_set_node(struct askew_loop_state *self, PyObject *v, void *Py_UNUSED(c))
{
    const long long node = v == NULL ? -1 : PyLong_AsLongLong(v);
    if (node == -1 && PyErr_Occurred())
        return -1;
    self->node_current = node;
    return 0;
}

static PyObject *loop_get_strategy(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(strategy_names[self->sched.strategy]);
}

static PyObject *loop_get_net(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return Py_NewRef((PyObject *)self->net);
}

static PyObject *loop_set_node_var(struct askew_loop_state *self, PyObject *var)
{
    if (askew__node_gate_set(&self->gate, var) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *loop_log_emit(struct askew_loop_state *self, PyObject *args)
{
    return askew__log_emit(&self->log, &self->sched, args);
}

static PyObject *loop_log_recent(struct askew_loop_state *self, PyObject *n)
{
    return askew__log_recent(&self->log, n);
}

static PyObject *loop_log_count(struct askew_loop_state *self,
                                PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(self->log.count);
}

static PyObject *loop_log_keep(struct askew_loop_state *self, PyObject *n)
{
    return askew__log_keep(&self->log, n);
}

/* shrink3: _coverage(on) and _coverage_take(), interleaving coverage
 * (coverage.h, askew/_coverage.py). */
static PyObject *loop_coverage(struct askew_loop_state *self, PyObject *on)
{
    if (askew__coverage_set(&self->coverage, on) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *loop_coverage_take(struct askew_loop_state *self,
                                    PyObject *Py_UNUSED(ignored))
{
    return askew__coverage_take(self->coverage);
}

static PyMethodDef loop_methods[] = {
    {"call_soon", (PyCFunction)(void (*)(void))loop_call_soon,
     METH_FASTCALL | METH_KEYWORDS,
     "call_soon(callback, *args, context=None): run callback in a later tick."},
    {"call_later", (PyCFunction)(void (*)(void))loop_call_later,
     METH_FASTCALL | METH_KEYWORDS,
     "call_later(delay, callback, *args, context=None): run callback after delay "
     "seconds."},
    {"call_at", (PyCFunction)(void (*)(void))loop_call_at,
     METH_FASTCALL | METH_KEYWORDS,
     "call_at(when, callback, *args, context=None): run callback at loop time when."},
    {"time", (PyCFunction)loop_time, METH_NOARGS, "Virtual time, seconds."},
    {"_local_ns", (PyCFunction)loop_local_ns, METH_O,
     "_local_ns(node): that node's monotonic clock now, ns."},
    {"get_debug", (PyCFunction)loop_get_debug, METH_NOARGS, NULL},
    {"set_debug", (PyCFunction)loop_set_debug, METH_O, NULL},
    {"is_running", (PyCFunction)loop_is_running, METH_NOARGS, NULL},
    {"is_closed", (PyCFunction)loop_is_closed, METH_NOARGS, NULL},
    {"stop", (PyCFunction)loop_stop, METH_NOARGS, "Stop after the current tick."},
    {"create_future", (PyCFunction)loop_create_future, METH_NOARGS, NULL},
    {"create_task", (PyCFunction)(void (*)(void))loop_create_task,
     METH_FASTCALL | METH_KEYWORDS, "create_task(coro, *, name=None, context=None)"},
    {"_make_task", (PyCFunction)(void (*)(void))loop_make_task, METH_FASTCALL, NULL},
    {"_next_task_seq", (PyCFunction)loop_next_task_seq, METH_NOARGS, NULL},
    {"_set_task_factory_raw", (PyCFunction)loop_set_task_factory_raw, METH_O, NULL},
    {"_run", (PyCFunction)loop_run, METH_NOARGS, NULL},
    {"_set_step_hook", (PyCFunction)loop_set_step_hook, METH_O, NULL},
    {"_coverage", (PyCFunction)loop_coverage, METH_O, NULL},
    {"_coverage_take", (PyCFunction)loop_coverage_take, METH_NOARGS, NULL},
    {"_set_time_view", (PyCFunction)loop_set_time_view, METH_O, NULL},
    {"_reset", (PyCFunction)loop_reset, METH_O, NULL},
    {"_clear", (PyCFunction)loop_clear, METH_NOARGS, NULL},
    {"_mark_closed", (PyCFunction)loop_mark_closed, METH_NOARGS, NULL},
    {"_configure", (PyCFunction)loop_configure, METH_VARARGS, NULL},
    {"_enter", (PyCFunction)loop_enter, METH_NOARGS, NULL},
    {"_leave", (PyCFunction)loop_leave, METH_NOARGS, NULL},
    {"_set_node_var", (PyCFunction)loop_set_node_var, METH_O, NULL},
    {"_log_emit", (PyCFunction)loop_log_emit, METH_VARARGS, NULL},
    {"_log_recent", (PyCFunction)loop_log_recent, METH_O, NULL},
    {"_log_count", (PyCFunction)loop_log_count, METH_NOARGS, NULL},
    {"_log_keep", (PyCFunction)loop_log_keep, METH_O, NULL},
    {"_set_skew", (PyCFunction)askew__skew_set, METH_VARARGS, NULL},
    {"_pause", (PyCFunction)askew__skew_pause, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef loop_getset[] = {
    {"_steps", (getter)loop_get_steps, NULL, NULL, NULL},
    {"_now_ns", (getter)loop_get_now_ns, NULL, NULL, NULL},
    {"_seed", (getter)loop_get_seed, NULL, NULL, NULL},
    {"_trace_hash", (getter)loop_get_hash, NULL, NULL, NULL},
    {"_trace_count", (getter)loop_get_events, NULL, NULL, NULL},
    {"_pending", (getter)loop_get_pending, NULL, NULL, NULL},
    {"_tasks_made", (getter)loop_get_tasks_made, NULL, NULL, NULL},
    {"_node", (getter)loop_get_node, (setter)loop_set_node, NULL, NULL},
    {"_strategy", (getter)loop_get_strategy, NULL, NULL, NULL},
    {"_net", (getter)loop_get_net, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot loop_slots[] = {
    {Py_tp_new, loop_new},
    {Py_tp_dealloc, loop_dealloc},
    {Py_tp_traverse, loop_traverse},
    {Py_tp_clear, loop_clear_refs},
    {Py_tp_methods, loop_methods},
    {Py_tp_getset, loop_getset},
    {Py_tp_doc, "The C half of askew's event loop; use askew.new_event_loop()."},
    {0, NULL},
};

static PyType_Spec loop_spec = {
    .name = "askew._core.Loop",
    .basicsize = sizeof(struct askew_loop_state),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = loop_slots,
};

/* The _run status codes and the strategy names, for askew/_loop.py and
 * askew/_config.py. */
static int add_constants(PyObject *module)
{
    if (PyModule_AddIntConstant(module, "RUN_STOPPED", ASKEW_RUN_STOPPED) < 0 ||
        PyModule_AddIntConstant(module, "RUN_IDLE", ASKEW_RUN_IDLE) < 0 ||
        PyModule_AddIntConstant(module, "RUN_TIME_BUDGET", ASKEW_RUN_TIME_BUDGET) < 0 ||
        PyModule_AddIntConstant(module, "RUN_STEP_BUDGET", ASKEW_RUN_STEP_BUDGET) < 0)
        return -1;
    PyObject *names = PyTuple_New(STRATEGIES_LEN); // new reference
    if (names == NULL)
        return -1;
    for (size_t i = 0; i < STRATEGIES_LEN; i++) {
        PyObject *name = PyUnicode_FromString(strategy_names[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return -1;
        }
        PyTuple_SET_ITEM(names, (Py_ssize_t)i, name); // steals
    }
    const int rc = PyModule_AddObjectRef(module, "STRATEGIES", names);
    Py_DECREF(names);
    return rc;
}

int askew__loop_type_init(PyObject *module)
{
    struct askew_state *st = PyModule_GetState(module);
    st->str_context = PyUnicode_InternFromString("context");
    st->str_name = PyUnicode_InternFromString("name");
    st->str_loop = PyUnicode_InternFromString("loop");
    st->empty_tuple = PyTuple_New(0);
    if (!st->str_context || !st->str_name || !st->str_loop || !st->empty_tuple)
        return -1;
    PyObject *type = PyType_FromModuleAndSpec(module, &loop_spec, NULL);
    if (type == NULL)
        return -1;
    int rc = PyModule_AddObjectRef(module, "Loop", type);
    Py_DECREF(type);
    return rc < 0 ? -1 : add_constants(module);
}
