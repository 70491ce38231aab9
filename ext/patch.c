/* SPDX-License-Identifier: Apache-2.0 */
/* The functions askew puts in place of time.time, time.monotonic,
 * time.perf_counter, time.process_time, time.thread_time (and their _ns
 * forms), time.sleep and os.urandom during
 * a run. On the thread running a simulation they read virtual time and the
 * entropy stream, and a sleep consumes virtual time; anywhere else (a
 * watchdog thread, between runs) they call the originals they replaced, so
 * other threads keep the real clock and really sleep. */
#include <errno.h>
#include <math.h>

#include "loop.h"

enum {
    F_TIME,
    F_TIME_NS,
    F_MONO,
    F_MONO_NS,
    F_PERF,
    F_PERF_NS,
    F_URANDOM,
    F_SLEEP,
    F_PROCESS,
    F_PROCESS_NS,
    F_THREAD,
    F_THREAD_NS,
    F_COUNT
};
static PyObject *originals[F_COUNT];

static inline struct askew_loop_state *active_here(void)
{
    struct askew_loop_state *loop = askew__active;
    if (loop != NULL && askew__active_thread == PyThread_get_thread_ident())
        return loop;
    return NULL;
}

static PyObject *call_original(int which, PyObject *const *args, Py_ssize_t nargs)
{
    if (originals[which] == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "askew: the original function is not known");
        return NULL;
    }
    return PyObject_Vectorcall(originals[which], args, (size_t)nargs, NULL);
}

/* `wall` is an ASKEW_CLOCK_* kind: the node's wall clock, its monotonic
 * clock, or its CPU time (its steps' CPU draws, see askew_preload.h). */
static PyObject *virtual_seconds(int which, int wall)
{
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(which, NULL, 0);
    if (wall == ASKEW_CLOCK_CPUTIME)
        return PyFloat_FromDouble((double)askew__loop_cpu_ns(loop) / 1e9);
    const int64_t ns = wall ? askew__loop_wall_ns(loop) : askew__loop_local_ns(loop);
    return PyFloat_FromDouble((double)ns / 1e9 +
                              (wall ? (double)ASKEW_WALL_EPOCH_S : 0.0));
}

static PyObject *virtual_ns(int which, int wall)
{
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(which, NULL, 0);
    if (wall == ASKEW_CLOCK_CPUTIME)
        return PyLong_FromLongLong(askew__loop_cpu_ns(loop));
    if (!wall)
        return PyLong_FromLongLong(askew__loop_local_ns(loop));
    /* In Python ints: a wall clock skewed near the int64 edge still reads. */
    PyObject *ns = PyLong_FromLongLong(askew__loop_wall_ns(loop)); // new reference
    PyObject *epoch = PyLong_FromLongLong(ASKEW_WALL_EPOCH_S * 1000000000LL);
    PyObject *sum = ns && epoch ? PyNumber_Add(ns, epoch) : NULL;
    Py_XDECREF(ns);
    Py_XDECREF(epoch);
    return sum;
}

static PyObject *v_time(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_seconds(F_TIME, 1);
}
static PyObject *v_time_ns(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_ns(F_TIME_NS, 1);
}
static PyObject *v_monotonic(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_seconds(F_MONO, 0);
}
static PyObject *v_monotonic_ns(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_ns(F_MONO_NS, 0);
}
static PyObject *v_perf_counter(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_seconds(F_PERF, 0);
}
static PyObject *v_perf_counter_ns(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_ns(F_PERF_NS, 0);
}

static PyObject *v_process_time(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_seconds(F_PROCESS, ASKEW_CLOCK_CPUTIME);
}
static PyObject *v_process_time_ns(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_ns(F_PROCESS_NS, ASKEW_CLOCK_CPUTIME);
}
static PyObject *v_thread_time(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_seconds(F_THREAD, ASKEW_CLOCK_CPUTIME);
}
static PyObject *v_thread_time_ns(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return virtual_ns(F_THREAD_NS, ASKEW_CLOCK_CPUTIME);
}

static PyObject *v_urandom(PyObject *m, PyObject *arg)
{
    (void)m;
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(F_URANDOM, &arg, 1);
    const Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "negative argument not allowed");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n); // new reference
    if (out != NULL)
        (void)askew__entropy_serve(loop, PyBytes_AS_STRING(out), (size_t)n);
    return out;
}

/* Virtual time ends here, well short of INT64_MAX: a node's clock is the
 * world's plus a skew, and neither sum may overflow. 2**62 ns is 146 years,
 * far past any max_time. */
#define VIRTUAL_END_NS ((int64_t)1 << 62)

int askew__loop_consume_ns(void *ctx, int64_t ns)
{
    struct askew_loop_state *loop = ctx;
    if (ns < 0)
        return -EINVAL;
    if (ns == 0)
        return 0;
    const int64_t node = loop->node_current;
    const int64_t local = askew__loop_local_ns(loop);
    if (local >= VIRTUAL_END_NS || ns >= VIRTUAL_END_NS - local)
        return -EOVERFLOW;
    /* The node sleeps on its own clock; with drift that is a little more or
     * less world time. The world clock never goes back. */
    const int64_t target = askew__skew_global(loop, node, local + ns);
    if (target >= VIRTUAL_END_NS)
        return -EOVERFLOW;
    if (loop->sched.time_max_ns > 0 && target > loop->sched.time_max_ns)
        return -ETIME;
    loop->sched.now_ns = target;
    askew_trace_record(&loop->sched.trace, target, ASKEW_EV_ADVANCE, (int32_t)node,
                       (uint64_t)target, (uint64_t)ns);
    return 0;
}

/* time.sleep's argument in nanoseconds, read as CPython reads it (a float,
 * rounded away from zero, or anything with __index__), with its error
 * classes: TypeError, ValueError for NaN and negative lengths,
 * OverflowError past what a 64-bit count of nanoseconds holds. */
static int sleep_ns(PyObject *secs, int64_t *out)
{
    if (PyFloat_Check(secs)) {
        const double d = PyFloat_AS_DOUBLE(secs);
        if (isnan(d)) {
            PyErr_SetString(PyExc_ValueError,
                            "sleep length must be a number of seconds, not nan");
            return -1;
        }
        double ns = d * 1e9;
        ns = ns >= 0 ? ceil(ns) : floor(ns);
        if (!(ns >= -9223372036854775808.0 && ns < 9223372036854775808.0)) {
            PyErr_Format(PyExc_OverflowError,
                         "sleep length %R s is too large: at most %lld s", secs,
                         (long long)(INT64_MAX / 1000000000));
            return -1;
        }
        *out = (int64_t)ns;
    } else {
        const long long s = PyLong_AsLongLong(secs);
        if (s == -1 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_OverflowError,
                             "sleep length %R s is too large: at most %lld s", secs,
                             (long long)(INT64_MAX / 1000000000));
            }
            return -1;
        }
        if (__builtin_mul_overflow((int64_t)s, (int64_t)1000000000, out)) {
            PyErr_Format(PyExc_OverflowError,
                         "sleep length %R s is too large: at most %lld s", secs,
                         (long long)(INT64_MAX / 1000000000));
            return -1;
        }
    }
    if (*out < 0) {
        PyErr_Format(PyExc_ValueError, "sleep length must be non-negative, not %R",
                     secs);
        return -1;
    }
    return 0;
}

/* Raise askew.errors.BudgetExceeded, and note it: like a refusal, a run
 * that cannot go on fails even if the code catches the error. Raised and
 * then noted as the exception set, the way the loop's own refusals are. */
static PyObject *sleep_past_budget(struct askew_loop_state *loop, PyObject *secs)
{
    PyObject *errors = PyImport_ImportModule("askew.errors"); // new reference
    PyObject *cls = errors ? PyObject_GetAttrString(errors, "BudgetExceeded") : NULL;
    Py_XDECREF(errors);
    if (cls == NULL)
        return NULL;
    char budget[64];
    snprintf(budget, sizeof budget, "max_time=%.9gs, t=%.6fs",
             (double)loop->sched.time_max_ns / 1e9, (double)loop->sched.now_ns / 1e9);
    PyErr_Format(cls,
                 "time.sleep(%R) would carry virtual time past the run's time budget "
                 "(%s): a loop that blocks in time.sleep, or raise max_time",
                 secs, budget);
    Py_DECREF(cls);
    (void)askew__refusal_note(NULL);
    return NULL;
}

/* time.sleep(secs) inside a run: the node's clock moves on by secs and the
 * call returns at once. A blocking sleep in a callback stalls a real loop
 * for that long, timers included, and so it does here: timers that fall due
 * meanwhile fire after the step, late. */
static PyObject *v_sleep(PyObject *m, PyObject *secs)
{
    (void)m;
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(F_SLEEP, &secs, 1);
    int64_t ns;
    if (sleep_ns(secs, &ns) < 0)
        return NULL;
    const int rc = askew__loop_consume_ns(loop, ns);
    if (rc == -ETIME)
        return sleep_past_budget(loop, secs);
    if (rc < 0) {
        PyErr_Format(PyExc_OverflowError,
                     "time.sleep(%R) would carry virtual time past its end (2**62 ns, "
                     "146 years)",
                     secs);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *active(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    return PyBool_FromLong(active_here() != NULL);
}

static PyObject *active_loop(PyObject *m, PyObject *a)
{
    (void)m;
    (void)a;
    struct askew_loop_state *loop = active_here();
    return Py_NewRef(loop ? (PyObject *)loop : Py_None);
}

static PyMethodDef patch_methods[] = {
    {"time", v_time, METH_NOARGS, "time.time() inside a run: the virtual wall clock."},
    {"time_ns", v_time_ns, METH_NOARGS, NULL},
    {"monotonic", v_monotonic, METH_NOARGS, "time.monotonic() inside a run."},
    {"monotonic_ns", v_monotonic_ns, METH_NOARGS, NULL},
    {"perf_counter", v_perf_counter, METH_NOARGS, NULL},
    {"perf_counter_ns", v_perf_counter_ns, METH_NOARGS, NULL},
    {"process_time", v_process_time, METH_NOARGS,
     "time.process_time() inside a run: the node's virtual CPU time (its steps' "
     "draws)."},
    {"process_time_ns", v_process_time_ns, METH_NOARGS, NULL},
    {"thread_time", v_thread_time, METH_NOARGS, NULL},
    {"thread_time_ns", v_thread_time_ns, METH_NOARGS, NULL},
    {"urandom", v_urandom, METH_O, "os.urandom(n) inside a run: the entropy stream."},
    {"sleep", v_sleep, METH_O,
     "time.sleep(secs) inside a run: secs of virtual time pass, at once."},
    {"in_simulation", active, METH_NOARGS,
     "Whether this thread is running a simulation now."},
    {"active_loop", active_loop, METH_NOARGS,
     "The loop running a simulation here, or None."},
    {NULL, NULL, 0, NULL},
};

int askew__patch_setup(PyObject *module)
{
    static const char *const names[F_COUNT] = {
        "time",         "time_ns",         "monotonic",   "monotonic_ns",
        "perf_counter", "perf_counter_ns", "urandom",     "sleep",
        "process_time", "process_time_ns", "thread_time", "thread_time_ns"};
    PyObject *time_mod = PyImport_ImportModule("time"); // new reference
    PyObject *os_mod = PyImport_ImportModule("os");     // new reference
    if (time_mod == NULL || os_mod == NULL)
        goto fail;
    for (int i = 0; i < F_COUNT; i++) {
        originals[i] =
            PyObject_GetAttrString(i == F_URANDOM ? os_mod : time_mod, names[i]);
        if (originals[i] == NULL)
            goto fail;
    }
    Py_DECREF(time_mod);
    Py_DECREF(os_mod);
    PyObject *ns = PyModule_New("askew._core.virtual"); // new reference
    if (ns == NULL || PyModule_AddFunctions(ns, patch_methods) < 0) {
        Py_XDECREF(ns);
        return -1;
    }
    for (int i = 0; i < F_COUNT; i++) {
        char key[40];
        PyOS_snprintf(key, sizeof key, "original_%s", names[i]);
        if (PyModule_AddObjectRef(ns, key, originals[i]) < 0) {
            Py_DECREF(ns);
            return -1;
        }
    }
    const int rc = PyModule_AddObjectRef(module, "virtual", ns);
    Py_DECREF(ns);
    return rc;
fail:
    Py_XDECREF(time_mod);
    Py_XDECREF(os_mod);
    return -1;
}
