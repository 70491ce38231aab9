/* SPDX-License-Identifier: Apache-2.0 */
/* The world log (see log.h): a fixed ring of entries owned by the loop,
 * written by the network binding and by Loop._log_emit, read by
 * Loop._log_recent. It never formats a detail and never decides anything a
 * run does: it is for reports. */
#include "errors.h"
#include "log.h"

void askew__log_record(struct askew_log *log, int64_t t_ns, uint32_t kind, int32_t node,
                       int32_t peer, uint32_t outcome, PyObject *detail)
{
    if (log->ring == NULL) {
        /* Made on first use: a bare loop that never logs never pays for it.
         * Without memory the log stays empty; the trace hash still counts. */
        const size_t cap = log->want ? log->want : ASKEW_LOG_KEPT;
        log->ring = PyMem_Calloc(cap, sizeof *log->ring);
        if (log->ring == NULL)
            return;
        log->cap = cap;
    }
    struct askew_log_entry *e = &log->ring[log->count % log->cap];
    PyObject *old = e->detail;
    e->t_ns = t_ns;
    e->kind = kind;
    e->node = node;
    e->peer = peer;
    e->outcome = outcome;
    e->detail = Py_XNewRef(detail);
    log->count++;
    Py_XDECREF(old);
    if (log->hook != NULL && !PyErr_Occurred()) {
        PyObject *r = PyObject_CallNoArgs(log->hook); // new reference
        if (r == NULL)
            PyErr_WriteUnraisable(
                log->hook); /* askew's own bug: said, never the run's */
        Py_XDECREF(r);
    }
}

static size_t used(const struct askew_log *log)
{
    return log->count < log->cap ? (size_t)log->count : log->cap;
}

void askew__log_clear(struct askew_log *log)
{
    const size_t n = used(log);
    for (size_t i = 0; i < n; i++)
        Py_CLEAR(log->ring[i].detail);
    log->count = 0;
}

void askew__log_free(struct askew_log *log)
{
    askew__log_clear(log);
    PyMem_Free(log->ring);
    log->ring = NULL;
    log->cap = 0;
}

int askew__log_traverse(const struct askew_log *log, visitproc visit, void *arg)
{
    const size_t n = used(log);
    for (size_t i = 0; i < n; i++)
        Py_VISIT(log->ring[i].detail);
    Py_VISIT(log->hook);
    return 0;
}

PyObject *askew__log_emit(struct askew_log *log, struct askew_sched *sched,
                          PyObject *args)
{
    unsigned int kind;
    int node;
    PyObject *detail;
    unsigned long long digest;
    if (!PyArg_ParseTuple(args, "IiOK", &kind, &node, &detail, &digest))
        return NULL;
    askew__log_record(log, sched->now_ns, kind, node, -1, 0, detail);
    askew_trace_record(&sched->trace, sched->now_ns, ASKEW_EV_USER, node, kind, digest);
    Py_RETURN_NONE;
}

PyObject *askew__log_recent(const struct askew_log *log, PyObject *n)
{
    Py_ssize_t want = PyLong_AsSsize_t(n);
    if (want == -1 && PyErr_Occurred())
        return NULL;
    const size_t have = used(log);
    if (want < 0 || (size_t)want > have)
        want = (Py_ssize_t)have;
    PyObject *out = PyList_New(want); // new reference
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < want; i++) {
        const struct askew_log_entry *e =
            &log->ring[(log->count - (uint64_t)want + (uint64_t)i) % log->cap];
        PyObject *t =
            Py_BuildValue("(LIiiIO)", (long long)e->t_ns, e->kind, e->node, e->peer,
                          e->outcome, e->detail ? e->detail : Py_None);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
    }
    return out;
}

PyObject *askew__log_keep(struct askew_log *log, PyObject *n)
{
    const Py_ssize_t want = PyLong_AsSsize_t(n);
    if (want == -1 && PyErr_Occurred())
        return NULL;
    if (want < 1) {
        PyErr_SetString(PyExc_ValueError, "the log must keep at least one entry");
        return NULL;
    }
    askew__log_free(log);
    log->want = (size_t)want;
    Py_RETURN_NONE;
}

PyObject *askew__log_hook(struct askew_log *log, PyObject *fn)
{
    if (askew__set_hook(&log->hook, fn, "the log's hook") < 0)
        return NULL;
    Py_RETURN_NONE;
}

int askew__log_setup(PyObject *module)
{
    if (PyModule_AddIntConstant(module, "LOG_KEPT", ASKEW_LOG_KEPT) < 0 ||
        PyModule_AddIntConstant(module, "LOG_KIND_SEND", ASKEW_LOG_KIND_SEND) < 0 ||
        PyModule_AddIntConstant(module, "LOG_KIND_DELIVERY", ASKEW_LOG_KIND_DELIVERY) <
            0 ||
        PyModule_AddIntConstant(module, "LOG_KIND_WORLD_BASE",
                                ASKEW_LOG_KIND_WORLD_BASE) < 0)
        return -1;
    return 0;
}
