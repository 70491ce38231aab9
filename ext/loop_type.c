/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Loop: the hot half of SimLoop (askew/_loop/loop.py adds the asyncio
 * surface in Python), as a Python type. This file makes and frees a loop
 * (its scheduler, network, per-node clocks, log), configures it, answers
 * its small methods and attributes, and holds the one method table, whose
 * scheduling entries are loop_sched.c's and whose run entries are
 * loop_run.c's. Virtual time only; never reads the host clock, never
 * sleeps, never blocks. One loop is reset and reused across the iterations
 * of a run. Module init (module.c) calls askew__loop_type_init. */
#include <stdlib.h>
#include <string.h>

#include "active.h"
#include "coverage.h" /* shrink3 */
#include "loop_run.h"
#include "loop_sched.h"
#include "loop_type.h"

static PyObject *loop_time(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(askew__ns_to_s(askew__loop_local_ns(self)));
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

/* A test may replace loop.time on the instance (a mock clock), as it can on
 * asyncio's loop, whose scheduler then obeys it: so does this one. In C,
 * so that the loop's other attribute stores (a dozen a run) stay plain. */
static int loop_setattro(PyObject *self, PyObject *name, PyObject *value)
{
    const int is_time = PyUnicode_Check(name) && PyUnicode_GET_LENGTH(name) == 4 &&
                        PyUnicode_CompareWithASCIIString(name, "time") == 0;
    if (is_time && value != NULL) {
        PyObject *res = loop_set_time_view((struct askew_loop_state *)self, value);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    if (PyObject_GenericSetAttr(self, name, value) < 0)
        return -1;
    if (is_time && value == NULL) {
        PyObject *res = loop_set_time_view((struct askew_loop_state *)self, Py_None);
        Py_XDECREF(res); /* never fails for None */
    }
    return 0;
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

/* Indexed by enum askew_strategy; exported as _core.STRATEGIES. */
static const char *const strategy_names[] = {"faithful", "fifo", "interleave",
                                             "shuffle",  "pct",  "pctcp"};
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
    PyErr_Format(PyExc_ValueError,
                 "strategy must be 'faithful', 'fifo', 'interleave', 'shuffle', 'pct' "
                 "or 'pctcp', "
                 "not %R",
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
    const double when = askew__ns_to_s(askew__loop_local_ns(self)) + delay;
    if (askew__loop_local_when_to_ns(self, when, &deadline) < 0)
        return NULL;
    return askew__loop_call_at_ns(self, deadline, callback, &arg, 1, NULL);
}

static PyObject *host_call_soon(void *ctx, PyObject *callback, PyObject *arg,
                                PyObject *context)
{
    return askew__loop_call_soon_impl(ctx, callback, &arg, 1, context);
}

static int64_t host_local_ns(void *ctx, int64_t node)
{
    struct askew_loop_state *self = ctx;
    return askew__skew_local(&self->skews, node, self->sched.now_ns);
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
    self->node_stepped = -1;
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
    askew__skew_init(&self->skews);
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

/* Every queued handle holds a reference (askew__loop_drop_item drops it). */
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
    return visit_queued(askew__handle_of(timer), ctx);
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
        rc = askew__skew_traverse(&self->skews, visit, arg);
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
    askew__loop_clear_queues(self);
    askew__log_clear(&self->log);
    Py_CLEAR(self->log.hook);
    askew__node_gate_clear(&self->gate);
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
    askew__active_leave(self);
    (void)loop_clear_refs(self);
    if (self->net != NULL) {
        askew__network_detach(self->net);
        Py_CLEAR(self->net);
    }
    askew__log_free(&self->log);
    askew__skew_free(&self->skews);
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

/* _interrupt(exc, steps): the step watchdog (askew/_loop/watchdog.py), from
 * its own thread: raise `exc` (a class) in the loop's thread if the step it
 * saw stuck is still running, and say whether it did. Checked and done
 * holding the GIL, so the exception lands in that step or, if it returned
 * just then, at the loop thread's next Python line of the same run. */
static PyObject *loop_interrupt(struct askew_loop_state *self, PyObject *const *args,
                                Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "_interrupt takes (exc, steps), got %zd arguments", nargs);
        return NULL;
    }
    const unsigned long long steps = PyLong_AsUnsignedLongLong(args[1]);
    if (steps == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (!self->running || self->sched.steps != steps)
        Py_RETURN_FALSE;
    return PyBool_FromLong(PyThreadState_SetAsyncExc(self->thread_id, args[0]) == 1);
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

static PyObject *loop_get_epoch(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->epoch);
}

/* _stale: what earlier runs left that surfaced and was dropped. Python adds
 * the exception-handler calls and finalizers it drops (_note_stale). */
static PyObject *loop_get_stale(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->stale);
}

static PyObject *loop_note_stale(struct askew_loop_state *self, PyObject *Py_UNUSED(i))
{
    self->stale++;
    Py_RETURN_NONE;
}

static PyObject *loop_get_dead(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->dead);
}

/* _set_dead(flag): enter (or leave) the dead zone of this run. */
static PyObject *loop_set_dead(struct askew_loop_state *self, PyObject *flag)
{
    const int v = PyObject_IsTrue(flag);
    if (v < 0)
        return NULL;
    self->dead = (char)v;
    Py_RETURN_NONE;
}

static PyObject *loop_get_pending(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(askew_sched_pending(&self->sched) +
                             self->sched.timers.len + self->skews.held_len);
}

static PyObject *loop_get_node(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromLongLong(self->node_current);
}

/* In the step hook (world.always, the step observers): whose step it follows. */
static PyObject *loop_get_stepped(struct askew_loop_state *self, void *Py_UNUSED(c))
{
    return PyLong_FromLongLong(self->node_stepped);
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

static PyObject *loop_log_hook(struct askew_loop_state *self, PyObject *fn)
{
    return askew__log_hook(&self->log, fn);
}

/* shrink3: _coverage(on) and _coverage_take(), interleaving coverage
 * (coverage.h, askew/_explore/coverage.py). */
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

/* _set_skew(node, offset_ns, drift_ppb): checked in Python first; the
 * engine's refusal is reported with the values it refused (skew.c). */
static PyObject *loop_set_skew(struct askew_loop_state *self, PyObject *args)
{
    return askew__skew_set(&self->skews, &self->sched, args);
}

/* _pause(node, delta, until_ns, callback): delta +1 opens a pause, -1
 * closes one, 0 closes them all (a crash: a power cut ends a pause). With
 * delta +1 and until_ns >= 0, callback runs at world time until_ns in the
 * world's context, and its TimerHandle is returned; else None. */
static PyObject *loop_pause(struct askew_loop_state *self, PyObject *args)
{
    long long node, delta, until_ns;
    PyObject *callback;
    if (!PyArg_ParseTuple(args, "LLLO", &node, &delta, &until_ns, &callback) ||
        askew__skew_pause(&self->skews, &self->sched, node, delta) < 0)
        return NULL;
    if (delta <= 0 || until_ns < 0)
        Py_RETURN_NONE;
    PyObject *world = PyContext_New(); // new reference: no node in it
    if (world == NULL)
        return NULL;
    PyObject *timer = askew__loop_call_at_ns(self, until_ns, callback, NULL, 0, world);
    Py_DECREF(world);
    return timer;
}

static PyMethodDef loop_methods[] = {
    {"call_soon", (PyCFunction)(void (*)(void))askew__loop_call_soon,
     METH_FASTCALL | METH_KEYWORDS,
     "call_soon(callback, *args, context=None): run callback in a later tick."},
    {"call_later", (PyCFunction)(void (*)(void))askew__loop_call_later,
     METH_FASTCALL | METH_KEYWORDS,
     "call_later(delay, callback, *args, context=None): run callback after delay "
     "seconds."},
    {"call_at", (PyCFunction)(void (*)(void))askew__loop_call_at,
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
    {"create_future", (PyCFunction)askew__loop_create_future, METH_NOARGS, NULL},
    {"create_task", (PyCFunction)(void (*)(void))askew__loop_create_task,
     METH_FASTCALL | METH_KEYWORDS, "create_task(coro, *, name=None, context=None)"},
    {"_make_task", (PyCFunction)(void (*)(void))askew__loop_make_task, METH_FASTCALL,
     NULL},
    {"_next_task_seq", (PyCFunction)askew__loop_next_task_seq, METH_NOARGS, NULL},
    {"_set_task_factory_raw", (PyCFunction)askew__loop_set_task_factory_raw, METH_O,
     NULL},
    {"_run", (PyCFunction)askew__loop_run, METH_NOARGS, NULL},
    {"_set_step_hook", (PyCFunction)askew__loop_set_step_hook, METH_O, NULL},
    {"_interrupt", (PyCFunction)(void (*)(void))loop_interrupt, METH_FASTCALL, NULL},
    {"_coverage", (PyCFunction)loop_coverage, METH_O, NULL},
    {"_coverage_take", (PyCFunction)loop_coverage_take, METH_NOARGS, NULL},
    {"_set_time_view", (PyCFunction)loop_set_time_view, METH_O, NULL},
    {"_reset", (PyCFunction)askew__loop_reset, METH_O, NULL},
    {"_set_dead", (PyCFunction)loop_set_dead, METH_O, NULL},
    {"_note_stale", (PyCFunction)loop_note_stale, METH_NOARGS, NULL},
    {"_clear", (PyCFunction)askew__loop_clear, METH_NOARGS, NULL},
    {"_mark_closed", (PyCFunction)askew__loop_mark_closed, METH_NOARGS, NULL},
    {"_configure", (PyCFunction)loop_configure, METH_VARARGS, NULL},
    {"_enter", (PyCFunction)askew__loop_enter, METH_NOARGS, NULL},
    {"_leave", (PyCFunction)askew__loop_leave, METH_NOARGS, NULL},
    {"_set_node_var", (PyCFunction)loop_set_node_var, METH_O, NULL},
    {"_log_emit", (PyCFunction)loop_log_emit, METH_VARARGS, NULL},
    {"_log_recent", (PyCFunction)loop_log_recent, METH_O, NULL},
    {"_log_count", (PyCFunction)loop_log_count, METH_NOARGS, NULL},
    {"_log_hook", (PyCFunction)loop_log_hook, METH_O, NULL},
    {"_log_keep", (PyCFunction)loop_log_keep, METH_O, NULL},
    {"_set_skew", (PyCFunction)loop_set_skew, METH_VARARGS, NULL},
    {"_pause", (PyCFunction)loop_pause, METH_VARARGS, NULL},
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
    {"_epoch", (getter)loop_get_epoch, NULL, NULL, NULL},
    {"_stale", (getter)loop_get_stale, NULL, NULL, NULL},
    {"_dead", (getter)loop_get_dead, NULL, NULL, NULL},
    {"_node", (getter)loop_get_node, (setter)loop_set_node, NULL, NULL},
    {"_stepped_node", (getter)loop_get_stepped, NULL, NULL, NULL},
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
    {Py_tp_setattro, loop_setattro},
    {Py_tp_doc, "The C half of askew's event loop; use askew.new_event_loop()."},
    {0, NULL},
};

static PyType_Spec loop_spec = {
    .name = "askew._core.Loop",
    .basicsize = sizeof(struct askew_loop_state),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = loop_slots,
};

/* The _run status codes and the strategy names, for askew/_loop/loop.py and
 * askew/_loop/config.py. */
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
    st->handle_loop = &askew__loop_handle_ops; /* before any handle is made */
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
