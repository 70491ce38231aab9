/* SPDX-License-Identifier: Apache-2.0 */
/* The functions askew puts in place of time.time, time.monotonic,
 * time.perf_counter, time.process_time, time.thread_time (and their _ns
 * forms), time.sleep and os.urandom during
 * a run. On the thread running a simulation they read virtual time and the
 * entropy stream, and a sleep consumes virtual time; anywhere else (a
 * watchdog thread, between runs) they call the originals they replaced, so
 * other threads keep the real clock and really sleep. The clocks and the
 * consumed time are the loop's (loop.h); this file reads them and raises. */
#include <errno.h>
#include <math.h>

#include "active.h"
#include "loop.h"
#include "patch.h"
#include "preload.h"
#include "refusal.h"

/* Each replacement is a builtin whose `self` is a tuple (original, kind):
 * the function it replaces, called off the simulation thread, and for the
 * clocks which clock it reads (an ASKEW_CLOCK_* kind) and in which unit. The
 * originals live in these tuples, not in C statics. */
#define KIND_NS 4 /* added to a clock kind: integer nanoseconds, not seconds */

static inline struct askew_loop_state *active_here(void)
{
    struct askew_loop_state *loop = askew__active;
    if (loop != NULL && askew__active_thread == PyThread_get_thread_ident())
        return loop;
    return NULL;
}

static inline PyObject *call_original(PyObject *self, PyObject *const *args,
                                      Py_ssize_t nargs)
{
    return PyObject_Vectorcall(PyTuple_GET_ITEM(self, 0), args, (size_t)nargs, NULL);
}

/* The running node's clock of kind `clock` as float seconds. */
static PyObject *virtual_seconds(struct askew_loop_state *loop, long clock)
{
    if (clock == ASKEW_CLOCK_CPUTIME)
        return PyFloat_FromDouble((double)askew__loop_cpu_ns(loop) / 1e9);
    if (clock == ASKEW_CLOCK_MONOTONIC)
        return PyFloat_FromDouble((double)askew__loop_local_ns(loop) / 1e9);
    /* Held at an end as C's CLOCK_REALTIME is (askew__loop_unix_ns); else
     * the sum of the two, as it always was (the same doubles, so traces
     * that hash a time.time() keep their values). */
    const int64_t wall_ns = askew__loop_wall_ns(loop);
    const int64_t unix_ns = askew__loop_unix_ns(loop, wall_ns);
    if (unix_ns == 0 || unix_ns == INT64_MAX)
        return PyFloat_FromDouble((double)unix_ns / 1e9);
    return PyFloat_FromDouble((double)wall_ns / 1e9 +
                              (double)loop->wall_epoch_ns / 1e9);
}

/* The same as an int of nanoseconds. */
static PyObject *virtual_ns(struct askew_loop_state *loop, long clock)
{
    if (clock == ASKEW_CLOCK_CPUTIME)
        return PyLong_FromLongLong(askew__loop_cpu_ns(loop));
    if (clock == ASKEW_CLOCK_MONOTONIC)
        return PyLong_FromLongLong(askew__loop_local_ns(loop));
    /* as C reads it */
    return PyLong_FromLongLong(askew__loop_unix_ns(loop, askew__loop_wall_ns(loop)));
}

/* time.time, time.monotonic, ... and their _ns forms: one function, told
 * apart by the kind in `self`. */
static PyObject *v_clock(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(self, NULL, 0);
    const long kind = PyLong_AsLong(PyTuple_GET_ITEM(self, 1));
    return kind & KIND_NS ? virtual_ns(loop, kind & ~KIND_NS)
                          : virtual_seconds(loop, kind);
}

static PyObject *v_urandom(PyObject *self, PyObject *arg)
{
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(self, &arg, 1);
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
static PyObject *v_sleep(PyObject *self, PyObject *secs)
{
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(self, &secs, 1);
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

static PyObject *active(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(a))
{
    return PyBool_FromLong(active_here() != NULL);
}

static PyObject *active_loop(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(a))
{
    struct askew_loop_state *loop = active_here();
    return Py_NewRef(loop ? (PyObject *)loop : Py_None);
}

/* The replacements: name (also the original's, in `module`), what they
 * call, kind (clocks only). */
struct replacement {
    PyMethodDef def;
    const char *module;
    long kind;
};

#define CLOCK(name, kind, doc) {{name, v_clock, METH_NOARGS, doc}, "time", kind}
static struct replacement replacements[] = {
    CLOCK("time", ASKEW_CLOCK_REALTIME,
          "time.time() inside a run: the virtual wall clock."),
    CLOCK("time_ns", ASKEW_CLOCK_REALTIME | KIND_NS, NULL),
    CLOCK("monotonic", ASKEW_CLOCK_MONOTONIC, "time.monotonic() inside a run."),
    CLOCK("monotonic_ns", ASKEW_CLOCK_MONOTONIC | KIND_NS, NULL),
    CLOCK("perf_counter", ASKEW_CLOCK_MONOTONIC, NULL),
    CLOCK("perf_counter_ns", ASKEW_CLOCK_MONOTONIC | KIND_NS, NULL),
    CLOCK("process_time", ASKEW_CLOCK_CPUTIME,
          "time.process_time() inside a run: the node's virtual CPU time (its "
          "steps' draws)."),
    CLOCK("process_time_ns", ASKEW_CLOCK_CPUTIME | KIND_NS, NULL),
    CLOCK("thread_time", ASKEW_CLOCK_CPUTIME, NULL),
    CLOCK("thread_time_ns", ASKEW_CLOCK_CPUTIME | KIND_NS, NULL),
    {{"urandom", v_urandom, METH_O, "os.urandom(n) inside a run: the entropy stream."},
     "os",
     0},
    {{"sleep", v_sleep, METH_O,
      "time.sleep(secs) inside a run: secs of virtual time pass, at once."},
     "time",
     0},
};
#undef CLOCK

static PyMethodDef patch_methods[] = {
    {"in_simulation", active, METH_NOARGS,
     "Whether this thread is running a simulation now."},
    {"active_loop", active_loop, METH_NOARGS,
     "The loop running a simulation here, or None."},
    {NULL, NULL, 0, NULL},
};

/* Add replacement `r` to the namespace `ns`, with its original as
 * original_<name>. */
static int add_replacement(PyObject *ns, struct replacement *r)
{
    PyObject *from = PyImport_ImportModule(r->module); // new reference
    PyObject *original = from ? PyObject_GetAttrString(from, r->def.ml_name) : NULL;
    PyObject *self = original ? Py_BuildValue("(Ol)", original, r->kind) : NULL;
    PyObject *fn = self ? PyCFunction_NewEx(&r->def, self, NULL) : NULL;
    int rc = fn ? PyModule_AddObjectRef(ns, r->def.ml_name, fn) : -1;
    if (rc == 0) {
        char key[40];
        PyOS_snprintf(key, sizeof key, "original_%s", r->def.ml_name);
        rc = PyModule_AddObjectRef(ns, key, original);
    }
    Py_XDECREF(fn);
    Py_XDECREF(self);
    Py_XDECREF(original);
    Py_XDECREF(from);
    return rc;
}

int askew__patch_setup(PyObject *module)
{
    PyObject *ns = PyModule_New("askew._core.virtual"); // new reference
    if (ns == NULL || PyModule_AddFunctions(ns, patch_methods) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof replacements / sizeof *replacements; i++)
        if (add_replacement(ns, &replacements[i]) < 0)
            goto fail;
    const int rc = PyModule_AddObjectRef(module, "virtual", ns);
    Py_DECREF(ns);
    return rc;
fail:
    Py_XDECREF(ns);
    return -1;
}
