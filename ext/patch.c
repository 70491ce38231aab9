/* SPDX-License-Identifier: Apache-2.0 */
/* The functions askew puts in place of time.time, time.monotonic,
 * time.perf_counter (and their _ns forms) and os.urandom during a run. On
 * the thread running a simulation they read virtual time and the entropy
 * stream; anywhere else (a watchdog thread, between runs) they call the
 * originals they replaced, so other threads keep the real clock. */
#include "loop.h"

enum { F_TIME, F_TIME_NS, F_MONO, F_MONO_NS, F_PERF, F_PERF_NS, F_URANDOM, F_COUNT };
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

static PyObject *virtual_seconds(int which, int wall)
{
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(which, NULL, 0);
    const int64_t ns = askew__loop_local_ns(loop);
    return PyFloat_FromDouble((double)ns / 1e9 +
                              (wall ? (double)ASKEW_WALL_EPOCH_S : 0.0));
}

static PyObject *virtual_ns(int which, int wall)
{
    struct askew_loop_state *loop = active_here();
    if (loop == NULL)
        return call_original(which, NULL, 0);
    const int64_t ns = askew__loop_local_ns(loop);
    return PyLong_FromLongLong(ns + (wall ? ASKEW_WALL_EPOCH_S * 1000000000LL : 0));
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
        (void)askew__entropy_fill(loop, PyBytes_AS_STRING(out), (size_t)n);
    return out;
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
    {"urandom", v_urandom, METH_O, "os.urandom(n) inside a run: the entropy stream."},
    {"in_simulation", active, METH_NOARGS,
     "Whether this thread is running a simulation now."},
    {"active_loop", active_loop, METH_NOARGS,
     "The loop running a simulation here, or None."},
    {NULL, NULL, 0, NULL},
};

int askew__patch_setup(PyObject *module)
{
    static const char *const names[F_COUNT] = {
        "time",         "time_ns",         "monotonic", "monotonic_ns",
        "perf_counter", "perf_counter_ns", "urandom"};
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
