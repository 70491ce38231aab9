/* SPDX-License-Identifier: Apache-2.0 */
/* What user code schedules on a loop (see loop_sched.h): call_soon,
 * call_later and call_at make a handle in the caller's context, numbered
 * and owned by the node that context runs as, and queue it on the engine's
 * scheduler; create_future and create_task make asyncio's Future and
 * askew's Task; a cancelled timer leaves the heap here. Scheduling from
 * another thread while a run goes on is refused. Never runs a callback
 * (loop_run.c does) and never reads the host clock. Called through the
 * Loop type's methods (loop_type.c), the network's host, and the handles
 * (struct askew_handle_loop). */
#include "errors.h"
#include "handle.h"
#include "loop_sched.h"
#include "refusal.h"
#include "task.h"

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

/* Queue a handle to run in a later tick; the queue holds a reference. */
static int push_ready(struct askew_loop_state *self, askew_handle *h)
{
    const int rc = askew_sched_push(&self->sched, h, h->seq, askew__handle_loop_key(h));
    if (rc < 0) {
        askew__raise_engine(rc, "queueing a callback");
        return -1;
    }
    Py_INCREF(h);
    h->queued = 1;
    return 0;
}

PyObject *askew__loop_call_soon_impl(struct askew_loop_state *self, PyObject *callback,
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

/* A Future or Task of an earlier run that completes in this one (it was
 * kept somewhere, and set or cancelled now) schedules its done callbacks as
 * call_soon(callback, future): they would run that run's code in this one.
 * The call is dropped and counted; its handle is returned cancelled. */
__attribute__((cold, noinline)) static PyObject *
drop_stale(struct askew_loop_state *self, PyObject *callback, PyObject *context)
{
    self->stale++;
    askew_handle *h = make_handle(self, /* timer */ 0, callback, NULL, 0, context);
    if (h != NULL)
        askew__handle_cancel(h);
    return (PyObject *)h;
}

PyObject *askew__loop_call_soon(struct askew_loop_state *self, PyObject *const *args,
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
    if (nargs == 2) {
        const uint64_t made = askew__made_epoch(self->state, args[1]);
        if (made != 0 && made != self->epoch)
            return drop_stale(self, args[0], context);
    }
    return askew__loop_call_soon_impl(self, args[0], args + 1, nargs - 1, context);
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

PyObject *askew__loop_call_at(struct askew_loop_state *self, PyObject *const *args,
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

PyObject *askew__loop_call_later(struct askew_loop_state *self, PyObject *const *args,
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
    if (askew__loop_now(self, &now) < 0)
        return NULL;
    const double when = now + delay;
    int64_t deadline_ns;
    if (askew__loop_local_when_to_ns(self, when, &deadline_ns) < 0)
        return NULL;
    return askew__loop_call_at_ns(self, deadline_ns, args[1], args + 2, nargs - 2,
                                  context);
}

/* What a handle asks of its loop (struct askew_handle_loop). */
static void timer_cancelled(PyObject *loop, askew_handle *h)
{
    struct askew_loop_state *self = (struct askew_loop_state *)loop;
    if (h->timer.index == ASKEW_TIMER_IDLE)
        return;
    askew_sched_timer_cancel(&self->sched, &h->timer);
    h->queued = 0;
    Py_DECREF(h); /* the heap's reference; the caller still holds one */
}

static double handle_when(PyObject *loop, const askew_handle *h)
{
    struct askew_loop_state *self = (struct askew_loop_state *)loop;
    const int64_t d = h->timer.deadline_ns;
    /* A deadline is a world time; asyncio code compares when() with
     * loop.time(), which reads the owning node's monotonic clock. */
    if (self == NULL || d == INT64_MAX || d == INT64_MIN / 2)
        return (double)d / 1e9;
    return (double)askew__skew_local(&self->skews, h->node, d) / 1e9;
}

const struct askew_handle_loop askew__loop_handle_ops = {
    .timer_cancelled = timer_cancelled,
    .when = handle_when,
};

PyObject *askew__loop_new_future(struct askew_loop_state *self)
{
    /* Future(loop=self) through a keyword dict made once per loop: a
     * vectorcall with kwnames builds a dict every time, and Future() with no
     * loop asks for the running one, which costs a getpid() system call in
     * asyncio's C code. Numbered in the run, as a Task is, for its hash. */
    if (self->future_kwargs == NULL) {
        self->future_kwargs = Py_BuildValue("{sO}", "loop", (PyObject *)self);
        if (self->future_kwargs == NULL)
            return NULL;
    }
    return askew__future_make(self->state, self->future_kwargs, ++self->future_seq,
                              self->epoch);
}

PyObject *askew__loop_create_future(struct askew_loop_state *self,
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
    PyObject *task = askew__task_make(self->state, args, kwds, seq, self->epoch, owner);
    Py_DECREF(args);
    return task;
}

/* create_task(coro, *, name=None, context=None): asyncio's Task with a
 * per-run name and hash. Anything else (a task factory, eager_start, other
 * keywords) takes the Python path in _loop.py. */
PyObject *askew__loop_create_task(struct askew_loop_state *self, PyObject *const *args,
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
PyObject *askew__loop_make_task(struct askew_loop_state *self, PyObject *const *args,
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
PyObject *askew__loop_next_task_seq(struct askew_loop_state *self,
                                    PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(++self->task_seq);
}

PyObject *askew__loop_set_task_factory_raw(struct askew_loop_state *self,
                                           PyObject *factory)
{
    Py_XSETREF(self->task_factory, factory == Py_None ? NULL : Py_NewRef(factory));
    Py_RETURN_NONE;
}
